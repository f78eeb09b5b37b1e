//! The errors of the index crate.

/// Why an index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy failed.
    #[error("index engine error: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// Reading or writing the index's files failed.
    #[error("index I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The index's files cannot be used; it must be rebuilt.
    #[error("index is corrupted or incompatible: {context}")]
    Corrupted {
        /// What was found wrong, and where.
        context: String,
    },
    /// The query asks something the index cannot answer (a field it lacks, mixed bounds, a bad shape).
    #[error("invalid query: {0}")]
    InvalidQuery(String),
}
