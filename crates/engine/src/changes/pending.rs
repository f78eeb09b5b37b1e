//! Changes raised inside a write (counters: they have no etag the feeder could find them by) wait here
//! until the write is durable. A write runs on the merger's thread, so the changes it raises are gathered
//! in a thread-local list around that one write; the database publishes them once the write is
//! acknowledged, and drops them when it fails or is rolled back (a dry run raises into no list at all).

use std::cell::RefCell;

use super::change::Change;

thread_local! {
    /// The list of the write running on this thread; None outside a gathered write.
    static PENDING: RefCell<Option<Vec<Change>>> = const { RefCell::new(None) };
}

/// Records a change raised by the write running on this thread; ignored outside a gathered write.
pub(crate) fn raise(change: impl FnOnce() -> Change) {
    PENDING.with(|pending| {
        if let Some(list) = pending.borrow_mut().as_mut() {
            list.push(change());
        }
    });
}

/// Whether a write running on this thread gathers its changes (someone is listening).
pub(crate) fn gathering() -> bool {
    PENDING.with(|pending| pending.borrow().is_some())
}

/// Puts back the list of an enclosing gathered write, even when the inner one panics.
struct Restore(Option<Vec<Change>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take();
        PENDING.with(|pending| *pending.borrow_mut() = outer);
    }
}

/// Runs `write`, returning its result and the changes it raised.
pub(crate) fn gather<T>(write: impl FnOnce() -> T) -> (T, Vec<Change>) {
    let outer = PENDING.with(|pending| pending.borrow_mut().replace(Vec::new()));
    let restore = Restore(outer);
    let result = write();
    let raised = PENDING.with(|pending| pending.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (result, raised)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::IndexChangeKind;

    fn change(n: usize) -> Change {
        Change::Index { kind: IndexChangeKind::BatchCompleted, name: format!("i{n}") }
    }

    #[test]
    fn only_gathered_writes_keep_what_they_raise() {
        raise(|| change(0));
        assert!(!gathering());
        let ((), raised) = gather(|| {
            assert!(gathering());
            raise(|| change(1));
            let ((), inner) = gather(|| raise(|| change(2)));
            assert_eq!(inner, vec![change(2)]);
            raise(|| change(3));
        });
        assert_eq!(raised, vec![change(1), change(3)]);
        assert!(!gathering());
    }
}
