//! Bounds the queries that run at once: each runs on a blocking thread with its own buffers and maybe a
//! JavaScript sandbox, so a thousand slow queries must not mean a thousand threads. Queries beyond the bound
//! wait (as cheap async tasks) for up to the queue timeout, then get 503; a waiting query whose client goes
//! away leaves the queue, and a running one is cancelled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use corvid_engine::{Cancellation, EngineError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::responses::blocking;

pub struct QueryGate {
    slots: Arc<Semaphore>,
    max_running: usize,
    queue_timeout: Duration,
    counters: Arc<QueryGateCounters>,
}

#[derive(Default)]
struct QueryGateCounters {
    queued: AtomicU64,
    rejected: AtomicU64,
    cancelled: AtomicU64,
}

/// What `/admin/metrics` reports of the gate.
pub struct QueryGateStats {
    pub max_running: usize,
    pub running: usize,
    pub queued: u64,
    pub rejected: u64,
    pub cancelled: u64,
}

impl QueryGate {
    pub fn new(max_running: usize, queue_timeout: Duration) -> QueryGate {
        let max_running = max_running.max(1);
        QueryGate { slots: Arc::new(Semaphore::new(max_running)), max_running, queue_timeout, counters: Arc::default() }
    }

    /// Runs `work` on a blocking thread once a slot is free. `cancel` is set if this future is dropped (the
    /// client went away) before the work ended; the work is expected to watch it.
    pub async fn run<T: Send + 'static>(
        &self,
        cancel: &Cancellation,
        work: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let permit = self.enter().await?;
        let guard = cancel.cancel_on_drop();
        let counters = self.counters.clone();
        let result = blocking(move || {
            let _permit = permit; // the slot is free only when the work has ended
            let result = work();
            if matches!(result, Err(EngineError::Cancelled)) {
                counters.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            Ok(result?)
        })
        .await;
        guard.disarm();
        result
    }

    async fn enter(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        let waited = tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await;
        self.counters.queued.fetch_sub(1, Ordering::Relaxed);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(ApiError::ServerTooBusy("the server is shutting down".into())),
            Err(_elapsed) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::ServerTooBusy(format!(
                    "{} queries are running and this one waited {} ms for a slot (max_concurrent_queries, \
                     query_queue_timeout_ms); retry later",
                    self.max_running,
                    self.queue_timeout.as_millis()
                )))
            }
        }
    }

    pub fn stats(&self) -> QueryGateStats {
        QueryGateStats {
            max_running: self.max_running,
            running: self.max_running - self.slots.available_permits(),
            queued: self.counters.queued.load(Ordering::Relaxed),
            rejected: self.counters.rejected.load(Ordering::Relaxed),
            cancelled: self.counters.cancelled.load(Ordering::Relaxed),
        }
    }
}
