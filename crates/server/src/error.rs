//! Every error the server can answer, and the one table that maps each to RavenDB's error JSON, status
//! code and headers. Clients pick their exception type from the last dot-segment of `Type`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::EngineError;
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("Database '{0}' does not exist")]
    DatabaseDoesNotExist(String),
    #[error("Database '{name}' is still loading (waited {waited_ms} ms); retry shortly")]
    DatabaseLoading { name: String, waited_ms: u128 },
    #[error("Database '{name}' failed to load: {reason}")]
    DatabaseLoadFailed { name: String, reason: String },
    #[error("Database '{0}' is disabled")]
    DatabaseDisabled(String),
    #[error("Database '{0}' already exists")]
    DatabaseAlreadyExists(String),
    #[error("{0}")]
    Concurrency(String),
    /// A cluster-wide transaction found a stale compare-exchange index (or atomic guard).
    #[error("{0}")]
    ClusterTransactionConcurrency(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("Document '{0}' does not exist")]
    DocumentDoesNotExist(String),
    #[error("Document '{0}' does not exist. Cannot operate on time series of a missing document")]
    TimeSeriesDocumentMissing(String),
    #[error("{0}")]
    AttachmentDoesNotExist(String),
    /// A read of a missing attachment: 404 without a body, as RavenDB answers.
    #[error("attachment not found")]
    AttachmentNotFound,
    #[error("The '{0}' header is not valid: only visible ASCII characters are allowed")]
    InvalidHeader(String),
    #[error("{0}")]
    InvalidEncoding(String),
    #[error("Invalid JSON in the request body: {0}")]
    InvalidJson(String),
    /// A request body in a content coding the server cannot decode.
    #[error("{0}")]
    UnsupportedContentEncoding(String),
    #[error("The request body is larger than the limit of {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error("Server too busy: {0}")]
    ServerTooBusy(String),
    #[error("There is no handler for {method} {path}")]
    RouteNotFound { method: String, path: String },
    #[error("Index '{0}' does not exist")]
    IndexDoesNotExist(String),
    #[error("{0}")]
    InvalidQuery(String),
    #[error("Operation {0} does not exist (finished operations are kept for 15 minutes)")]
    OperationDoesNotExist(u64),
    #[error("{0}")]
    Script(String),
    #[error("{0}")]
    IndexCompilation(String),
    #[error("{0}")]
    IndexErrored(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    Timeout(String),
    /// No data subscription has this name or id. RavenDB answers 500 (the clients expect a server error,
    /// not a 404, when an update finds nothing).
    #[error("{0}")]
    SubscriptionDoesNotExist(String),
    /// No room on the disk for a write (deletes still work): RavenDB's Voron answers 503.
    #[error("{0}")]
    DiskFull(String),
    /// LMDB's map is full and could not grow; the message names `--map-size-bytes`.
    #[error("{0}")]
    MapFull(String),
    /// A request RavenDB refuses in this state (adding a node a single-node database already lives on).
    #[error("{0}")]
    InvalidOperation(String),
    #[error("{0}")]
    Internal(String),
    /// The client's certificate (or its absence) does not allow the request.
    #[error("{0}")]
    Authorization(String),
    /// One of axum's own rejections (a path segment that is not UTF-8, ...), which it answers in plain text.
    #[error("{message}")]
    Rejected { status: StatusCode, message: String },
}

/// Marks an error response so the request-log middleware can add the request URL to its body.
#[derive(Clone)]
pub struct ErrorBody {
    pub type_name: &'static str,
    pub message: String,
}

/// The table's answer to one error: status code, RavenDB's exception type and the message. Requests that
/// fail answer with it, and so do operations that failed (`/operations/state`).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorAnswer {
    pub status: StatusCode,
    pub type_name: &'static str,
    pub message: String,
}

impl ErrorAnswer {
    /// RavenDB's error JSON: `Type`, `Message`, and `Error` (both, as .NET prints an exception).
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("Type".into(), Value::from(self.type_name));
        fields.insert("Message".into(), Value::from(self.message.as_str()));
        fields.insert("Error".into(), Value::from(format!("{}: {}", self.type_name, self.message)));
        fields
    }
}

impl ApiError {
    /// What the table answers for this error.
    pub fn answer(&self) -> ErrorAnswer {
        let (status, type_name) = self.status_and_type();
        ErrorAnswer { status, type_name, message: self.to_string() }
    }

    /// The answer to a request that failed with `e`; an internal failure is logged (once, here).
    pub fn logged(e: &EngineError) -> ApiError {
        let error = ApiError::from(e);
        if matches!(error, ApiError::Internal(_)) {
            tracing::error!(error = %e, "storage failure");
        }
        error
    }

    pub fn status_and_type(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::DatabaseDoesNotExist(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "Raven.Client.Exceptions.Database.DatabaseDoesNotExistException")
            }
            ApiError::DatabaseLoading { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "Raven.Client.Exceptions.Database.DatabaseLoadTimeoutException")
            }
            ApiError::DatabaseLoadFailed { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "Raven.Client.Exceptions.Database.DatabaseLoadFailureException")
            }
            ApiError::DatabaseDisabled(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "Raven.Client.Exceptions.Database.DatabaseDisabledException")
            }
            ApiError::DatabaseAlreadyExists(_) | ApiError::Concurrency(_) => {
                (StatusCode::CONFLICT, "Raven.Client.Exceptions.ConcurrencyException")
            }
            ApiError::ClusterTransactionConcurrency(_) => {
                (StatusCode::CONFLICT, "Raven.Client.Exceptions.ClusterTransactionConcurrencyException")
            }
            ApiError::BadRequest(_) | ApiError::InvalidJson(_) | ApiError::InvalidHeader(_) | ApiError::InvalidEncoding(_) => {
                (StatusCode::BAD_REQUEST, "Raven.Client.Exceptions.BadRequestException")
            }
            ApiError::DocumentDoesNotExist(_) => (StatusCode::NOT_FOUND, "Raven.Client.Exceptions.Documents.DocumentDoesNotExistException"),
            // RavenDB lets this one reach its exception handler (500), so the clients raise it.
            ApiError::TimeSeriesDocumentMissing(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "Raven.Client.Exceptions.Documents.DocumentDoesNotExistException")
            }
            ApiError::AttachmentDoesNotExist(_) => {
                (StatusCode::NOT_FOUND, "Raven.Client.Exceptions.Documents.Attachments.AttachmentDoesNotExistException")
            }
            ApiError::AttachmentNotFound => (StatusCode::NOT_FOUND, ""),
            ApiError::RouteNotFound { .. } => (StatusCode::BAD_REQUEST, "Raven.Client.Exceptions.RouteNotFoundException"),
            ApiError::UnsupportedContentEncoding(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "Raven.Client.Exceptions.BadRequestException"),
            ApiError::BodyTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "Raven.Client.Exceptions.RequestTooLargeException"),
            ApiError::ServerTooBusy(_) => (StatusCode::SERVICE_UNAVAILABLE, "Raven.Client.Exceptions.ServerTooBusyException"),
            ApiError::IndexDoesNotExist(_) => {
                (StatusCode::NOT_FOUND, "Raven.Client.Exceptions.Documents.Indexes.IndexDoesNotExistException")
            }
            ApiError::OperationDoesNotExist(_) => (StatusCode::NOT_FOUND, "System.Collections.Generic.KeyNotFoundException"),
            ApiError::InvalidQuery(_) => (StatusCode::BAD_REQUEST, "Raven.Client.Exceptions.InvalidQueryException"),
            ApiError::Script(_) => (StatusCode::BAD_REQUEST, "Raven.Client.Exceptions.Documents.Patching.JavaScriptException"),
            ApiError::IndexCompilation(_) => {
                (StatusCode::BAD_REQUEST, "Raven.Client.Exceptions.Documents.Compilation.IndexCompilationException")
            }
            ApiError::IndexErrored(_) | ApiError::InvalidOperation(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "System.InvalidOperationException")
            }
            ApiError::NotSupported(_) => (StatusCode::NOT_IMPLEMENTED, "System.NotSupportedException"),
            ApiError::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "System.TimeoutException"),
            ApiError::SubscriptionDoesNotExist(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "Raven.Client.Exceptions.Documents.Subscriptions.SubscriptionDoesNotExistException")
            }
            ApiError::DiskFull(_) => (StatusCode::SERVICE_UNAVAILABLE, "Voron.Exceptions.DiskFullException"),
            ApiError::MapFull(_) => (StatusCode::INSUFFICIENT_STORAGE, "Raven.Server.CorvidMapFullException"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "Raven.Server.CorvidInternalException"),
            ApiError::Authorization(_) => (StatusCode::FORBIDDEN, "Raven.Client.Exceptions.Security.AuthorizationException"),
            ApiError::Rejected { status, .. } if status.is_client_error() => (*status, "Raven.Client.Exceptions.BadRequestException"),
            ApiError::Rejected { status, .. } => (*status, "Raven.Server.CorvidInternalException"),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        ApiError::logged(&e)
    }
}

/// The engine's errors in the table. Borrowed, so an operation's stored failure renders without being
/// consumed; nothing is logged here (`ApiError::logged` logs once per failed request).
impl From<&EngineError> for ApiError {
    fn from(e: &EngineError) -> Self {
        match e {
            EngineError::InvalidId(e) => ApiError::BadRequest(e.to_string()),
            EngineError::InvalidName(e) => ApiError::BadRequest(e.to_string()),
            EngineError::BadRequest(m) => ApiError::BadRequest(m.clone()),
            EngineError::DocumentDoesNotExist(id) => ApiError::DocumentDoesNotExist(id.clone()),
            EngineError::TimeSeriesDocumentMissing(id) => ApiError::TimeSeriesDocumentMissing(id.clone()),
            EngineError::AttachmentDoesNotExist(m) => ApiError::AttachmentDoesNotExist(m.clone()),
            EngineError::Concurrency { message } => ApiError::Concurrency(message.clone()),
            EngineError::ClusterTransactionConcurrency { message } => ApiError::ClusterTransactionConcurrency(message.clone()),
            e @ (EngineError::Busy { .. } | EngineError::ShuttingDown { .. }) => ApiError::ServerTooBusy(e.to_string()),
            EngineError::IndexDoesNotExist(name) => ApiError::IndexDoesNotExist(name.clone()),
            EngineError::InvalidQuery { message } => ApiError::InvalidQuery(message.clone()),
            EngineError::Script { message } => ApiError::Script(message.clone()),
            EngineError::IndexCompilation { message } => ApiError::IndexCompilation(message.clone()),
            e @ EngineError::IndexErrored { .. } => ApiError::IndexErrored(e.to_string()),
            EngineError::NotSupported(m) => ApiError::NotSupported(m.clone()),
            EngineError::InvalidOperation(m) => ApiError::InvalidOperation(m.clone()),
            EngineError::Timeout(m) => ApiError::Timeout(m.clone()),
            EngineError::SubscriptionDoesNotExist(m) => ApiError::SubscriptionDoesNotExist(m.clone()),
            // Only a request whose client is gone is cancelled: nobody reads this answer.
            e @ EngineError::Cancelled => ApiError::Timeout(e.to_string()),
            EngineError::Storage(e) if e.is_disk_full() => ApiError::DiskFull(e.to_string()),
            EngineError::Storage(e @ corvid_engine::StorageError::MapFull) => ApiError::MapFull(e.to_string()),
            e @ (EngineError::Storage(_) | EngineError::Internal(_)) => ApiError::Internal(e.to_string()),
            // A folder that is no restorable backup, an unfinished one, a bad schedule: the request's fault
            // (400); a failing disk is the server's own error.
            EngineError::Backup(e) if e.is_user_fault() => ApiError::BadRequest(e.to_string()),
            EngineError::Backup(e) => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<corvid_types::NameError> for ApiError {
    fn from(e: corvid_types::NameError) -> Self {
        ApiError::BadRequest(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(self, ApiError::AttachmentNotFound) {
            return StatusCode::NOT_FOUND.into_response();
        }
        let answer = self.answer();
        let body = Value::Object(answer.fields());
        let mut response = (answer.status, [("content-type", "application/json; charset=utf-8")], body.to_string()).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::DatabaseDoesNotExist(name) => {
                if let Ok(v) =
                    HeaderValue::from_str(&percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string())
                {
                    headers.insert("Database-Missing", v);
                }
            }
            ApiError::ServerTooBusy(_) | ApiError::DatabaseLoading { .. } => {
                headers.insert("Retry-After", HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response.extensions_mut().insert(ErrorBody { type_name: answer.type_name, message: answer.message });
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// An error response that is not in RavenDB's error JSON (axum's rejections are plain text) answered as one
/// with the same status; any other response is returned as it is.
pub async fn as_error_json(response: Response) -> Response {
    let status = response.status();
    let plain_text = response.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain_text || response.extensions().get::<ErrorBody>().is_some() {
        return response;
    }
    let text = axum::body::to_bytes(response.into_body(), 64 << 10).await.unwrap_or_default();
    let message = String::from_utf8_lossy(&text).trim().to_owned();
    let message = if message.is_empty() { status.canonical_reason().unwrap_or("Bad request").to_owned() } else { message };
    ApiError::Rejected { status, message }.into_response()
}

/// Errors of a TCP connection (data subscriptions). Each is told to its client as RavenDB's TCP error
/// object, `{"Type":"Error","Exception":…,"Message":…}`, after which the connection closes.
#[derive(Debug, thiserror::Error)]
pub enum TcpError {
    #[error("the client closed the connection")]
    Closed,
    #[error("connection error: {0}")]
    Io(std::io::Error),
    #[error("nothing arrived from the client for {0:?}")]
    ReadTimeout(std::time::Duration),
    #[error("the client did not read for {0:?}")]
    WriteTimeout(std::time::Duration),
    #[error("Invalid message: not a JSON object ({0})")]
    Malformed(String),
    #[error("A message is larger than the limit of {0} bytes")]
    MessageTooLarge(usize),
    #[error("Invalid TCP connection header: {0}")]
    InvalidHeader(String),
    #[error("Version {version} of the {operation} TCP operation is older than any version this server supports")]
    UnsupportedVersion { operation: String, version: i64 },
    #[error("Could not agree on a TCP protocol version in {0} rounds")]
    NegotiationRounds(usize),
    #[error("Database '{0}' does not exist")]
    DatabaseDoesNotExist(String),
    #[error("Corvid does not support the {0} TCP operation (it runs as a single node)")]
    NotSupported(String),
    #[error("Invalid subscription worker options: {0}")]
    InvalidOptions(String),
    /// The database or the storage failed while serving the connection.
    #[error("{0}")]
    Server(String),
}

impl TcpError {
    /// False when the client is gone or cannot take more bytes, so nothing should be written to it.
    pub fn can_be_told(&self) -> bool {
        !matches!(self, TcpError::Closed | TcpError::Io(_) | TcpError::WriteTimeout(_))
    }

    /// The object sent to the client. Clients stop retrying when `Exception` names
    /// `DatabaseDoesNotExistException`.
    pub fn to_json(&self) -> Value {
        let exception = match self {
            TcpError::DatabaseDoesNotExist(_) => "Raven.Client.Exceptions.Database.DatabaseDoesNotExistException",
            TcpError::NotSupported(_) => "System.NotSupportedException",
            TcpError::ReadTimeout(_) => "System.TimeoutException",
            TcpError::UnsupportedVersion { .. } | TcpError::NegotiationRounds(_) => "System.ArgumentException",
            _ => "System.IO.InvalidDataException",
        };
        let message = self.to_string();
        serde_json::json!({"Type": "Error", "Status": "None", "Exception": format!("{exception}: {message}"), "Message": message})
    }
}
