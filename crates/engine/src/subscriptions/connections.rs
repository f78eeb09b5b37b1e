//! The workers connected to each subscription of a database, and RavenDB's admission rules between them
//! (`OpenIfFree`, `TakeOver`, `WaitForFree`). A connection's slot is freed the moment its connection ends
//! (its guard is dropped), because the clients reconnect at once; a drop, delete, disable or take-over
//! frees it as well and marks why, which the connection tells its client on its next check (within a
//! heartbeat). Also the live statistics of every connection, for the state and metrics endpoints.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use corvid_types::{format_date, now_nanos};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// How a worker wants to share its subscription (`SubscriptionOpeningStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Admitted only when no worker is connected (the default).
    OpenIfFree,
    /// Replaces a connected worker, unless that one took over too.
    TakeOver,
    /// Waits until no worker is connected.
    WaitForFree,
    /// Several workers sharing the batches (refused by Corvid for now).
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

/// A worker that was not admitted: another one holds the subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InUse(pub String);

/// One connected worker: who, how, and what it was sent.
#[derive(Debug)]
pub struct ConnectionSlot {
    /// The subscription it reads.
    pub subscription_id: u64,
    /// Its strategy.
    pub strategy: Strategy,
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
            "ClientUri": self.client_uri, "Strategy": self.strategy.name(), "ConnectedAt": format_date(self.connected_at),
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
    /// Admits a worker under RavenDB's rules, or says which worker holds the subscription.
    pub fn admit(self: &Arc<Self>, subscription_id: u64, strategy: Strategy, client_uri: String) -> Result<AdmittedConnection, InUse> {
        let mut slots = self.slots.lock();
        let current = slots.entry(subscription_id).or_default();
        if let Some(holder) = current.first() {
            let taking_over = strategy == Strategy::TakeOver && holder.strategy != Strategy::TakeOver;
            if !taking_over {
                return Err(InUse(format!(
                    "Subscription {subscription_id} is in use by {} (strategy {}); this worker asked for {}",
                    holder.client_uri,
                    holder.strategy.name(),
                    strategy.name()
                )));
            }
            for old in current.drain(..) {
                old.end(EndReason::TakenOver);
            }
        }
        let slot = Arc::new(ConnectionSlot {
            subscription_id,
            strategy,
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

    fn release(&self, slot: &Arc<ConnectionSlot>) {
        let mut slots = self.slots.lock();
        if let Some(current) = slots.get_mut(&slot.subscription_id) {
            current.retain(|s| !Arc::ptr_eq(s, slot));
            if current.is_empty() {
                slots.remove(&slot.subscription_id);
            }
        }
    }

    /// Ends every connection of a subscription, freeing its slots at once; how many there were.
    pub fn end_all(&self, subscription_id: u64, reason: EndReason) -> usize {
        let ended = self.slots.lock().remove(&subscription_id).unwrap_or_default();
        for slot in &ended {
            slot.end(reason);
        }
        ended.len()
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

    #[test]
    fn open_if_free_is_refused_take_over_evicts_and_a_dropped_guard_frees_the_slot() {
        let connections = Arc::new(SubscriptionConnections::default());
        let first = connections.admit(1, Strategy::OpenIfFree, "a".into()).unwrap();
        assert!(connections.admit(1, Strategy::OpenIfFree, "b".into()).is_err());
        assert!(connections.admit(1, Strategy::WaitForFree, "b".into()).is_err());
        assert!(connections.admit(2, Strategy::OpenIfFree, "b".into()).is_ok());
        let taker = connections.admit(1, Strategy::TakeOver, "c".into()).unwrap();
        assert_eq!(first.slot.ended(), Some(EndReason::TakenOver));
        assert!(connections.admit(1, Strategy::TakeOver, "d".into()).is_err(), "a take-over is not taken over");
        drop(first);
        assert_eq!(connections.of(1).len(), 1, "the evicted worker's guard does not free the new one's slot");
        drop(taker);
        assert_eq!(connections.count(), 0);
        let again = connections.admit(1, Strategy::OpenIfFree, "e".into()).unwrap();
        assert_eq!(connections.end_all(1, EndReason::Dropped), 1);
        assert_eq!(again.slot.ended(), Some(EndReason::Dropped));
        assert!(connections.admit(1, Strategy::OpenIfFree, "f".into()).is_ok(), "a drop frees the slot before the worker notices");
    }
}
