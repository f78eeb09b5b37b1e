//! Storage's error type.

use std::path::PathBuf;

/// Everything that can go wrong in storage.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// LMDB refused an operation.
    #[error("LMDB error: {0}")]
    Lmdb(heed::Error),
    /// The file system holding the database has no room for this write. Deletes are still accepted (the
    /// merger releases its disk reserve for them, see `disk_space.rs`).
    #[error(
        "There is not enough space on the disk holding {} to write this change (currently available: {available_bytes} bytes). \
         Deletes are still accepted; other writes resume once space is freed.",
        path.display()
    )]
    DiskFull {
        /// The database directory.
        path: PathBuf,
        /// Free bytes on its file system when the write failed.
        available_bytes: u64,
    },
    /// LMDB's memory map is full and could not grow (see `map_growth.rs`).
    #[error(
        "The database's storage map (LMDB's map size) is full and could not grow; restart the server with a larger \
         --map-size-bytes (CORVID_MAP_SIZE_BYTES)"
    )]
    MapFull,
    /// A file or directory outside LMDB could not be read or written.
    #[error("I/O error at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Stored bytes that do not decode as their table's layout.
    #[error("corrupted storage in table `{table}`: {context}")]
    Corrupted {
        /// The table.
        table: &'static str,
        /// What is wrong, naming the key where known.
        context: String,
    },
    /// A map-reduce index's reduce function failed on one reduce key.
    #[error("reduce of key {reduce_key} failed: {message}")]
    Reduce {
        /// The reduce key.
        reduce_key: String,
        /// The reducer's error.
        message: String,
    },
    /// A database written with another layout version, refused rather than misread.
    #[error("storage format version {found} is not supported (this build reads version {supported})")]
    UnsupportedFormat {
        /// The stored version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The merger's queue is full; the write was not queued.
    #[error("the write queue of this database is full")]
    QueueFull,
    /// The merger has stopped.
    #[error("the database is shutting down")]
    ShuttingDown,
    /// A database's write-ahead journal cannot be used: written for another database, damaged where no crash
    /// could have left it, or not matching the data file. The database is not opened.
    #[error("the journal at {path} cannot be used: {reason}")]
    Journal {
        /// The journal directory or file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The writer failed the write: it panicked, its merged commit failed, or the writer thread is gone.
    #[error("the write was interrupted by an internal failure: {0}")]
    WriterFailed(String),
}

impl From<heed::Error> for StorageError {
    fn from(e: heed::Error) -> Self {
        match e {
            heed::Error::Mdb(heed::MdbError::MapFull) => StorageError::MapFull,
            other => StorageError::Lmdb(other),
        }
    }
}

/// ENOSPC and EDQUOT: the file system (or the user's quota) has no room.
fn is_out_of_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(28 | 122))
}

impl StorageError {
    /// Whether this is a full disk: classified already, or an I/O error saying so (attachment uploads).
    pub fn is_disk_full(&self) -> bool {
        match self {
            StorageError::DiskFull { .. } => true,
            StorageError::Io { source, .. } => is_out_of_space(source),
            StorageError::Lmdb(heed::Error::Io(source)) => is_out_of_space(source),
            _ => false,
        }
    }

    /// An I/O error from LMDB or a file: with a nearly full disk it is reported as [`StorageError::DiskFull`]
    /// (LMDB reports a short write as EIO, not ENOSPC).
    pub(crate) fn is_io(&self) -> bool {
        matches!(self, StorageError::Io { .. } | StorageError::Lmdb(heed::Error::Io(_)))
    }

    /// The same error for each writer of a failed merged commit (errors are not `Clone`): the kinds clients
    /// act on are kept, anything else becomes `WriterFailed`.
    pub(crate) fn for_each_writer(&self) -> StorageError {
        match self {
            StorageError::DiskFull { path, available_bytes } => {
                StorageError::DiskFull { path: path.clone(), available_bytes: *available_bytes }
            }
            StorageError::MapFull => StorageError::MapFull,
            other => StorageError::WriterFailed(other.to_string()),
        }
    }

    pub(crate) fn corrupted(table: &'static str, context: impl Into<String>) -> Self {
        StorageError::Corrupted { table, context: context.into() }
    }
}
