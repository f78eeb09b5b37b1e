//! Long-running operations of a database (patch and delete by query, bulk insert): an id, live progress, a
//! final result or error, and cancellation. Finished operations are kept for a while so clients polling
//! `/operations/state` see how they ended.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};

/// How long a finished operation stays visible.
const KEEP_FINISHED: Duration = Duration::from_secs(15 * 60);
/// Most finished operations kept (the oldest are dropped first).
const MAX_FINISHED: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationStatus {
    InProgress,
    Completed,
    Faulted,
    Canceled,
}

impl OperationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OperationStatus::InProgress => "InProgress",
            OperationStatus::Completed => "Completed",
            OperationStatus::Faulted => "Faulted",
            OperationStatus::Canceled => "Canceled",
        }
    }
}

/// An operation's failure, as the protocol reports it (`Type`, `Message`, HTTP status).
#[derive(Debug, Clone, PartialEq)]
pub struct OperationFailure {
    pub type_name: String,
    pub message: String,
    pub status_code: u16,
}

#[derive(Debug)]
struct Progress {
    status: OperationStatus,
    processed: u64,
    total: u64,
    result: Option<Value>,
    failure: Option<OperationFailure>,
    finished_at: Option<Instant>,
}

/// One operation; the worker doing it updates it, clients read it.
#[derive(Debug)]
pub struct Operation {
    pub id: u64,
    /// `UpdateByQuery`, `DeleteByQuery`, `BulkInsert`.
    pub kind: &'static str,
    pub description: String,
    pub started_at: i64,
    cancel: AtomicBool,
    progress: Mutex<Progress>,
}

/// What a client sees of an operation at one moment.
#[derive(Debug, Clone)]
pub struct OperationSnapshot {
    pub id: u64,
    pub kind: &'static str,
    pub description: String,
    pub started_at: i64,
    pub status: OperationStatus,
    pub processed: u64,
    pub total: u64,
    pub result: Option<Value>,
    pub failure: Option<OperationFailure>,
}

impl OperationSnapshot {
    /// RavenDB's `OperationState` JSON.
    pub fn state_json(&self) -> Value {
        let progress = json!({
            "$type": "Raven.Client.Documents.Operations.DeterminateProgress, Raven.Client",
            "Processed": self.processed, "Total": self.total
        });
        match self.status {
            OperationStatus::InProgress => json!({"Status": "InProgress", "Progress": progress, "Result": null}),
            OperationStatus::Completed => json!({"Status": "Completed", "Progress": null, "Result": self.result}),
            OperationStatus::Canceled => json!({"Status": "Canceled", "Progress": null, "Result": null}),
            OperationStatus::Faulted => {
                let failure = self.failure.clone().unwrap_or(OperationFailure {
                    type_name: "System.InvalidOperationException".into(),
                    message: "the operation failed".into(),
                    status_code: 500,
                });
                json!({"Status": "Faulted", "Progress": null, "Result": {
                    "$type": "Raven.Client.Documents.Operations.OperationExceptionResult, Raven.Client",
                    "Type": failure.type_name, "Message": failure.message,
                    "Error": format!("{}: {}", failure.type_name, failure.message), "StatusCode": failure.status_code
                }})
            }
        }
    }
}

impl Operation {
    pub fn is_canceled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    pub fn set_total(&self, total: u64) {
        self.progress.lock().total = total;
    }

    pub fn add_processed(&self, n: u64) {
        self.progress.lock().processed += n;
    }

    fn finish(&self, status: OperationStatus, result: Option<Value>, failure: Option<OperationFailure>) {
        let mut p = self.progress.lock();
        if p.status != OperationStatus::InProgress {
            return;
        }
        p.status = status;
        p.result = result;
        p.failure = failure;
        p.finished_at = Some(Instant::now());
    }

    pub fn complete(&self, result: Value) {
        self.finish(OperationStatus::Completed, Some(result), None);
    }

    pub fn fail(&self, failure: OperationFailure) {
        self.finish(OperationStatus::Faulted, None, Some(failure));
    }

    pub fn mark_canceled(&self) {
        self.finish(OperationStatus::Canceled, None, None);
    }

    pub fn snapshot(&self) -> OperationSnapshot {
        let p = self.progress.lock();
        OperationSnapshot {
            id: self.id,
            kind: self.kind,
            description: self.description.clone(),
            started_at: self.started_at,
            status: p.status,
            processed: p.processed,
            total: p.total,
            result: p.result.clone(),
            failure: p.failure.clone(),
        }
    }
}

/// Every operation of one database.
#[derive(Debug, Default)]
pub struct Operations {
    next_id: AtomicU64,
    all: Mutex<HashMap<u64, Arc<Operation>>>,
}

impl Operations {
    pub fn new() -> Operations {
        Operations { next_id: AtomicU64::new(1), all: Mutex::new(HashMap::new()) }
    }

    /// A fresh id (also handed to clients that start bulk inserts with it).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers an operation under `id` (a fresh one when None).
    pub fn start(&self, id: Option<u64>, kind: &'static str, description: String) -> Arc<Operation> {
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
                status: OperationStatus::InProgress,
                processed: 0,
                total: 0,
                result: None,
                failure: None,
                finished_at: None,
            }),
        });
        let mut all = self.all.lock();
        Self::forget_old(&mut all);
        all.insert(id, operation.clone());
        operation
    }

    fn forget_old(all: &mut HashMap<u64, Arc<Operation>>) {
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

    pub fn get(&self, id: u64) -> Option<Arc<Operation>> {
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

    pub fn list(&self) -> Vec<OperationSnapshot> {
        let mut list: Vec<OperationSnapshot> = self.all.lock().values().map(|op| op.snapshot()).collect();
        list.sort_by_key(|s| s.id);
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_and_state_json() {
        let ops = Operations::new();
        let op = ops.start(None, "DeleteByQuery", "from Users".into());
        op.set_total(10);
        op.add_processed(4);
        let state = op.snapshot().state_json();
        assert_eq!(state["Status"], "InProgress");
        assert_eq!(state["Progress"]["Processed"], 4);
        assert!(ops.kill(op.id));
        assert!(op.is_canceled());
        op.mark_canceled();
        op.complete(json!({"Total": 1}));
        assert_eq!(op.snapshot().status, OperationStatus::Canceled, "the first ending wins");
        assert!(!ops.kill(9999));
    }

    #[test]
    fn ids_given_by_clients_are_not_reused() {
        let ops = Operations::new();
        ops.start(Some(41), "BulkInsert", String::new());
        assert_eq!(ops.next_id(), 42);
        let failed = ops.start(None, "UpdateByQuery", String::new());
        failed.fail(OperationFailure { type_name: "X".into(), message: "boom".into(), status_code: 400 });
        let state = failed.snapshot().state_json();
        assert_eq!(state["Result"]["Message"], "boom");
        assert_eq!(state["Result"]["StatusCode"], 400);
    }
}
