//! The workers connected to each subscription of a database, and RavenDB's admission rules between them
//! (`OpenIfFree`, `TakeOver`, `WaitForFree`, `Concurrent`). A connection's slot is freed the moment its connection ends
//! (its guard is dropped), because the clients reconnect at once; a drop, delete, disable or take-over
//! frees it as well and marks why, which the connection tells its client on its next check (within a
//! heartbeat). Also the live statistics of every connection, for the state and metrics endpoints, and the
//! shared dispatch of each subscription that `Concurrent` workers read (kept while the subscription lives
//! unchanged, so workers that come and go continue where the others are).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use corvid_types::{format_date, now_nanos};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::concurrent_dispatch::ConcurrentDispatch;

/// Whether a worker with `strategy` may join a subscription `holder` is connected to (`TakeOver` then evicts).
fn admission_between(holder: &ConnectionSlot, strategy: Strategy, subscription_id: u64) -> Result<(), Refusal> {
    let refuse = |message: String, may_wait: bool| Err(Refusal::InUse { message, may_wait });
    match (holder.strategy, strategy) {
        (Strategy::Concurrent, Strategy::Concurrent) => Ok(()),
        (Strategy::Concurrent, _) => refuse(
            format!(
                "Subscription {subscription_id} is currently concurrent and can only admit connections with a 'Concurrent' \
                 SubscriptionOpeningStrategy. Connection not opened."
            ),
            false,
        ),
        (_, Strategy::Concurrent) => refuse(
            format!(
                "Subscription {subscription_id} is not concurrent and cannot admit connections with a 'Concurrent' \
                 SubscriptionOpeningStrategy. Connection not opened."
            ),
            false,
        ),
        (Strategy::TakeOver, Strategy::TakeOver) => refuse(
            format!("Subscription {subscription_id} is already occupied by a TakeOver connection, connection cannot be opened"),
            false,
        ),
        (_, Strategy::TakeOver) => Ok(()),
        (_, other) => refuse(
            format!(
                "Subscription {subscription_id} is in use by {} (strategy {}); this worker asked for {}",
                holder.client_uri,
                holder.strategy.name(),
                other.name()
            ),
            other == Strategy::WaitForFree,
        ),
    }
}

/// How a worker wants to share its subscription (`SubscriptionOpeningStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Admitted only when no worker is connected (the default).
    OpenIfFree,
    /// Replaces a connected worker, unless that one took over too.
    TakeOver,
    /// Waits until no worker is connected.
    WaitForFree,
    /// Several workers sharing the subscription, each sent different documents.
    Concurrent,
}

impl Strategy {
    /// The strategy a client names; unknown names are None.
    pub fn parse(name: &str) -> Option<Strategy> {
        Some(match name {
            "OpenIfFree" => Strategy::OpenIfFree,
            "TakeOver" => Strategy::TakeOver,
            "WaitForFree" => Strategy::WaitForFree,
            "Concurrent" => Strategy::Concurrent,
            _ => return None,
        })
    }

    /// RavenDB's name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::OpenIfFree => "OpenIfFree",
            Strategy::TakeOver => "TakeOver",
            Strategy::WaitForFree => "WaitForFree",
            Strategy::Concurrent => "Concurrent",
        }
    }
}

/// Why the server ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `POST /subscriptions/drop`.
    Dropped,
    /// The subscription was deleted.
    Deleted,
    /// The subscription was disabled.
    Disabled,
    /// Its query or start point changed: the worker may reconnect and start over.
    Modified,
    /// A `TakeOver` worker replaced it.
    TakenOver,
}

/// How many subscription connections a database admits at once (RavenDB's
/// `Subscriptions.MaxNumberOfConcurrentConnections` default).
pub const MAX_CONNECTIONS_PER_DATABASE: usize = 1000;

/// Why a worker was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Other workers hold the subscription (RavenDB's `SubscriptionInUseException`); `may_wait` says whether a
    /// `WaitForFree` worker waits for them (not when the subscription and the worker disagree on `Concurrent`).
    InUse {
        /// Who holds it and why this worker cannot join.
        message: String,
        /// Waiting may help.
        may_wait: bool,
    },
    /// The database already serves as many connections as it allows (`SubscriptionClosedException`).
    TooManyConnections(String),
}

/// One connected worker: who, how, and what it was sent.
#[derive(Debug)]
pub struct ConnectionSlot {
    /// The subscription it reads.
    pub subscription_id: u64,
    /// Its strategy.
    pub strategy: Strategy,
    /// The worker's id (its `WorkerId` option, or one the server made up): what a drop may name.
    pub worker_id: String,
    /// `tcp://address:port` of the client.
    pub client_uri: String,
    /// Unix nanoseconds.
    pub connected_at: i64,
    ended: Mutex<Option<EndReason>>,
    /// Batches sent.
    pub batches: AtomicU64,
    /// Documents sent (projections and failed items included).
    pub documents: AtomicU64,
    /// Acknowledgements received.
    pub acknowledgements: AtomicU64,
    /// Unix nanoseconds of the last batch sent (0: none).
    pub last_batch_at: AtomicI64,
    /// Unix nanoseconds of the last acknowledgement (0: none).
    pub last_ack_at: AtomicI64,
}

impl ConnectionSlot {
    /// Why the server ended this connection, once it did.
    pub fn ended(&self) -> Option<EndReason> {
        *self.ended.lock()
    }

    fn end(&self, reason: EndReason) {
        self.ended.lock().get_or_insert(reason);
    }

    /// The connection as the subscription's state shows it.
    pub fn to_json(&self) -> Value {
        let date = |t: i64| (t > 0).then(|| format_date(t));
        json!({
            "ClientUri": self.client_uri, "WorkerId": self.worker_id, "Strategy": self.strategy.name(), "ConnectedAt": format_date(self.connected_at),
            "BatchesSent": self.batches.load(Ordering::Relaxed), "DocumentsSent": self.documents.load(Ordering::Relaxed),
            "Acknowledgements": self.acknowledgements.load(Ordering::Relaxed),
            "LastBatchSentAt": date(self.last_batch_at.load(Ordering::Relaxed)),
            "LastAckAt": date(self.last_ack_at.load(Ordering::Relaxed)),
        })
    }
}

/// The connected workers of one database, by subscription id.
#[derive(Default)]
pub struct SubscriptionConnections {
    slots: Mutex<HashMap<u64, Vec<Arc<ConnectionSlot>>>>,
    dispatches: Mutex<HashMap<u64, Arc<ConcurrentDispatch>>>,
}

/// Holds an admitted worker's slot; dropping it frees the slot (the connection ended, however it did).
pub struct AdmittedConnection {
    connections: Arc<SubscriptionConnections>,
    /// The slot, to report what was sent and to check whether the server ended it.
    pub slot: Arc<ConnectionSlot>,
}

impl Drop for AdmittedConnection {
    fn drop(&mut self) {
        self.connections.release(&self.slot);
    }
}

impl SubscriptionConnections {
    /// Admits a worker under RavenDB's rules, or says why not. A subscription is concurrent while its first
    /// connected worker is: then only `Concurrent` workers join (a `TakeOver` does not evict them), and a
    /// `Concurrent` worker is refused by a subscription held by any other strategy.
    pub fn admit(
        self: &Arc<Self>,
        subscription_id: u64,
        strategy: Strategy,
        client_uri: String,
        worker_id: String,
    ) -> Result<AdmittedConnection, Refusal> {
        let mut slots = self.slots.lock();
        let connected: usize = slots.values().map(Vec::len).sum();
        if connected >= MAX_CONNECTIONS_PER_DATABASE {
            return Err(Refusal::TooManyConnections(format!(
                "Cannot open new subscription connection, max amount of concurrent connections reached ({MAX_CONNECTIONS_PER_DATABASE})"
            )));
        }
        let current = slots.entry(subscription_id).or_default();
        if let Some(holder) = current.first() {
            admission_between(holder, strategy, subscription_id)?;
            if strategy == Strategy::TakeOver {
                for old in current.drain(..) {
                    old.end(EndReason::TakenOver);
                }
            }
        }
        if strategy != Strategy::Concurrent {
            // A single worker moves the stored position itself: what concurrent workers had in memory is stale.
            self.dispatches.lock().remove(&subscription_id);
        }
        let slot = Arc::new(ConnectionSlot {
            subscription_id,
            strategy,
            worker_id,
            client_uri,
            connected_at: now_nanos(),
            ended: Mutex::new(None),
            batches: AtomicU64::new(0),
            documents: AtomicU64::new(0),
            acknowledgements: AtomicU64::new(0),
            last_batch_at: AtomicI64::new(0),
            last_ack_at: AtomicI64::new(0),
        });
        current.push(slot.clone());
        Ok(AdmittedConnection { connections: self.clone(), slot })
    }

    /// The dispatch `Concurrent` workers of a subscription share; a new one starts at the stored `position`.
    pub fn concurrent_dispatch(&self, subscription_id: u64, position: u64) -> Arc<ConcurrentDispatch> {
        self.dispatches.lock().entry(subscription_id).or_insert_with(|| Arc::new(ConcurrentDispatch::new(position))).clone()
    }

    /// The shared dispatch of a subscription, when concurrent workers read it since it last changed.
    pub fn dispatch_of(&self, subscription_id: u64) -> Option<Arc<ConcurrentDispatch>> {
        self.dispatches.lock().get(&subscription_id).cloned()
    }

    fn release(&self, slot: &Arc<ConnectionSlot>) {
        let mut slots = self.slots.lock();
        if let Some(current) = slots.get_mut(&slot.subscription_id) {
            current.retain(|s| !Arc::ptr_eq(s, slot));
            if current.is_empty() {
                slots.remove(&slot.subscription_id);
            }
        }
    }

    /// Ends every connection of a subscription, freeing its slots at once; how many there were. A changed or
    /// deleted subscription forgets its shared dispatch (its workers start again from the stored position).
    pub fn end_all(&self, subscription_id: u64, reason: EndReason) -> usize {
        if matches!(reason, EndReason::Modified | EndReason::Deleted) {
            self.dispatches.lock().remove(&subscription_id);
        }
        let ended = self.slots.lock().remove(&subscription_id).unwrap_or_default();
        for slot in &ended {
            slot.end(reason);
        }
        ended.len()
    }

    /// Ends the connection of one worker, by its id; false when none of the subscription's has it.
    pub fn end_worker(&self, subscription_id: u64, worker_id: &str, reason: EndReason) -> bool {
        let mut slots = self.slots.lock();
        let Some(current) = slots.get_mut(&subscription_id) else { return false };
        let Some(at) = current.iter().position(|s| s.worker_id == worker_id) else { return false };
        let slot = current.remove(at);
        if current.is_empty() {
            slots.remove(&subscription_id);
        }
        slot.end(reason);
        true
    }

    /// The connections of one subscription.
    pub fn of(&self, subscription_id: u64) -> Vec<Arc<ConnectionSlot>> {
        self.slots.lock().get(&subscription_id).cloned().unwrap_or_default()
    }

    /// How many workers are connected, over every subscription.
    pub fn count(&self) -> usize {
        self.slots.lock().values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admit(connections: &Arc<SubscriptionConnections>, id: u64, strategy: Strategy, who: &str) -> Result<AdmittedConnection, Refusal> {
        connections.admit(id, strategy, who.into(), format!("worker-{who}"))
    }

    #[test]
    fn open_if_free_is_refused_take_over_evicts_and_a_dropped_guard_frees_the_slot() {
        let connections = Arc::new(SubscriptionConnections::default());
        let first = admit(&connections, 1, Strategy::OpenIfFree, "a").unwrap();
        assert!(admit(&connections, 1, Strategy::OpenIfFree, "b").is_err());
        assert!(matches!(admit(&connections, 1, Strategy::WaitForFree, "b"), Err(Refusal::InUse { may_wait: true, .. })));
        assert!(admit(&connections, 2, Strategy::OpenIfFree, "b").is_ok());
        let taker = admit(&connections, 1, Strategy::TakeOver, "c").unwrap();
        assert_eq!(first.slot.ended(), Some(EndReason::TakenOver));
        assert!(admit(&connections, 1, Strategy::TakeOver, "d").is_err(), "a take-over is not taken over");
        drop(first);
        assert_eq!(connections.of(1).len(), 1, "the evicted worker's guard does not free the new one's slot");
        drop(taker);
        assert_eq!(connections.count(), 0);
        let again = admit(&connections, 1, Strategy::OpenIfFree, "e").unwrap();
        assert_eq!(connections.end_all(1, EndReason::Dropped), 1);
        assert_eq!(again.slot.ended(), Some(EndReason::Dropped));
        assert!(admit(&connections, 1, Strategy::OpenIfFree, "f").is_ok(), "a drop frees the slot before the worker notices");
    }

    #[test]
    fn concurrent_workers_join_each_other_and_refuse_every_other_strategy_both_ways() {
        let connections = Arc::new(SubscriptionConnections::default());
        let a = admit(&connections, 1, Strategy::Concurrent, "a").unwrap();
        let b = admit(&connections, 1, Strategy::Concurrent, "b").unwrap();
        for strategy in [Strategy::OpenIfFree, Strategy::TakeOver, Strategy::WaitForFree] {
            let refused = admit(&connections, 1, strategy, "x");
            assert!(matches!(&refused, Err(Refusal::InUse { may_wait: false, message }) if message.contains("is currently concurrent")));
        }
        assert_eq!(a.slot.ended(), None, "a TakeOver does not evict concurrent workers");
        assert!(connections.end_worker(1, "worker-b", EndReason::Dropped));
        assert_eq!(b.slot.ended(), Some(EndReason::Dropped));
        assert!(!connections.end_worker(1, "worker-b", EndReason::Dropped), "already gone");
        assert_eq!(connections.of(1).len(), 1);
        drop(a);
        let single = admit(&connections, 1, Strategy::OpenIfFree, "s").unwrap();
        let refused = admit(&connections, 1, Strategy::Concurrent, "c");
        assert!(matches!(&refused, Err(Refusal::InUse { may_wait: false, message }) if message.contains("is not concurrent")));
        drop(single);
    }

    #[test]
    fn the_database_admits_a_bounded_number_of_connections() {
        let connections = Arc::new(SubscriptionConnections::default());
        let held: Vec<_> =
            (0..MAX_CONNECTIONS_PER_DATABASE).map(|i| admit(&connections, 1, Strategy::Concurrent, &i.to_string()).unwrap()).collect();
        assert!(matches!(admit(&connections, 2, Strategy::OpenIfFree, "late"), Err(Refusal::TooManyConnections(_))));
        drop(held);
        assert!(admit(&connections, 2, Strategy::OpenIfFree, "late").is_ok());
    }
}
