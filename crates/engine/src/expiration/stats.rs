//! What the expiration thread has done, per task, for the stats endpoint.

use parking_lot::Mutex;

/// The counters of one task (document expiration, document refresh or compare-exchange expiration).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TaskStats {
    /// Passes run since the database opened.
    pub passes: u64,
    /// Merged write batches those passes committed.
    pub batches: u64,
    /// Documents deleted or refreshed (values deleted for compare-exchange).
    pub processed: u64,
    /// Queue rows dropped because their target had changed or gone.
    pub stale: u64,
    /// When the last pass ended, unix nanoseconds.
    pub last_pass_at: Option<i64>,
    /// How long the last pass took, milliseconds.
    pub last_pass_ms: u64,
    /// The last failure, if the last pass failed.
    pub last_error: Option<String>,
}

/// A copy of every task's counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExpirationStatsSnapshot {
    /// Deleting documents whose `@expires` passed.
    pub expiration: TaskStats,
    /// Refreshing documents whose `@refresh` passed.
    pub refresh: TaskStats,
    /// Deleting compare-exchange values whose `@expires` passed.
    pub compare_exchange: TaskStats,
    /// Rows in the queue (stale ones included) when the snapshot was taken.
    pub queued: u64,
    /// Documents written before the queue existed that were queued at this opening (`backfill.rs`); `None`
    /// while that scan has not finished.
    pub backfilled: Option<u64>,
    /// Why the backfill failed, if it did (it runs again at the next opening).
    pub backfill_error: Option<String>,
}

/// Shared between the thread and the readers of the stats.
#[derive(Debug, Default)]
pub(crate) struct ExpirationStats {
    inner: Mutex<ExpirationStatsSnapshot>,
}

impl ExpirationStats {
    pub(crate) fn update(&self, change: impl FnOnce(&mut ExpirationStatsSnapshot)) {
        change(&mut self.inner.lock());
    }

    pub(crate) fn snapshot(&self) -> ExpirationStatsSnapshot {
        self.inner.lock().clone()
    }
}
