//! The two kinds of backup behind one narrow interface: `Snapshot` (Corvid's own copy of the store) and
//! `Backup` (RavenDB's dump format, written by the smuggler: full and incremental).

use super::dump_backup::write_dump_backup;
use super::error::BackupError;
use super::snapshot::take_snapshot;
use super::summary::{BackupKind, BackupRequest, BackupSummary};
use crate::Database;

/// Writes one backup of a database. `progress` is told each file written (relative path, size).
pub trait BackupWriter: Send + Sync {
    /// Runs the backup into a new folder under `request.destination`.
    fn write(&self, db: &Database, request: &BackupRequest, progress: &mut dyn FnMut(&str, u64)) -> Result<BackupSummary, BackupError>;
}

/// Snapshot backups (`snapshot.rs`).
pub struct SnapshotWriter;

impl BackupWriter for SnapshotWriter {
    fn write(&self, db: &Database, request: &BackupRequest, progress: &mut dyn FnMut(&str, u64)) -> Result<BackupSummary, BackupError> {
        if request.incremental {
            return Err(BackupError::DumpFormatNotYet { what: "An incremental backup".into() });
        }
        take_snapshot(db, request, progress)
    }
}

/// Dump-format backups (`dump_backup.rs`): the smuggler's export, whole or from the previous backup's etag.
pub struct DumpWriter;

impl BackupWriter for DumpWriter {
    fn write(&self, db: &Database, request: &BackupRequest, progress: &mut dyn FnMut(&str, u64)) -> Result<BackupSummary, BackupError> {
        write_dump_backup(db, request, progress)
    }
}

/// The writer of a kind.
pub fn writer_for(kind: BackupKind) -> &'static dyn BackupWriter {
    match kind {
        BackupKind::Backup => &DumpWriter,
        BackupKind::Snapshot => &SnapshotWriter,
    }
}
