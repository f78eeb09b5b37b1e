//! Small helpers to build protocol responses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

pub fn json(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "application/json; charset=utf-8")], body).into_response()
}

pub fn json_value(status: StatusCode, value: &serde_json::Value) -> Response {
    json(status, value.to_string())
}

pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub fn not_found() -> Response {
    StatusCode::NOT_FOUND.into_response()
}

/// Runs storage work on the blocking pool, never on the async workers.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::Internal(format!("background task failed: {e}")))?
}

/// How a database's merger answers a write.
pub type Reply<T> = Box<dyn FnOnce(Result<T, corvid_engine::EngineError>) + Send>;

/// Submits a write to a database's merger (`submit` hands it the reply callback) and awaits its durable
/// answer without blocking the async worker.
pub async fn written<T: Send + 'static>(submit: impl FnOnce(Reply<T>) -> Result<(), corvid_engine::EngineError>) -> Result<T, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    submit(Box::new(move |result| {
        let _ = tx.send(result);
    }))?;
    match rx.await {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::Internal("the write was dropped by the database writer".into())),
    }
}
