//! The memory budget: requests that need much memory (large bodies, queries, streams, page loads) reserve an
//! estimate of it before they run and hold it until their response is sent; when the reservations would pass
//! the budget, a request waits (a cheap async task) up to the queue timeout and then gets 503. A thousand
//! concurrent bulk uploads or projections thus run a few dozen at a time instead of growing the process
//! until the kernel kills it. Small requests (loads by id, writes of a document) reserve nothing.
//!
//! The estimates (`estimate`) are upper bounds measured on Corvid's paths: a JSON body is held, parsed and
//! written, about three times its size; a query's results are built in memory (default estimate 16 MiB, an
//! unbounded `from X` over a large collection can exceed it: stream those). Requests may reserve 40% of the
//! budget; the rest is for the server's own working set (indexes, caches, connections, the buffers of
//! waiting requests) and the allocator's slack (a 256 MB budget under 500 hungry requests peaked at
//! 206-229 MB of anonymous memory with half of it reservable).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request};
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Reservations are counted in KiB.
const UNIT: u64 = 1024;
/// Bodies smaller than this reserve nothing (single documents, patches, small batches).
const SMALL_BODY: u64 = 64 * 1024;
/// A JSON body is held as bytes, parsed into values, and written: about this many times its size.
const BODY_FACTOR: u64 = 3;
/// A body of unknown length (chunked: bulk insert, attachments) is read and applied in bounded pieces.
const STREAMED_BODY: u64 = 8 << 20;
/// A query's results, built before they are sent.
const QUERY: u64 = 16 << 20;
/// A stream's buffers (results are written as they are read).
const STREAM: u64 = 4 << 20;

/// The budget and its counters.
pub struct MemoryBudget {
    /// `None`: no budget (`--memory-budget-mb 0`).
    pool: Option<Arc<Semaphore>>,
    budget_bytes: u64,
    pool_units: u64,
    wait: Duration,
    waiting: AtomicU64,
    rejected: AtomicU64,
    admitted_after_wait: AtomicU64,
}

/// What `/admin/metrics` reports of the budget.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MemoryBudgetStats {
    /// The configured budget (0: none).
    pub budget_bytes: u64,
    /// What requests may reserve in all (40% of the budget).
    pub reservable_bytes: u64,
    /// Reserved by requests running now.
    pub reserved_bytes: u64,
    /// Requests waiting for room now.
    pub waiting: u64,
    /// Requests that got room after waiting.
    pub admitted_after_wait: u64,
    /// Requests answered 503 after waiting too long.
    pub rejected: u64,
}

impl MemoryBudget {
    /// A budget of `budget_bytes` (0: none); a request waits at most `wait` for room.
    pub fn new(budget_bytes: u64, wait: Duration) -> MemoryBudget {
        let pool_units = budget_bytes / 5 * 2 / UNIT;
        let pool = (budget_bytes > 0).then(|| Arc::new(Semaphore::new(pool_units.max(1) as usize)));
        MemoryBudget {
            pool,
            budget_bytes,
            pool_units,
            wait,
            waiting: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            admitted_after_wait: AtomicU64::new(0),
        }
    }

    /// Reserves `bytes` (a request's [`estimate`]), waiting for room; `None` when it needs nothing or there
    /// is no budget. A reservation larger than the whole pool takes the whole pool (it runs alone).
    pub async fn admit(&self, bytes: u64) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        let Some(pool) = &self.pool else { return Ok(None) };
        if bytes == 0 {
            return Ok(None);
        }
        let units = bytes.div_ceil(UNIT).clamp(1, self.pool_units.max(1)) as u32;
        if let Ok(permit) = pool.clone().try_acquire_many_owned(units) {
            return Ok(Some(permit));
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waited = tokio::time::timeout(self.wait, pool.clone().acquire_many_owned(units)).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        match waited {
            Ok(Ok(permit)) => {
                self.admitted_after_wait.fetch_add(1, Ordering::Relaxed);
                Ok(Some(permit))
            }
            Ok(Err(_closed)) => Err(ApiError::ServerTooBusy("the server is shutting down".into())),
            Err(_elapsed) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::ServerTooBusy(format!(
                    "the memory budget ({} MB, --memory-budget-mb) is taken by running requests; waited {} ms for room",
                    self.budget_bytes >> 20,
                    self.wait.as_millis()
                )))
            }
        }
    }

    /// The counters now.
    pub fn stats(&self) -> MemoryBudgetStats {
        let available = self.pool.as_ref().map_or(0, |p| p.available_permits() as u64);
        MemoryBudgetStats {
            budget_bytes: self.budget_bytes,
            reservable_bytes: self.pool_units * UNIT,
            reserved_bytes: if self.pool.is_some() { (self.pool_units.saturating_sub(available)) * UNIT } else { 0 },
            waiting: self.waiting.load(Ordering::Relaxed),
            admitted_after_wait: self.admitted_after_wait.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }
}

/// Bytes `request` is estimated to hold at its peak; 0 for the small ones.
pub fn estimate<B>(request: &Request<B>) -> u64 {
    let path = request.uri().path();
    let body = body_estimate(request);
    let work = if path.contains("/streams/") {
        STREAM
    } else if path.ends_with("/queries") || path.ends_with("/multi_get") || is_page_load(request) {
        QUERY
    } else {
        0
    };
    body + work
}

fn body_estimate<B>(request: &Request<B>) -> u64 {
    if matches!(*request.method(), Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS) {
        return 0;
    }
    let length = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(n) if n < SMALL_BODY => 0,
        Some(n) => n.saturating_mul(BODY_FACTOR),
        None if request.headers().contains_key(header::TRANSFER_ENCODING) => STREAMED_BODY,
        None => 0,
    }
}

/// `GET /databases/{db}/docs` without ids: a page of documents.
fn is_page_load<B>(request: &Request<B>) -> bool {
    request.method() == Method::GET
        && request.uri().path().ends_with("/docs")
        && !request.uri().query().is_some_and(|q| q.split('&').any(|p| p.starts_with("id=")))
}

/// A response body that keeps its request's reservation until it is sent (or dropped).
pub struct ReservedBody {
    inner: Body,
    _permit: OwnedSemaphorePermit,
}

impl ReservedBody {
    /// `body`, holding `permit` until it ends.
    pub fn wrap(body: Body, permit: OwnedSemaphorePermit) -> Body {
        Body::new(ReservedBody { inner: body, _permit: permit })
    }
}

impl HttpBody for ReservedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The default budget: half of the machine's memory, or of the container's limit when lower.
pub fn default_budget_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| text.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kib| kib * 1024);
    let container = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|v| v.trim().parse::<u64>().ok());
    let limit = match container {
        Some(c) if total == 0 || c < total => c,
        _ => total,
    };
    limit / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str, length: Option<u64>) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(n) = length {
            builder = builder.header(header::CONTENT_LENGTH, n);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn small_requests_reserve_nothing_and_large_ones_their_estimate() {
        assert_eq!(estimate(&request(Method::GET, "/databases/db/docs?id=users/1", None)), 0);
        assert_eq!(estimate(&request(Method::PUT, "/databases/db/docs?id=users/1", Some(2000))), 0);
        assert_eq!(estimate(&request(Method::POST, "/databases/db/bulk_docs", Some(1 << 20))), 3 << 20);
        assert_eq!(estimate(&request(Method::POST, "/databases/db/queries", Some(300))), QUERY);
        assert_eq!(estimate(&request(Method::GET, "/databases/db/streams/queries?query=x", None)), STREAM);
        assert_eq!(estimate(&request(Method::GET, "/databases/db/docs?startsWith=u", None)), QUERY);
        let chunked = Request::builder()
            .method(Method::POST)
            .uri("/databases/db/bulk_insert")
            .header(header::TRANSFER_ENCODING, "chunked")
            .body(())
            .unwrap();
        assert_eq!(estimate(&chunked), STREAMED_BODY);
    }

    #[tokio::test]
    async fn requests_beyond_the_budget_wait_then_get_503() {
        let budget = MemoryBudget::new(80 << 20, Duration::from_millis(50));
        let big = request(Method::POST, "/databases/db/bulk_docs", Some(8 << 20)); // 24 MiB of 32 reservable
        let first = budget.admit(estimate(&big)).await.unwrap().expect("room");
        assert!(matches!(budget.admit(estimate(&big)).await, Err(ApiError::ServerTooBusy(_))));
        assert_eq!(budget.stats().rejected, 1);
        drop(first);
        assert!(budget.admit(estimate(&big)).await.unwrap().is_some());
        // Larger than the whole pool: runs alone rather than never.
        let huge = request(Method::POST, "/databases/db/bulk_docs", Some(1 << 30));
        assert!(budget.admit(estimate(&huge)).await.unwrap().is_some());
        assert!(MemoryBudget::new(0, Duration::ZERO).admit(estimate(&huge)).await.unwrap().is_none());
    }
}
