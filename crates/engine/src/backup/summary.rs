//! What a backup run is asked to do and what it wrote, apart from the writers (so operation results can name
//! them without depending on the database).

use std::path::PathBuf;

use super::error::BackupError;

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
    /// Where the task's previous backup left off (an incremental run continues from it).
    pub previous: Option<BackupPoint>,
}

/// Where a dump backup left off: its folder and the last etag and compare-exchange index it holds
/// (RavenDB's `FolderName`, `LastEtag` and `LastRaftIndex`).
#[derive(Debug, Clone, PartialEq)]
pub struct BackupPoint {
    /// The folder of the chain (the last full backup's); incrementals are written next to it.
    pub folder: PathBuf,
    /// The last etag the previous backup holds.
    pub last_etag: u64,
    /// The last compare-exchange index the previous backup holds.
    pub last_raft_index: u64,
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
    /// The last compare-exchange index in the backup (0 for snapshots).
    pub last_raft_index: u64,
    /// An incremental backup (a dump of what changed since the previous one).
    pub incremental: bool,
    /// The file written inside `folder` (dump backups).
    pub file: Option<String>,
    /// How long it took.
    pub duration_ms: u64,
}
