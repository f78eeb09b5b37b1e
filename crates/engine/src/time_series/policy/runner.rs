//! The `ts-policies:<db>` thread: every `PolicyCheckFrequency` it runs a pass (`pass.rs`) with the configuration
//! the record last set, and counts what it did for the stats endpoint. A new configuration resets the dirty
//! marks, so the next pass looks at every series again (as RavenDB does when policies are added).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use corvid_storage::{Store, TransactionMerger};
use corvid_types::now_nanos;
use parking_lot::{Condvar, Mutex};

use super::config::TimeSeriesPolicies;
use super::pass::{run_pass, PassState};
use crate::EngineError;

/// How long the thread sleeps when no policy is configured (a new configuration wakes it).
const IDLE: Duration = Duration::from_secs(3600);

/// What the runner has done since the database opened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PolicyRunnerStats {
    /// Passes run.
    pub passes: u64,
    /// When the last pass ended, unix nanoseconds.
    pub last_pass_at: Option<i64>,
    /// How long the last pass took, milliseconds.
    pub last_pass_ms: u64,
    /// Series whose rollup series were written (a series counts once per pass and policy).
    pub series_rolled_up: u64,
    /// Rollup entries written.
    pub rollup_entries_written: u64,
    /// Series trimmed by retention.
    pub series_retained: u64,
    /// Entries removed by retention.
    pub entries_deleted: u64,
    /// Series with windows still to roll up (their window has not closed yet) after the last pass.
    pub pending_series: u64,
    /// Failures since the database opened.
    pub errors: u64,
    /// The last failure.
    pub last_error: Option<String>,
}

/// The configuration the thread runs with, and whether it changed since it last looked.
struct Shared {
    config: Option<Arc<TimeSeriesPolicies>>,
    changed: bool,
    stopped: bool,
}

/// The handle the database keeps.
pub(crate) struct PolicyRunner {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    stats: Arc<Mutex<PolicyRunnerStats>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Worker {
    store: Arc<Store>,
    merger: Arc<TransactionMerger>,
    stats: Arc<Mutex<PolicyRunnerStats>>,
}

impl Worker {
    fn pass(&self, config: &TimeSeriesPolicies, state: &mut PassState) {
        let started = Instant::now();
        let now = now_nanos();
        let result = catch_unwind(AssertUnwindSafe(|| run_pass(&self.store, &self.merger, config, state, now / 1_000_000, now)))
            .unwrap_or_else(|_| Err(EngineError::Internal("the time-series policy pass panicked".into())));
        let mut stats = self.stats.lock();
        stats.passes += 1;
        stats.last_pass_at = Some(now_nanos());
        stats.last_pass_ms = started.elapsed().as_millis() as u64;
        stats.pending_series = state.dirty.len() as u64;
        match result {
            Ok(outcome) => {
                stats.series_rolled_up += outcome.series_rolled_up;
                stats.rollup_entries_written += outcome.rollup_entries_written;
                stats.series_retained += outcome.series_retained;
                stats.entries_deleted += outcome.entries_deleted;
                stats.errors += outcome.errors.len() as u64;
                if let Some(last) = outcome.errors.last() {
                    tracing::warn!(error = %last, "time-series rollup failed");
                    stats.last_error = Some(last.clone());
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "time-series policy pass failed");
                // The marks of this pass may be lost: look at every series again next time.
                *state = PassState::default();
                stats.errors += 1;
                stats.last_error = Some(e.to_string());
            }
        }
    }

    fn run(self, shared: Arc<(Mutex<Shared>, Condvar)>) {
        let mut state = PassState::default();
        let mut config: Option<Arc<TimeSeriesPolicies>> = None;
        loop {
            {
                let (lock, wake) = &*shared;
                let mut guard = lock.lock();
                let wait = config.as_ref().map_or(IDLE, |c| c.check_frequency);
                if !guard.stopped && !guard.changed {
                    wake.wait_for(&mut guard, wait);
                }
                if guard.stopped {
                    return;
                }
                if guard.changed {
                    guard.changed = false;
                    config = guard.config.clone();
                    state = PassState::default();
                    // The first pass runs one check frequency after the configuration is set.
                    continue;
                }
            }
            if let Some(config) = &config {
                self.pass(config, &mut state);
            }
        }
    }
}

impl PolicyRunner {
    /// Starts the thread of database `name`, with no policies until [`PolicyRunner::configure`].
    pub(crate) fn start(name: &str, store: Arc<Store>, merger: Arc<TransactionMerger>) -> std::io::Result<PolicyRunner> {
        let shared = Arc::new((Mutex::new(Shared { config: None, changed: false, stopped: false }), Condvar::new()));
        let stats = Arc::new(Mutex::new(PolicyRunnerStats::default()));
        let worker = Worker { store, merger, stats: stats.clone() };
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new().name(format!("ts-policies:{name}")).spawn(move || worker.run(thread_shared))?;
        Ok(PolicyRunner { shared, stats, thread: Mutex::new(Some(thread)) })
    }

    /// Runs the policies of `config` from now on (None: stops running any).
    pub(crate) fn configure(&self, config: Option<TimeSeriesPolicies>) {
        let (lock, wake) = &*self.shared;
        let mut shared = lock.lock();
        let config = config.map(Arc::new);
        if shared.config != config {
            shared.config = config;
            shared.changed = true;
            wake.notify_all();
        }
    }

    /// The configuration in force.
    pub(crate) fn config(&self) -> Option<Arc<TimeSeriesPolicies>> {
        self.shared.0.lock().config.clone()
    }

    /// What the thread has done.
    pub(crate) fn stats(&self) -> PolicyRunnerStats {
        self.stats.lock().clone()
    }

    fn signal_stop(&self) {
        let (lock, wake) = &*self.shared;
        lock.lock().stopped = true;
        wake.notify_all();
    }

    /// Stops the thread, waiting for a pass in progress (call before the merger stops).
    pub(crate) fn stop(&self) {
        self.signal_stop();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for PolicyRunner {
    fn drop(&mut self) {
        self.signal_stop();
    }
}
