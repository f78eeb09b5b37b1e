use corvid_storage::StorageError;
use corvid_types::{IdError, NameError};

/// Everything that can go wrong in the engine. User errors (bad input, conflicts) are kept apart from
/// internal ones; the server maps each variant to a protocol answer in one place.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A document id the storage cannot key (empty, too long, or with a NUL).
    #[error("{0}")]
    InvalidId(#[from] IdError),
    /// An attachment or counter name the storage cannot key.
    #[error("{0}")]
    InvalidName(#[from] NameError),
    /// Input the request should not have sent (a malformed command, a missing field); the message says which.
    #[error("{0}")]
    BadRequest(String),
    /// An operation that needs the document (patch, attachment or counter change) found none with this id.
    #[error("Document '{0}' does not exist")]
    DocumentDoesNotExist(String),
    /// A time-series write to a document that does not exist (RavenDB answers it apart from other missing
    /// documents: an error the clients raise, not a 404 they read as "no result").
    #[error("Document '{0}' does not exist. Cannot operate on time series of a missing document")]
    TimeSeriesDocumentMissing(String),
    /// The named attachment is not on the document; the message names both.
    #[error("{0}")]
    AttachmentDoesNotExist(String),
    /// An optimistic-concurrency check failed: the expected change vector is not the stored one.
    #[error("{message}")]
    Concurrency {
        /// What was expected and what is stored.
        message: String,
    },
    /// A cluster-wide transaction found a compare-exchange value (or an atomic guard) at another index than
    /// expected; nothing of it was written.
    #[error("{message}")]
    ClusterTransactionConcurrency {
        /// Every stale index, in RavenDB's words.
        message: String,
    },
    /// The merger's write queue is full; the write was not queued and may be retried.
    #[error("the write queue of database '{database}' is full; retry later")]
    Busy {
        /// The database whose queue is full (empty when the storage layer reported it).
        database: String,
    },
    /// The database is closing; no more writes are taken.
    #[error("database '{database}' is shutting down")]
    ShuttingDown {
        /// The database that is closing (empty when the storage layer reported it).
        database: String,
    },
    /// A backup or restore failed (`backup::BackupError` says whether the request was at fault).
    #[error("{0}")]
    Backup(#[from] crate::backup::BackupError),
    /// A failure of the storage layer (LMDB, the file system, a corrupted table).
    #[error("storage failure: {0}")]
    Storage(StorageError),
    /// No index has this name.
    #[error("index '{0}' does not exist")]
    IndexDoesNotExist(String),
    /// A query that cannot be parsed or answered (an unknown field, an index that keeps no terms, ...).
    #[error("{message}")]
    InvalidQuery {
        /// Why the query was refused.
        message: String,
    },
    /// A JavaScript patch, filter or reduce failed to parse or threw.
    #[error("{message}")]
    Script {
        /// The script engine's error.
        message: String,
    },
    /// An index definition whose maps or reduce do not compile.
    #[error("{message}")]
    IndexCompilation {
        /// The compiler's error.
        message: String,
    },
    /// A query of an index that failed too often to be trusted (RavenDB answers with an
    /// `InvalidOperationException`).
    #[error("Index '{name}' is marked as errored. {reason}")]
    IndexErrored {
        /// The index.
        name: String,
        /// Why it was marked errored.
        reason: String,
    },
    /// A feature of the protocol this server does not implement (e.g. time series in a bulk insert).
    #[error("{0}")]
    NotSupported(String),
    /// No data subscription has this name or id (RavenDB's `SubscriptionDoesNotExistException`).
    #[error("{0}")]
    SubscriptionDoesNotExist(String),
    /// A request RavenDB refuses with an `InvalidOperationException` (e.g. two revisions configurations for one
    /// collection, a forced revision of a missing document).
    #[error("{0}")]
    InvalidOperation(String),
    /// A wait (for indexes to catch up, for a write to commit) took longer than allowed.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The request was cancelled (its client went away); nobody reads this answer.
    #[error("the request was cancelled")]
    Cancelled,
    /// A broken invariant or a failure that is not the request's fault.
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
    /// A `BadRequest` with this message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        EngineError::BadRequest(message.into())
    }
}
