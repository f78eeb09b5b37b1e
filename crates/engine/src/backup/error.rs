//! What can go wrong taking, reading or restoring a backup. User faults (a folder that is no Corvid snapshot,
//! an unfinished or damaged backup, a RavenDB snapshot) are kept apart from failures of the machine.

use std::path::PathBuf;

use corvid_storage::StorageError;

/// A backup or restore failure.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// Reading or writing a file failed.
    #[error("backup I/O failed on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The store could not be copied.
    #[error("the database's storage could not be copied: {0}")]
    Storage(#[from] StorageError),
    /// A folder holding a RavenDB snapshot, which only RavenDB can read.
    #[error(
        "'{path}' holds a RavenDB snapshot ({file}), which Corvid cannot read (it is Voron's own file format): restore it in \
         RavenDB, export the database there as a .ravendbdump and import that dump into Corvid"
    )]
    RavenDbSnapshot {
        /// The folder.
        path: PathBuf,
        /// The snapshot file found.
        file: String,
    },
    /// The dump format (`Backup` type, `.ravendb-full-backup` files) is written and read by the smuggler,
    /// which this build does not have yet.
    #[error("{what} needs RavenDB's dump format, which is not available in this build yet; use the 'Snapshot' backup type")]
    DumpFormatNotYet {
        /// What was asked for.
        what: String,
    },
    /// A folder with backup files but no manifest: the backup did not finish.
    #[error("'{path}' is an incomplete backup (its manifest {manifest} is missing: the backup was interrupted); it cannot be restored")]
    Incomplete {
        /// The folder.
        path: PathBuf,
        /// The manifest's file name.
        manifest: &'static str,
    },
    /// A folder that holds no backup at all.
    #[error("'{path}' holds no Corvid snapshot backup (no {manifest})")]
    NotABackup {
        /// The folder.
        path: PathBuf,
        /// The manifest's file name.
        manifest: &'static str,
    },
    /// A backup whose files do not match its manifest (damaged or changed since it was taken).
    #[error("the backup in '{path}' is damaged: {reason}")]
    Damaged {
        /// The folder.
        path: PathBuf,
        /// Which file and how.
        reason: String,
    },
    /// A backup written by a newer format than this build reads.
    #[error("the backup in '{path}' has manifest version {found}; this build reads up to {supported}")]
    UnsupportedVersion {
        /// The folder.
        path: PathBuf,
        /// The manifest's version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// Writing or replaying a dump backup failed (the smuggler's error says where and why).
    #[error("the dump backup '{path}' failed: {reason}")]
    Dump {
        /// The backup file.
        path: PathBuf,
        /// What the smuggler said.
        reason: String,
        /// Whether the file (its content) is at fault rather than the machine.
        user_fault: bool,
    },
    /// A backup configuration that cannot run (no folder, an unknown type, a bad schedule).
    #[error("{0}")]
    InvalidConfiguration(String),
}

impl BackupError {
    /// Whether the request (its folder, its configuration) is at fault rather than the machine.
    pub fn is_user_fault(&self) -> bool {
        match self {
            BackupError::Io { .. } | BackupError::Storage(_) => false,
            BackupError::Dump { user_fault, .. } => *user_fault,
            _ => true,
        }
    }

    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
        move |source| BackupError::Io { path: path.to_owned(), source }
    }
}
