//! Lets the merger grow LMDB's memory map: `mdb_env_set_mapsize` remaps the file, so no transaction of this
//! process may be open meanwhile. Every read transaction holds a [`ReaderPass`]; the merger (whose own write
//! transaction is closed then) closes the gate, waits a short while for the open passes to end, and gives up
//! rather than wait for a long reader (a streaming query holds its snapshot for its whole response).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
pub(crate) struct ReaderGate {
    open_passes: AtomicUsize,
    closed: AtomicBool,
}

/// Held by a read transaction for its whole life.
pub(crate) struct ReaderPass<'g> {
    gate: &'g ReaderGate,
}

impl Drop for ReaderPass<'_> {
    fn drop(&mut self) {
        self.gate.open_passes.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ReaderGate {
    /// Waits while the map is being resized (a few milliseconds), then lets a reader in.
    pub fn enter(&self) -> ReaderPass<'_> {
        loop {
            if self.closed.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            self.open_passes.fetch_add(1, Ordering::SeqCst);
            // Checked again after counting in: the closer either sees this pass or this reader sees it closed.
            if !self.closed.load(Ordering::SeqCst) {
                return ReaderPass { gate: self };
            }
            self.open_passes.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Runs `f` with no reader inside, if every open reader leaves within `patience`; otherwise `None`.
    /// Only the merger thread calls this, between its transactions.
    pub fn exclusive<T>(&self, patience: Duration, f: impl FnOnce() -> T) -> Option<T> {
        self.closed.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + patience;
        let result = loop {
            if self.open_passes.load(Ordering::SeqCst) == 0 {
                break Some(f());
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        self.closed.store(false, Ordering::SeqCst);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_waits_for_readers_and_gives_up_on_long_ones() {
        let gate = ReaderGate::default();
        let pass = gate.enter();
        assert_eq!(gate.exclusive(Duration::from_millis(5), || 1), None);
        drop(pass);
        assert_eq!(gate.exclusive(Duration::from_millis(5), || 2), Some(2));
        let _again = gate.enter();
    }
}
