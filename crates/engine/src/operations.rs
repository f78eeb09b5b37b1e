//! Long-running operations (patch and delete by query and bulk insert of a database; the server's own, such
//! as compaction): an id, live progress, a final typed result or error, and cancellation. Finished
//! operations are kept for a while so clients polling `/operations/state` see how they ended; the server
//! renders their state as RavenDB's JSON.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::operation_result::OperationResult;
use crate::EngineError;

/// How long a finished operation stays visible.
const KEEP_FINISHED: Duration = Duration::from_secs(15 * 60);
/// Most finished operations kept (the oldest are dropped first).
const MAX_FINISHED: usize = 1024;
/// An operation reports progress to its listener at most this often: a patch of millions of documents
/// advances in thousands of steps, and a Changes API client wants a progress bar, not every step.
const PROGRESS_NOTICE_EVERY: Duration = Duration::from_millis(500);

/// Where an operation is: running, or how it ended with what it ended with. `R` is what a completed
/// operation reports, `F` the typed error a faulted one failed with (the server renders both).
#[derive(Debug)]
pub enum OperationState<R, F> {
    /// Still running.
    InProgress,
    /// Finished with this result.
    Completed(Arc<R>),
    /// Failed with this error.
    Faulted(Arc<F>),
    /// Stopped when asked to (`kill`).
    Canceled,
}

impl<R, F> Clone for OperationState<R, F> {
    fn clone(&self) -> Self {
        match self {
            OperationState::InProgress => OperationState::InProgress,
            OperationState::Completed(result) => OperationState::Completed(result.clone()),
            OperationState::Faulted(failure) => OperationState::Faulted(failure.clone()),
            OperationState::Canceled => OperationState::Canceled,
        }
    }
}

impl<R, F> OperationState<R, F> {
    /// RavenDB's name of the state (`OperationStatus`).
    pub fn name(&self) -> &'static str {
        match self {
            OperationState::InProgress => "InProgress",
            OperationState::Completed(_) => "Completed",
            OperationState::Faulted(_) => "Faulted",
            OperationState::Canceled => "Canceled",
        }
    }
}

#[derive(Debug)]
struct Progress<R, F> {
    state: OperationState<R, F>,
    processed: u64,
    total: u64,
    finished_at: Option<Instant>,
    /// When progress was last reported to the listener.
    noticed_at: Option<Instant>,
}

/// What an operation tells its listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationEvent {
    /// It advanced (at most every [`PROGRESS_NOTICE_EVERY`]).
    Progress,
    /// It ended: completed, faulted or canceled.
    Finished,
}

/// Told the id of every operation that advances or ends (the Changes API's operation notifications).
#[derive(Clone)]
pub struct OperationListener(Arc<dyn Fn(u64, OperationEvent) + Send + Sync>);

impl OperationListener {
    /// Wraps the callback.
    pub fn new(listener: impl Fn(u64, OperationEvent) + Send + Sync + 'static) -> OperationListener {
        OperationListener(Arc::new(listener))
    }
}

impl std::fmt::Debug for OperationListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OperationListener")
    }
}

/// One operation; the worker doing it updates it, clients read it.
#[derive(Debug)]
pub struct Operation<R = OperationResult, F = EngineError> {
    /// The id clients poll it by.
    pub id: u64,
    /// `UpdateByQuery`, `DeleteByQuery`, `BulkInsert`.
    pub kind: &'static str,
    /// What it works on (the query, for by-query operations).
    pub description: String,
    /// When it started, in unix nanoseconds.
    pub started_at: i64,
    cancel: AtomicBool,
    progress: Mutex<Progress<R, F>>,
    listener: Option<OperationListener>,
}

/// What a client sees of an operation at one moment.
#[derive(Debug, Clone)]
pub struct OperationSnapshot<R = OperationResult, F = EngineError> {
    /// The operation's id.
    pub id: u64,
    /// `UpdateByQuery`, `DeleteByQuery`, `BulkInsert`.
    pub kind: &'static str,
    /// What it works on.
    pub description: String,
    /// When it started, in unix nanoseconds.
    pub started_at: i64,
    /// Running, or how it ended.
    pub state: OperationState<R, F>,
    /// Items done so far.
    pub processed: u64,
    /// Items it will go through (0 until known).
    pub total: u64,
}

impl<R, F> Operation<R, F> {
    /// True once someone asked the operation to stop; the worker checks it between steps.
    pub fn is_canceled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// How many items the operation will go through.
    pub fn set_total(&self, total: u64) {
        self.progress.lock().total = total;
    }

    /// Counts `n` more items done, and tells the listener when it last heard long enough ago.
    pub fn add_processed(&self, n: u64) {
        let mut p = self.progress.lock();
        p.processed += n;
        let Some(listener) = &self.listener else { return };
        let now = Instant::now();
        if p.noticed_at.is_some_and(|at| now.duration_since(at) < PROGRESS_NOTICE_EVERY) {
            return;
        }
        p.noticed_at = Some(now);
        drop(p);
        (listener.0)(self.id, OperationEvent::Progress);
    }

    /// Ends the operation; the first ending wins.
    fn finish(&self, state: OperationState<R, F>) {
        let mut p = self.progress.lock();
        if !matches!(p.state, OperationState::InProgress) {
            return;
        }
        p.state = state;
        p.finished_at = Some(Instant::now());
        drop(p);
        if let Some(listener) = &self.listener {
            (listener.0)(self.id, OperationEvent::Finished);
        }
    }

    /// Ends the operation with its result.
    pub fn complete(&self, result: R) {
        self.finish(OperationState::Completed(Arc::new(result)));
    }

    /// Ends the operation with the error it failed with.
    pub fn fail(&self, failure: F) {
        self.finish(OperationState::Faulted(Arc::new(failure)));
    }

    /// Ends the operation as canceled (it stopped when asked to).
    pub fn mark_canceled(&self) {
        self.finish(OperationState::Canceled);
    }

    /// The operation as it is now.
    pub fn snapshot(&self) -> OperationSnapshot<R, F> {
        let p = self.progress.lock();
        OperationSnapshot {
            id: self.id,
            kind: self.kind,
            description: self.description.clone(),
            started_at: self.started_at,
            state: p.state.clone(),
            processed: p.processed,
            total: p.total,
        }
    }
}

/// Every operation of one database (or of the server).
#[derive(Debug)]
pub struct Operations<R = OperationResult, F = EngineError> {
    next_id: AtomicU64,
    all: Mutex<HashMap<u64, Arc<Operation<R, F>>>>,
    listener: Option<OperationListener>,
}

impl<R, F> Default for Operations<R, F> {
    fn default() -> Self {
        Operations::new()
    }
}

impl<R, F> Operations<R, F> {
    /// No operations; ids start at 1.
    pub fn new() -> Operations<R, F> {
        Operations { next_id: AtomicU64::new(1), all: Mutex::new(HashMap::new()), listener: None }
    }

    /// No operations; `listener` hears of each one that advances or ends.
    pub fn with_listener(listener: OperationListener) -> Operations<R, F> {
        Operations { listener: Some(listener), ..Operations::new() }
    }

    /// A fresh id (also handed to clients that start bulk inserts with it).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers an operation under `id` (a fresh one when None).
    pub fn start(&self, id: Option<u64>, kind: &'static str, description: String) -> Arc<Operation<R, F>> {
        let id = id.unwrap_or_else(|| self.next_id());
        // Ids handed out by the server-wide counter must not be handed out again here.
        self.next_id.fetch_max(id + 1, Ordering::Relaxed);
        let operation = Arc::new(Operation {
            id,
            kind,
            description,
            started_at: corvid_types::now_nanos(),
            cancel: AtomicBool::new(false),
            progress: Mutex::new(Progress {
                state: OperationState::InProgress,
                processed: 0,
                total: 0,
                finished_at: None,
                noticed_at: None,
            }),
            listener: self.listener.clone(),
        });
        let mut all = self.all.lock();
        Self::forget_old(&mut all);
        all.insert(id, operation.clone());
        operation
    }

    fn forget_old(all: &mut HashMap<u64, Arc<Operation<R, F>>>) {
        let now = Instant::now();
        all.retain(|_, op| op.progress.lock().finished_at.is_none_or(|at| now.duration_since(at) < KEEP_FINISHED));
        let mut finished: Vec<(Instant, u64)> =
            all.values().filter_map(|op| op.progress.lock().finished_at.map(|at| (at, op.id))).collect();
        if finished.len() > MAX_FINISHED {
            finished.sort();
            for (_, id) in &finished[..finished.len() - MAX_FINISHED] {
                all.remove(id);
            }
        }
    }

    /// The operation with this id, while it is kept.
    pub fn get(&self, id: u64) -> Option<Arc<Operation<R, F>>> {
        self.all.lock().get(&id).cloned()
    }

    /// Asks an operation to stop; false when there is no such operation.
    pub fn kill(&self, id: u64) -> bool {
        match self.get(id) {
            Some(op) => {
                op.cancel.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Asks every running operation to stop (the database is closing).
    pub fn kill_all(&self) {
        for op in self.all.lock().values() {
            op.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Every operation kept, by id.
    pub fn list(&self) -> Vec<OperationSnapshot<R, F>> {
        let mut list: Vec<OperationSnapshot<R, F>> = self.all.lock().values().map(|op| op.snapshot()).collect();
        list.sort_by_key(|s| s.id);
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let ops: Operations<u64, String> = Operations::new();
        let op = ops.start(None, "DeleteByQuery", "from Users".into());
        op.set_total(10);
        op.add_processed(4);
        let snapshot = op.snapshot();
        assert_eq!(snapshot.state.name(), "InProgress");
        assert_eq!((snapshot.processed, snapshot.total), (4, 10));
        assert!(ops.kill(op.id));
        assert!(op.is_canceled());
        op.mark_canceled();
        op.complete(1);
        assert!(matches!(op.snapshot().state, OperationState::Canceled), "the first ending wins");
        assert!(!ops.kill(9999));
    }

    #[test]
    fn progress_is_reported_at_a_bounded_rate_and_the_end_always() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let listener = {
            let heard = heard.clone();
            OperationListener::new(move |id, event| heard.lock().push((id, event)))
        };
        let ops: Operations<u64, String> = Operations::with_listener(listener);
        let op = ops.start(None, "UpdateByQuery", String::new());
        for _ in 0..100 {
            op.add_processed(1);
        }
        op.complete(100);
        assert_eq!(*heard.lock(), vec![(op.id, OperationEvent::Progress), (op.id, OperationEvent::Finished)]);
    }

    #[test]
    fn ids_given_by_clients_are_not_reused() {
        let ops: Operations<u64, String> = Operations::new();
        ops.start(Some(41), "BulkInsert", String::new());
        assert_eq!(ops.next_id(), 42);
        let failed = ops.start(None, "UpdateByQuery", String::new());
        failed.fail("boom".to_owned());
        let OperationState::Faulted(failure) = failed.snapshot().state else { panic!("the operation failed") };
        assert_eq!(*failure, "boom");
    }
}
