//! The two kinds of backup behind one narrow interface: `Snapshot` (Corvid's own copy of the store, built
//! here) and `Backup` (RavenDB's dump format, written by the smuggler once it is wired in; until then it
//! refuses with a clear error).

use std::path::PathBuf;

use super::error::BackupError;
use super::snapshot::take_snapshot;
use crate::Database;

/// RavenDB's `BackupType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupKind {
    /// The dump format (`.ravendb-full-backup`, `.ravendb-incremental-backup`).
    Backup,
    /// Corvid's consistent copy of the store and index definitions.
    Snapshot,
}

impl BackupKind {
    /// Parses RavenDB's name (`Backup`, `Snapshot`).
    pub fn parse(name: &str) -> Result<BackupKind, BackupError> {
        match name {
            "Backup" => Ok(BackupKind::Backup),
            "Snapshot" => Ok(BackupKind::Snapshot),
            other => Err(BackupError::InvalidConfiguration(format!("Unknown BackupType '{other}': expected 'Backup' or 'Snapshot'"))),
        }
    }

    /// RavenDB's name.
    pub fn as_str(self) -> &'static str {
        match self {
            BackupKind::Backup => "Backup",
            BackupKind::Snapshot => "Snapshot",
        }
    }
}

/// What one backup run is asked to do.
#[derive(Debug, Clone)]
pub struct BackupRequest {
    /// The destination folder; each run writes a new folder inside it.
    pub destination: PathBuf,
    /// The database record to keep with the backup (the catalog entry as JSON).
    pub record: serde_json::Value,
    /// An incremental run (only what changed since the last one); false for a full one.
    pub incremental: bool,
}

/// What a backup run wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupSummary {
    /// The kind written.
    pub kind: BackupKind,
    /// The folder the run created.
    pub folder: PathBuf,
    /// Files written (the manifest not counted).
    pub files: u64,
    /// Their total size.
    pub bytes: u64,
    /// The database's last etag just before the backup.
    pub last_etag: u64,
    /// How long it took.
    pub duration_ms: u64,
}

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
