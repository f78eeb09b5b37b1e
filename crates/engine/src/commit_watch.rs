//! Wakes background work (indexers) after each durable commit: a watch of the last committed etag.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
pub struct CommitWatch {
    /// (last committed etag, number of `wake_all` calls)
    etag: Mutex<(u64, u64)>,
    changed: Condvar,
}

impl CommitWatch {
    pub fn new(etag: u64) -> CommitWatch {
        CommitWatch { etag: Mutex::new((etag, 0)), changed: Condvar::new() }
    }

    pub fn publish(&self, etag: u64) {
        let mut current = self.etag.lock();
        if etag > current.0 {
            current.0 = etag;
        }
        self.changed.notify_all();
    }

    pub fn current(&self) -> u64 {
        self.etag.lock().0
    }

    /// Waits until the committed etag exceeds `seen`, `wake_all` is called, or `timeout` passes; returns the
    /// current etag.
    pub fn wait_beyond(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut current = self.etag.lock();
        let wakes = current.1;
        while current.0 <= seen && current.1 == wakes {
            if self.changed.wait_until(&mut current, deadline).timed_out() {
                break;
            }
        }
        current.0
    }

    /// Wakes every waiter without a new commit (stopping an index, shutdown).
    pub fn wake_all(&self) {
        self.etag.lock().1 += 1;
        self.changed.notify_all();
    }
}
