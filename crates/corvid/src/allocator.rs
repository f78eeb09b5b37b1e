//! The allocator's settings for a server. mimalloc keeps pages freed by a thread for that thread's next
//! allocations and returns them to the OS only after a delay (10 ms) and only when the thread allocates
//! again; with hundreds of request threads, memory freed after a burst stayed resident (a 256 MB budget
//! run peaked at 466 MB of anonymous memory, 266 MB with immediate purging). The memory budget
//! (`memory_budget.rs` in the server crate) counts on freed memory going back.

/// mimalloc's `mi_option_purge_delay` (its `mimalloc.h`, v3).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Purge freed pages at once, unless `MIMALLOC_PURGE_DELAY` was set by whoever started the server.
#[allow(unsafe_code)] // one FFI call to the allocator's option setter
pub fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets an integer option of the allocator this binary links; mimalloc reads it at each purge
    // decision and documents changing it at run time.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
}
