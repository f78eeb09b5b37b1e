//! The two kinds of backup behind one narrow interface: `Snapshot` (Corvid's own copy of the store, built
//! here) and `Backup` (RavenDB's dump format, written by the smuggler once it is wired in; until then it
//! refuses with a clear error).

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

/// Dump-format backups: to be wired to the smuggler's `export` (full) and an export of what changed since
/// the last backup's etags (incremental).
pub struct DumpWriter;

impl BackupWriter for DumpWriter {
    fn write(&self, _db: &Database, _request: &BackupRequest, _progress: &mut dyn FnMut(&str, u64)) -> Result<BackupSummary, BackupError> {
        Err(BackupError::DumpFormatNotYet { what: "The 'Backup' backup type".into() })
    }
}

/// The writer of a kind.
pub fn writer_for(kind: BackupKind) -> &'static dyn BackupWriter {
    match kind {
        BackupKind::Backup => &DumpWriter,
        BackupKind::Snapshot => &SnapshotWriter,
    }
}
