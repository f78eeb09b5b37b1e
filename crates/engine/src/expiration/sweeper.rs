//! The `expiration:<db>` thread. Every second it reads the two configurations from the database (what the
//! record last set) and runs each enabled task whose frequency has elapsed since its last pass; the
//! expiration of compare-exchange values runs with every document expiration pass, and at least every minute (RavenDB runs it on the cluster whatever the database configures). A pass reads the due
//! rows from a snapshot and acts on them in merged writes of at most `BATCH` rows each.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use corvid_storage::{Store, TimerKind, TransactionMerger};
use corvid_types::now_nanos;
use parking_lot::{Condvar, Mutex};

use super::backfill::backfill;
use super::config::SweepConfig;
use super::stats::{ExpirationStats, ExpirationStatsSnapshot, TaskStats};
use super::sweep::run_batch;
use crate::EngineError;

/// Rows acted on per merged write.
const BATCH: usize = 1024;
/// How often the thread looks at the configurations.
const TICK: Duration = Duration::from_secs(1);
/// Compare-exchange expiration's frequency when document expiration is not enabled.
const COMPARE_EXCHANGE_FREQUENCY: Duration = Duration::from_secs(60);

/// The handle the database keeps: stops the thread at close.
pub(crate) struct ExpirationSweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    stats: Arc<ExpirationStats>,
    store: Arc<Store>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// When each task runs next, and the configuration that schedule was made for.
struct Schedule {
    next: Option<Instant>,
    config: Option<SweepConfig>,
}

impl Schedule {
    /// Whether the task is due; a new configuration restarts its clock.
    fn due(&mut self, config: Option<SweepConfig>, now: Instant) -> Option<SweepConfig> {
        let enabled = config.clone().filter(|c| !c.disabled);
        if enabled != self.config {
            self.config = enabled.clone();
            self.next = enabled.as_ref().map(|c| now + Duration::from_secs(c.frequency_secs));
            return None;
        }
        let config = enabled?;
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        self.next = Some(now + Duration::from_secs(config.frequency_secs));
        Some(config)
    }
}

struct Worker {
    store: Arc<Store>,
    merger: Arc<TransactionMerger>,
    stats: Arc<ExpirationStats>,
}

impl Worker {
    fn config(&self, refresh: bool) -> Option<SweepConfig> {
        let stored = self.store.read().ok()?.expiration_config(refresh).ok()??;
        match SweepConfig::decode(&stored, refresh) {
            Ok(config) => Some(config),
            Err(e) => {
                tracing::error!(error = %e, "unreadable expiration configuration");
                None
            }
        }
    }

    /// Acts on every row of `kind` due now (at most `limit`); (batches, processed, stale).
    fn pass(&self, kind: TimerKind, limit: Option<u64>) -> Result<(u64, u64, u64), EngineError> {
        let mut remaining = limit.unwrap_or(u64::MAX);
        let (mut batches, mut processed, mut stale) = (0, 0, 0);
        while remaining > 0 {
            let now = now_nanos();
            let wanted = BATCH.min(usize::try_from(remaining).unwrap_or(BATCH));
            let due = self.store.read()?.due_timers(kind, now, wanted)?;
            let count = due.len();
            if count == 0 {
                break;
            }
            let outcome = self.merger.write_blocking(move |txn| run_batch(txn, kind, &due, now))?;
            batches += 1;
            processed += outcome.acted;
            stale += outcome.stale;
            remaining = remaining.saturating_sub(count as u64);
            if count < wanted {
                break;
            }
        }
        Ok((batches, processed, stale))
    }

    fn run_task(&self, kind: TimerKind, limit: Option<u64>) {
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| self.pass(kind, limit)))
            .unwrap_or_else(|_| Err(EngineError::Internal("the expiration pass panicked".into())));
        if let Err(e) = &result {
            tracing::warn!(task = ?kind, error = %e, "expiration pass failed");
        }
        self.stats.update(|s| {
            let task: &mut TaskStats = match kind {
                TimerKind::Expire => &mut s.expiration,
                TimerKind::Refresh => &mut s.refresh,
                TimerKind::CompareExchangeExpire => &mut s.compare_exchange,
            };
            task.passes += 1;
            task.last_pass_at = Some(now_nanos());
            task.last_pass_ms = started.elapsed().as_millis() as u64;
            match result {
                Ok((batches, processed, stale)) => {
                    task.batches += batches;
                    task.processed += processed;
                    task.stale += stale;
                    task.last_error = None;
                }
                Err(e) => task.last_error = Some(e.to_string()),
            }
        });
    }

    /// Queues the documents written before the queue existed (once per database).
    fn backfill(&self, stop: &(Mutex<bool>, Condvar)) {
        let stopping = || *stop.0.lock();
        let result = catch_unwind(AssertUnwindSafe(|| backfill(&self.store, &self.merger, &stopping)))
            .unwrap_or_else(|_| Err(EngineError::Internal("the expiration backfill panicked".into())));
        match &result {
            Ok(0) => {}
            Ok(queued) => {
                tracing::info!(documents = queued, "queued the @expires/@refresh of documents written before the expiration queue")
            }
            Err(e) => tracing::warn!(error = %e, "expiration backfill failed; it runs again at the next opening"),
        }
        self.stats.update(|s| match result {
            Ok(queued) => s.backfilled = Some(queued),
            Err(e) => s.backfill_error = Some(e.to_string()),
        });
    }

    fn run(self, stop: Arc<(Mutex<bool>, Condvar)>) {
        self.backfill(&stop);
        let mut expiration = Schedule { next: None, config: None };
        let mut refresh = Schedule { next: None, config: None };
        let mut compare_exchange_next = Instant::now() + COMPARE_EXCHANGE_FREQUENCY;
        loop {
            {
                let (stopped, wake) = &*stop;
                let mut stopped = stopped.lock();
                if !*stopped {
                    wake.wait_for(&mut stopped, TICK);
                }
                if *stopped {
                    return;
                }
            }
            let now = Instant::now();
            let expiration_ran = match expiration.due(self.config(false), now) {
                Some(config) => {
                    self.run_task(TimerKind::Expire, config.max_items_to_process);
                    true
                }
                None => false,
            };
            if let Some(config) = refresh.due(self.config(true), now) {
                self.run_task(TimerKind::Refresh, config.max_items_to_process);
            }
            if expiration_ran || now >= compare_exchange_next {
                self.run_task(TimerKind::CompareExchangeExpire, None);
                compare_exchange_next = now + COMPARE_EXCHANGE_FREQUENCY;
            }
        }
    }
}

impl ExpirationSweeper {
    /// Starts the thread of database `name`.
    pub(crate) fn start(name: &str, store: Arc<Store>, merger: Arc<TransactionMerger>) -> std::io::Result<ExpirationSweeper> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stats = Arc::new(ExpirationStats::default());
        let worker = Worker { store: store.clone(), merger, stats: stats.clone() };
        let thread_stop = stop.clone();
        let thread = std::thread::Builder::new().name(format!("expiration:{name}")).spawn(move || worker.run(thread_stop))?;
        Ok(ExpirationSweeper { stop, stats, store, thread: Mutex::new(Some(thread)) })
    }

    /// What the thread has done, with the queue's current length.
    pub(crate) fn stats(&self) -> ExpirationStatsSnapshot {
        let mut snapshot = self.stats.snapshot();
        snapshot.queued = self.store.read().and_then(|r| r.queued_timer_count()).unwrap_or(0);
        snapshot
    }

    fn signal_stop(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock() = true;
        wake.notify_all();
    }

    /// Stops the thread and waits for a pass in progress to end (call before the merger stops).
    pub(crate) fn stop(&self) {
        self.signal_stop();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ExpirationSweeper {
    fn drop(&mut self) {
        self.signal_stop();
    }
}
