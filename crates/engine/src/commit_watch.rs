//! Wakes background work (indexers) after each durable commit: a watch of the last committed etag.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
pub struct CommitWatch {
    etag: Mutex<u64>,
    changed: Condvar,
}

impl CommitWatch {
    pub fn new(etag: u64) -> CommitWatch {
        CommitWatch { etag: Mutex::new(etag), changed: Condvar::new() }
    }

    pub fn publish(&self, etag: u64) {
        let mut current = self.etag.lock();
        if etag > *current {
            *current = etag;
        }
        self.changed.notify_all();
    }

    pub fn current(&self) -> u64 {
        *self.etag.lock()
    }

    /// Waits until the committed etag exceeds `seen` or `timeout` passes; returns the current etag.
    pub fn wait_beyond(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut current = self.etag.lock();
        while *current <= seen {
            if self.changed.wait_until(&mut current, deadline).timed_out() {
                break;
            }
        }
        *current
    }

    /// Wakes every waiter without a new commit (used at shutdown).
    pub fn wake_all(&self) {
        self.changed.notify_all();
    }
}
