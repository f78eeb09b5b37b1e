//! How `Concurrent` workers share one subscription (RavenDB 6's concurrent subscriptions). Each batch is
//! handed to one worker and recorded as that worker's in-flight documents; a document another worker holds
//! is not sent again but deferred to the resend list (so a document changed while in flight is sent again
//! once the holder acknowledged), and a worker that leaves without acknowledging gives its documents back to
//! the resend list, which the next batch of any worker serves first.
//!
//! Durability (decision 0049): this bookkeeping is in memory only. What is persisted is the subscription's
//! position, moved only to the *watermark*: just below the oldest document still in flight or waiting in the
//! resend list. After a crash every document past the watermark is scanned again, so a document may arrive
//! twice but none is lost, and no write beyond the usual acknowledgement is needed.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::EngineError;

/// The shared state of one subscription's concurrent workers.
pub struct ConcurrentDispatch {
    state: Mutex<DispatchState>,
    next_worker: AtomicU64,
}

#[derive(Default)]
struct DispatchState {
    /// Every document up to this etag was handed out, deferred or filtered out.
    scanned_to: u64,
    /// What each worker was sent and has not acknowledged: stored key and etag sent.
    in_flight: HashMap<u64, Vec<(String, u64)>>,
    /// Which worker holds each in-flight document.
    holders: HashMap<String, u64>,
    /// Documents to send again, by key: the etag of the oldest version still owed.
    resend: BTreeMap<String, u64>,
    /// Documents handed out again from the resend list (counter for the stats).
    resent: u64,
    /// Documents deferred because another worker held them.
    deferred: u64,
    /// Documents given back by workers that left without acknowledging.
    returned: u64,
}

impl DispatchState {
    /// Just below the oldest document still owed to some worker: where a restart must scan from.
    fn watermark(&self) -> u64 {
        let owed = self.in_flight.values().flatten().map(|(_, etag)| *etag).chain(self.resend.values().copied()).min();
        match owed {
            Some(oldest) => (oldest - 1).min(self.scanned_to),
            None => self.scanned_to,
        }
    }

    fn owe_again(&mut self, key: String, etag: u64) {
        let owed = self.resend.entry(key).or_insert(etag);
        *owed = (*owed).min(etag);
    }

    /// Gives a worker's in-flight documents back to the resend list.
    fn give_back(&mut self, worker: u64) {
        for (key, etag) in self.in_flight.remove(&worker).unwrap_or_default() {
            if self.holders.get(&key) == Some(&worker) {
                self.holders.remove(&key);
            }
            self.returned += 1;
            self.owe_again(key, etag);
        }
    }
}

/// Where a concurrent worker's batches are read from: the database (`concurrent_reader.rs`). Traits, so that
/// this module, which the database holds through its connections, depends neither on the database nor on the
/// batch and criteria types (which read through it).
pub trait ConcurrentSource {
    /// The subscription's query.
    type Criteria;
    /// What a read answers.
    type Batch: ConcurrentBatch;

    /// `owed`: resend entries no worker holds (key, etag owed), oldest first; `held`: whether another worker
    /// holds a document. On the caller's thread (a blocking one).
    fn read_concurrent_batch(
        &self,
        criteria: &Self::Criteria,
        after: u64,
        max_docs: usize,
        owed: &[(String, u64)],
        held: &dyn Fn(&str) -> bool,
    ) -> Result<ConcurrentRead<Self::Batch>, EngineError>;

    /// The database id (positions' change vectors name it).
    fn source_database_id(&self) -> &str;
}

/// A batch handed to a concurrent worker.
pub trait ConcurrentBatch {
    /// The stored key and etag of each document sent.
    fn sent(&self) -> &[(String, u64)];
    /// Sets the position the batch reports (the watermark) and its change vector.
    fn set_position(&mut self, etag: u64, change_vector: Option<String>);
}

/// What a concurrent read found (see `ConcurrentSource::read_concurrent_batch`).
pub struct ConcurrentRead<B> {
    /// What to send to this worker.
    pub batch: B,
    /// Resend entries done with: sent now, deleted, filtered out, or newer than the scan (it will find them).
    pub consumed: Vec<String>,
    /// Scanned documents another worker holds: stored key and etag.
    pub deferred: Vec<(String, u64)>,
    /// The last etag scanned.
    pub scanned_to: u64,
    /// How many items of the batch came from the resend list.
    pub resent: usize,
}

impl ConcurrentDispatch {
    pub(super) fn new(position: u64) -> ConcurrentDispatch {
        ConcurrentDispatch {
            state: Mutex::new(DispatchState { scanned_to: position, ..Default::default() }),
            next_worker: AtomicU64::new(1),
        }
    }

    /// Registers a worker; dropping the guard gives back what it did not acknowledge.
    pub fn join(self: &Arc<Self>) -> ConcurrentWorker {
        ConcurrentWorker { dispatch: self.clone(), worker: self.next_worker.fetch_add(1, Ordering::Relaxed) }
    }

    /// The position that may be stored now (every document up to it was acknowledged or filtered out).
    pub fn watermark(&self) -> u64 {
        self.state.lock().watermark()
    }

    /// Whether some resend entry is free for any worker to take.
    pub fn has_free_resend(&self) -> bool {
        let state = self.state.lock();
        state.resend.keys().any(|key| !state.holders.contains_key(key))
    }

    /// The dispatch as the subscription's state shows it.
    pub fn to_json(&self) -> Value {
        let state = self.state.lock();
        json!({
            "ScannedUpToEtag": state.scanned_to, "PersistablePosition": state.watermark(),
            "Workers": state.in_flight.len(), "InFlightDocuments": state.holders.len(), "ResendDocuments": state.resend.len(),
            "DocumentsResent": state.resent, "DocumentsDeferred": state.deferred, "DocumentsGivenBack": state.returned,
        })
    }
}

/// One concurrent worker's membership of its subscription's dispatch.
pub struct ConcurrentWorker {
    dispatch: Arc<ConcurrentDispatch>,
    worker: u64,
}

impl ConcurrentWorker {
    /// The next batch for this worker (on the caller's thread, a blocking one): free resend entries first,
    /// then documents past the shared scan. Its `last_etag` is the watermark after handing it out, and
    /// `scanned` counts everything done with (zero: nothing to do until a commit or another worker moves).
    pub fn next_batch<S: ConcurrentSource + ?Sized>(
        &self,
        database: &S,
        criteria: &S::Criteria,
        max_docs: usize,
    ) -> Result<S::Batch, EngineError> {
        let mut state = self.dispatch.state.lock();
        // A batch not acknowledged before asking for the next one (the server ended the connection meanwhile).
        state.give_back(self.worker);
        let mut owed: Vec<(String, u64)> =
            state.resend.iter().filter(|(key, _)| !state.holders.contains_key(*key)).map(|(k, e)| (k.clone(), *e)).collect();
        owed.sort_by_key(|(_, etag)| *etag);
        let read = database.read_concurrent_batch(criteria, state.scanned_to, max_docs, &owed, &|key| state.holders.contains_key(key))?;
        let ConcurrentRead { mut batch, consumed, deferred, scanned_to, resent } = read;
        state.resent += resent as u64;
        for key in &consumed {
            state.resend.remove(key);
        }
        state.deferred += deferred.len() as u64;
        for (key, etag) in deferred {
            state.owe_again(key, etag);
        }
        state.scanned_to = state.scanned_to.max(scanned_to);
        for (key, _) in batch.sent() {
            state.holders.insert(key.clone(), self.worker);
        }
        state.in_flight.insert(self.worker, batch.sent().to_vec());
        let watermark = state.watermark();
        batch.set_position(watermark, super::definition::position_change_vector(watermark, database.source_database_id()));
        Ok(batch)
    }

    /// This worker acknowledged its batch: the position that may be stored now, with its change vector.
    pub fn acknowledge<S: ConcurrentSource + ?Sized>(&self, database: &S) -> (u64, Option<String>) {
        let mut state = self.dispatch.state.lock();
        for (key, _) in state.in_flight.remove(&self.worker).unwrap_or_default() {
            if state.holders.get(&key) == Some(&self.worker) {
                state.holders.remove(&key);
            }
        }
        let watermark = state.watermark();
        (watermark, super::definition::position_change_vector(watermark, database.source_database_id()))
    }

    /// The shared dispatch.
    pub fn dispatch(&self) -> &Arc<ConcurrentDispatch> {
        &self.dispatch
    }
}

impl Drop for ConcurrentWorker {
    fn drop(&mut self) {
        self.dispatch.state.lock().give_back(self.worker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_stays_below_what_is_owed() {
        let mut state = DispatchState { scanned_to: 100, ..Default::default() };
        assert_eq!(state.watermark(), 100);
        state.in_flight.insert(1, vec![("a".into(), 40), ("b".into(), 60)]);
        state.holders.insert("a".into(), 1);
        state.holders.insert("b".into(), 1);
        assert_eq!(state.watermark(), 39);
        state.give_back(1);
        assert!(state.holders.is_empty());
        assert_eq!(state.resend.len(), 2);
        assert_eq!(state.watermark(), 39, "given-back documents are still owed");
        state.owe_again("a".into(), 90);
        assert_eq!(state.resend["a"], 40, "the oldest owed version counts");
        state.resend.clear();
        assert_eq!(state.watermark(), 100);
    }
}
