//! Per-database fan-out of changes. Every subscriber has a bounded queue: publishing never waits, and a
//! subscriber that falls `capacity` changes behind is marked overflowed (and counted) instead of growing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::change::Change;

/// Changes a subscriber may have waiting before it is dropped as too slow.
const DEFAULT_CAPACITY: usize = 8192;

type Wake = Box<dyn Fn() + Send + Sync>;

struct Slot {
    queue: Mutex<Queue>,
    /// Called after each change queued (the server wakes the subscriber's task).
    wake: Wake,
}

#[derive(Default)]
struct Queue {
    changes: VecDeque<Arc<Change>>,
    overflowed: bool,
}

/// The subscribers of one database.
pub struct ChangesHub {
    slots: Mutex<Vec<Arc<Slot>>>,
    capacity: usize,
    dropped: AtomicU64,
}

impl Default for ChangesHub {
    fn default() -> Self {
        ChangesHub::with_capacity(DEFAULT_CAPACITY)
    }
}

/// The subscriber fell too far behind; its changes were discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflowed;

impl ChangesHub {
    /// A hub whose subscribers may fall `capacity` changes behind.
    pub fn with_capacity(capacity: usize) -> ChangesHub {
        ChangesHub { slots: Mutex::new(Vec::new()), capacity: capacity.max(1), dropped: AtomicU64::new(0) }
    }

    /// Registers a subscriber; `wake` is called (from the publishing thread) whenever a change is queued.
    pub fn subscribe(self: &Arc<Self>, wake: impl Fn() + Send + Sync + 'static) -> Subscription {
        let slot = Arc::new(Slot { queue: Mutex::new(Queue::default()), wake: Box::new(wake) });
        self.slots.lock().push(slot.clone());
        Subscription { hub: self.clone(), slot }
    }

    /// Subscribers now attached.
    pub fn subscriber_count(&self) -> usize {
        self.slots.lock().len()
    }

    /// Subscribers dropped so far because they fell too far behind.
    pub fn dropped_subscribers(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues each change, in order, for every subscriber.
    pub fn publish_all(&self, changes: Vec<Change>) {
        for change in changes {
            self.publish(change);
        }
    }

    /// Queues `change` for every subscriber; never blocks on a subscriber.
    pub fn publish(&self, change: Change) {
        let slots = self.slots.lock().clone();
        if slots.is_empty() {
            return;
        }
        let change = Arc::new(change);
        for slot in slots {
            {
                let mut queue = slot.queue.lock();
                if queue.overflowed {
                    continue;
                }
                if queue.changes.len() >= self.capacity {
                    queue.overflowed = true;
                    queue.changes = VecDeque::new();
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                } else {
                    queue.changes.push_back(change.clone());
                }
            }
            (slot.wake)();
        }
    }
}

/// One subscriber's end; dropping it unsubscribes.
pub struct Subscription {
    hub: Arc<ChangesHub>,
    slot: Arc<Slot>,
}

impl Subscription {
    /// Changes queued and not yet taken.
    pub fn pending(&self) -> usize {
        self.slot.queue.lock().changes.len()
    }

    /// Takes every change queued so far, or `Overflowed` once the subscriber fell too far behind.
    pub fn drain(&self) -> Result<Vec<Arc<Change>>, Overflowed> {
        let mut queue = self.slot.queue.lock();
        if queue.overflowed {
            return Err(Overflowed);
        }
        Ok(queue.changes.drain(..).collect())
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.slots.lock().retain(|slot| !Arc::ptr_eq(slot, &self.slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::IndexChangeKind;

    fn index_change(n: usize) -> Change {
        Change::Index { kind: IndexChangeKind::IndexAdded, name: format!("i{n}") }
    }

    #[test]
    fn a_subscriber_gets_changes_in_order() {
        let hub = Arc::new(ChangesHub::with_capacity(10));
        let sub = hub.subscribe(|| {});
        hub.publish(index_change(1));
        hub.publish(index_change(2));
        let got: Vec<Change> = sub.drain().unwrap().iter().map(|c| (**c).clone()).collect();
        assert_eq!(got, vec![index_change(1), index_change(2)]);
        assert!(sub.drain().unwrap().is_empty());
    }

    #[test]
    fn a_stalled_subscriber_overflows_without_holding_others_back() {
        let hub = Arc::new(ChangesHub::with_capacity(3));
        let stalled = hub.subscribe(|| {});
        let live = hub.subscribe(|| {});
        for n in 0..10 {
            hub.publish(index_change(n));
            assert_eq!(live.drain().unwrap().len(), 1);
        }
        assert!(stalled.drain().is_err());
        assert_eq!(hub.dropped_subscribers(), 1);
    }

    #[test]
    fn dropping_a_subscription_unsubscribes() {
        let hub = Arc::new(ChangesHub::default());
        let sub = hub.subscribe(|| {});
        assert_eq!(hub.subscriber_count(), 1);
        drop(sub);
        assert_eq!(hub.subscriber_count(), 0);
    }
}
