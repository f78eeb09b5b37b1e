//! Native functions a script can call back into (`load()`, `put()`, `del()` of patches). The host lives on
//! the caller's stack — a patch's host borrows the open write transaction — so it is reached through a
//! thread-local pointer that is set only for the duration of one call.

use std::cell::Cell;
use std::ptr::NonNull;

/// What a script can ask of its caller. `op` names the function, `arguments_json` is a JSON array; the
/// answer is JSON text, or an error message the script sees as a thrown `Error`.
pub trait Host {
    fn call(&mut self, op: &str, arguments_json: &str) -> Result<String, String>;
}

thread_local! {
    static CURRENT: Cell<Option<NonNull<dyn Host + 'static>>> = const { Cell::new(None) };
}

/// Restores the previous host when a call ends, even by panic.
struct Restore(Option<NonNull<dyn Host + 'static>>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// Runs `f` with `host` reachable from scripts on this thread.
pub(crate) fn with_host<R>(host: &mut dyn Host, f: impl FnOnce() -> R) -> R {
    let pointer: NonNull<dyn Host + '_> = NonNull::from(host);
    // SAFETY: only the lifetime bound of the trait object is erased. The pointer is published for the
    // duration of `f` only (`Restore` clears it before `host`'s borrow ends), and `dispatch` takes it out
    // while using it, so no two `&mut` to the host ever exist.
    #[allow(unsafe_code)]
    let pointer: NonNull<dyn Host + 'static> = unsafe { std::mem::transmute(pointer) };
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(pointer))));
    f()
}

/// Called by the native `__corvid_host` function.
pub(crate) fn dispatch(op: &str, arguments_json: &str) -> Result<String, String> {
    let Some(mut pointer) = CURRENT.with(|c| c.take()) else {
        return Err(format!("{op}() is not available here"));
    };
    let _restore = Restore(Some(pointer));
    // SAFETY: the pointer was published by `with_host`, whose borrow is still live (we are inside `f`),
    // and it was taken out of the slot, so this is the only reference.
    #[allow(unsafe_code)]
    let host = unsafe { pointer.as_mut() };
    host.call(op, arguments_json)
}
