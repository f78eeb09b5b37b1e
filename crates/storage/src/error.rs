use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("LMDB error: {0}")]
    Lmdb(#[from] heed::Error),
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

impl StorageError {
    pub(crate) fn corrupted(table: &'static str, context: impl Into<String>) -> Self {
        StorageError::Corrupted { table, context: context.into() }
    }
}
