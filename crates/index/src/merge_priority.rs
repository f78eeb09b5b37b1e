//! Background segment merges run at a lower CPU priority than everything else. A merge of large segments
//! takes seconds of CPU; at normal priority it competes with the indexing threads and the requests, and under
//! a steady stream of updates that shows as seconds of write-to-visible lag. Merges only need the CPU that is
//! left over: the merge policy catches up when the machine is idle.
//!
//! Background checkpoints (`DocumentIndex::checkpoint_if_due`) lower their own thread the same way.
//!
//! tantivy names its merge threads `merge_thread_<n>` and offers no hook to set their priority, so after a
//! writer is opened every thread of the process with that name is given a higher nice value (Linux: per
//! thread). Lowering a priority needs no privilege, and doing it again is harmless.

/// Nice value of merge threads (0 is normal, 19 the lowest); at 10 a busy merge gets about a tenth of the
/// CPU share of a normal thread.
const MERGE_NICE: i32 = 10;
const MERGE_THREAD_PREFIX: &str = "merge_thread";

/// Gives every tantivy merge thread of this process [`MERGE_NICE`]. Failures (no `/proc`, a thread that
/// just ended) leave that thread at normal priority.
pub(crate) fn lower_merge_threads() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else { continue };
        if name.starts_with(MERGE_THREAD_PREFIX) {
            set_nice(tid, MERGE_NICE);
        }
    }
}

/// Gives the calling thread [`MERGE_NICE`]: background checkpoints, whose writes and fsyncs (the kernel's
/// writeback runs on the calling thread) otherwise take CPU from the indexing threads that keep up.
pub(crate) fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    set_nice(current_tid(), MERGE_NICE);
}

/// The kernel's id of the calling thread (what `setpriority` and `/proc/self/task` name threads by).
#[cfg(target_os = "linux")]
fn current_tid() -> u32 {
    // SAFETY: gettid has no arguments.
    #[allow(unsafe_code)]
    let tid = unsafe { libc::gettid() } as u32;
    tid
}

/// Lowers thread `tid` to `nice`, never raising it: a server started with a higher nice value (`nice -n 15
/// corvid serve`, as root, who may raise priorities) must not get merge threads above its own priority.
#[cfg(target_os = "linux")]
fn set_nice(tid: u32, nice: i32) {
    // SAFETY: getpriority/setpriority only read their integer arguments; on Linux PRIO_PROCESS with a thread
    // id names that one thread. errno is thread-local: it is cleared first because -1 is also a nice value.
    #[allow(unsafe_code)]
    let result = unsafe {
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if current == -1 && *libc::__errno_location() != 0 {
            -1
        } else if current >= nice {
            0
        } else {
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        }
    };
    if result != 0 {
        tracing::debug!(tid, error = %std::io::Error::last_os_error(), "could not lower a merge thread's priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn set_nice(_tid: u32, _nice: i32) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn nice_of(tid: u32) -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Fields after the parenthesised name; nice is the 19th field of the line.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    use super::current_tid;

    /// A checkpoint thread lowers itself to the merge nice value; the thread that started it keeps its own.
    #[test]
    fn a_thread_lowers_only_itself() {
        let own_before = nice_of(current_tid());
        let lowered = std::thread::spawn(|| {
            super::lower_this_thread();
            nice_of(current_tid())
        })
        .join()
        .unwrap();
        assert_eq!(lowered, i64::from(super::MERGE_NICE).max(own_before));
        assert_eq!(nice_of(current_tid()), own_before);
    }

    /// A thread named like tantivy's merge threads gets the merge nice value; other threads keep theirs.
    #[test]
    fn merge_threads_get_a_lower_priority() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let merge = std::thread::Builder::new()
            .name("merge_thread_42".into())
            .spawn(move || {
                tx.send(current_tid()).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let own = current_tid();
        let own_before = nice_of(own);
        super::lower_merge_threads();
        assert_eq!(nice_of(tid), i64::from(super::MERGE_NICE).max(own_before));
        assert_eq!(nice_of(own), own_before);
        done_tx.send(()).unwrap();
        merge.join().unwrap();
    }
}
