//! Small helpers to build protocol responses.

use axum::http::{HeaderMap, StatusCode};
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

/// An `If-None-Match`/`If-Match` value without quotes (clients send both forms).
pub fn header_tag(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    let value = value.strip_prefix("W/").unwrap_or(value);
    Some(value.trim_matches('"').to_owned())
}

/// Runs storage work on the blocking pool, never on the async workers.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::Internal(format!("background task failed: {e}")))?
}

/// Awaits the answer of a write submitted to a database's merger.
pub async fn await_write<T>(receiver: tokio::sync::oneshot::Receiver<Result<T, corvid_engine::EngineError>>) -> Result<T, ApiError> {
    match receiver.await {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::Internal("the write was dropped by the database writer".into())),
    }
}
