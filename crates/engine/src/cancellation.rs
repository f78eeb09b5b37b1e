//! A request's cancellation: set when the client that asked for the work has gone away, checked by the work
//! between steps (each result of a query, each wait for an index) and by its JavaScript sandbox.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::EngineError;

/// A shared flag: clones see the same cancellation.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(Arc<AtomicBool>);

impl Cancellation {
    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Cancelled)` once cancelled: work stops at its next check.
    pub fn check(&self) -> Result<(), EngineError> {
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The flag itself, for a JavaScript sandbox to watch.
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// A guard that cancels when dropped unless disarmed: held by the request that waits for the work, so
    /// the work stops when that request is dropped (its connection closed) before the work ended.
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop { cancellation: Some(self.clone()) }
    }
}

/// A guard held by a request: dropping it before `disarm` cancels the work.
pub struct CancelOnDrop {
    cancellation: Option<Cancellation>,
}

impl CancelOnDrop {
    /// The work finished: dropping the guard no longer cancels anything.
    pub fn disarm(mut self) {
        self.cancellation = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &self.cancellation {
            c.cancel();
        }
    }
}
