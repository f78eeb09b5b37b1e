use corvid_storage::StorageError;
use corvid_types::{IdError, NameError};

/// Everything that can go wrong in the engine. User errors (bad input, conflicts) are kept apart from
/// internal ones; the server maps each variant to a protocol answer in one place.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    InvalidId(#[from] IdError),
    #[error("{0}")]
    InvalidName(#[from] NameError),
    #[error("{0}")]
    BadRequest(String),
    #[error("Document '{0}' does not exist")]
    DocumentDoesNotExist(String),
    #[error("{0}")]
    AttachmentDoesNotExist(String),
    #[error("{message}")]
    Concurrency { message: String },
    #[error("the write queue of database '{database}' is full; retry later")]
    Busy { database: String },
    #[error("database '{database}' is shutting down")]
    ShuttingDown { database: String },
    #[error("storage failure: {0}")]
    Storage(StorageError),
    #[error("index '{0}' does not exist")]
    IndexDoesNotExist(String),
    #[error("{message}")]
    InvalidQuery { message: String },
    #[error("{message}")]
    Script { message: String },
    #[error("{message}")]
    IndexCompilation { message: String },
    /// A query of an index that failed too often to be trusted (RavenDB answers with an
    /// `InvalidOperationException`).
    #[error("Index '{name}' is marked as errored. {reason}")]
    IndexErrored { name: String, reason: String },
    /// A feature of the protocol this server does not implement (e.g. time series in a bulk insert).
    #[error("{0}")]
    NotSupported(String),
    #[error("timed out: {0}")]
    Timeout(String),
    /// The request was cancelled (its client went away); nobody reads this answer.
    #[error("the request was cancelled")]
    Cancelled,
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StorageError> for EngineError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::QueueFull => EngineError::Busy { database: String::new() },
            StorageError::ShuttingDown => EngineError::ShuttingDown { database: String::new() },
            StorageError::Reduce { reduce_key, message } => {
                EngineError::Script { message: format!("reduce of key {reduce_key}: {message}") }
            }
            other => EngineError::Storage(other),
        }
    }
}

/// An index error met while answering a query. Queries report every one as an invalid query (RavenDB's
/// `InvalidQueryException`) with the index's message.
impl From<corvid_index::IndexError> for EngineError {
    fn from(e: corvid_index::IndexError) -> Self {
        EngineError::InvalidQuery { message: e.to_string() }
    }
}

impl EngineError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        EngineError::BadRequest(message.into())
    }
}
