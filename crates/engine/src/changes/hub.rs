//! Per-database fan-out of changes. Every subscriber has a bounded queue: publishing never waits, and a
//! subscriber that falls `capacity` changes behind is marked overflowed (and counted) instead of growing.
//! A change is queued once for all subscribers (one `Arc`), with a slot for the server's rendering of it,
//! so a hundred subscribers cost one rendering, not a hundred.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::change::Change;

/// Changes a subscriber may have waiting before it is dropped as too slow. A queued change is one pointer
/// (the change itself is shared by every subscriber), so the bound is set by what a client may fall behind,
/// not by memory: one commit of a bulk insert publishes 8,192 changes at once, and two may be in flight.
const DEFAULT_CAPACITY: usize = 32_768;

type Wake = Box<dyn Fn() + Send + Sync>;

struct Slot {
    queue: Mutex<Queue>,
    /// Called after each change queued (the server wakes the subscriber's task).
    wake: Wake,
}

#[derive(Default)]
struct Queue {
    changes: VecDeque<Arc<Published>>,
    overflowed: bool,
}

/// A change as queued for every subscriber.
pub struct Published {
    /// What changed.
    pub change: Change,
    /// The wire form, made by the first subscriber that sends it (None: not sent, e.g. an operation gone).
    rendered: OnceLock<Option<String>>,
}

impl Published {
    /// The change's wire form, rendered by `render` the first time any subscriber asks.
    pub fn rendered(&self, render: impl FnOnce(&Change) -> Option<String>) -> Option<&str> {
        self.rendered.get_or_init(|| render(&self.change)).as_deref()
    }
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

    /// Queues each change, in order, for every subscriber: each subscriber's queue is locked and its task
    /// woken once per call, not once per change.
    pub fn publish_all(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        let slots = self.slots.lock().clone();
        if slots.is_empty() {
            return;
        }
        let published: Vec<Arc<Published>> =
            changes.into_iter().map(|change| Arc::new(Published { change, rendered: OnceLock::new() })).collect();
        for slot in slots {
            {
                let mut queue = slot.queue.lock();
                if queue.overflowed {
                    continue;
                }
                if queue.changes.len() + published.len() > self.capacity {
                    queue.overflowed = true;
                    queue.changes = VecDeque::new();
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                } else {
                    queue.changes.extend(published.iter().cloned());
                }
            }
            (slot.wake)();
        }
    }

    /// Queues `change` for every subscriber; never blocks on a subscriber.
    pub fn publish(&self, change: Change) {
        self.publish_all(vec![change]);
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
    pub fn drain(&self) -> Result<Vec<Arc<Published>>, Overflowed> {
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
        let got: Vec<Change> = sub.drain().unwrap().iter().map(|p| p.change.clone()).collect();
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
    fn a_change_is_queued_once_and_rendered_once() {
        let hub = Arc::new(ChangesHub::with_capacity(10));
        let (a, b) = (hub.subscribe(|| {}), hub.subscribe(|| {}));
        hub.publish_all(vec![index_change(1), index_change(2)]);
        let (from_a, from_b) = (a.drain().unwrap(), b.drain().unwrap());
        assert!(Arc::ptr_eq(&from_a[1], &from_b[1]));
        let renders = std::cell::Cell::new(0);
        for published in [&from_a[0], &from_b[0]] {
            let text = published.rendered(|_| {
                renders.set(renders.get() + 1);
                Some("x".to_owned())
            });
            assert_eq!(text, Some("x"));
        }
        assert_eq!(renders.get(), 1);
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
