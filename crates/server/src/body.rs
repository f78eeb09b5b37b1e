//! Request bodies: read up to the configured size limit, parse JSON with a clear error.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;

use crate::error::ApiError;

pub async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::BodyTooLarge { limit });
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::BodyTooLarge { limit }
        } else {
            ApiError::BadRequest(format!("Could not read the request body: {e}"))
        }
    })
}

/// Reads a body under the size limit and parses it as JSON.
pub async fn read_json(body: Body, headers: &HeaderMap, limit: usize) -> Result<serde_json::Value, ApiError> {
    parse_json(&read_body(body, headers, limit).await?)
}

pub fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(ApiError::InvalidJson("the body is empty".into()));
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))
}
