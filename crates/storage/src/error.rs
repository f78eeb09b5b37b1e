use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("LMDB error: {0}")]
    Lmdb(heed::Error),
    /// The file system holding the database has no room for this write. Deletes are still accepted (the
    /// merger releases its disk reserve for them, see `disk_space.rs`).
    #[error(
        "There is not enough space on the disk holding {} to write this change (currently available: {available_bytes} bytes). \
         Deletes are still accepted; other writes resume once space is freed.",
        path.display()
    )]
    DiskFull { path: PathBuf, available_bytes: u64 },
    /// LMDB's memory map is full and could not grow (see `map_growth.rs`).
    #[error(
        "The database's storage map (LMDB's map size) is full and could not grow; restart the server with a larger \
         --map-size-bytes (CORVID_MAP_SIZE_BYTES)"
    )]
    MapFull,
    #[error("I/O error at {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("corrupted storage in table `{table}`: {context}")]
    Corrupted { table: &'static str, context: String },
    #[error("reduce of key {reduce_key} failed: {message}")]
    Reduce { reduce_key: String, message: String },
    #[error("storage format version {found} is not supported (this build reads version {supported})")]
    UnsupportedFormat { found: u32, supported: u32 },
    #[error("the write queue of this database is full")]
    QueueFull,
    #[error("the database is shutting down")]
    ShuttingDown,
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
