//! Request bodies: read up to the configured size limit, parse JSON with a clear error.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use corvid_types::json::RequestJsonError;

use crate::error::ApiError;

pub async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, ApiError> {
    // hyper has already refused a Content-Length that is not a number.
    let declared = crate::request_headers::text(headers, "content-length")?.and_then(|v| v.parse::<u64>().ok());
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
    let text = std::str::from_utf8(bytes).map_err(|e| ApiError::InvalidJson(format!("the body is not UTF-8: {e}")))?;
    corvid_types::json::parse_request(text).map_err(|e| match e {
        RequestJsonError::Limit(limit) => ApiError::BadRequest(limit.to_string()),
        RequestJsonError::Syntax(message) => ApiError::InvalidJson(message),
    })
}

/// A request body read as a blocking `Read` (for streamed bodies parsed on a blocking thread). The async
/// side pumps frames through a small bounded channel, so a slow consumer applies back-pressure to the
/// client instead of buffering the body in memory.
pub struct BodyReader {
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    current: Bytes,
}

impl BodyReader {
    /// Must be called on the async runtime; read the result on a blocking thread.
    pub fn spawn(body: Body) -> BodyReader {
        use http_body_util::BodyExt;
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        tokio::spawn(async move {
            let mut body = body;
            loop {
                // Once the reader is gone (it found the end of what it reads), the rest of the body is not
                // waited for: a client may keep its request open until it has the answer.
                let frame = tokio::select! {
                    frame = body.frame() => frame,
                    _ = tx.closed() => return,
                };
                let Some(frame) = frame else { return };
                let chunk = match frame {
                    Ok(frame) => match frame.into_data() {
                        Ok(data) => Ok(data),
                        Err(_) => continue, // trailers
                    },
                    Err(e) => Err(std::io::Error::other(format!("the request body was cut off: {e}"))),
                };
                let failed = chunk.is_err();
                if tx.send(chunk).await.is_err() || failed {
                    return;
                }
            }
        });
        BodyReader { chunks: rx, current: Bytes::new() }
    }
}

impl std::io::Read for BodyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.current.len());
        out[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}
