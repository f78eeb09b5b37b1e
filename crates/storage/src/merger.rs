//! The transaction merger: one writer thread per database takes every write waiting at that moment, runs each
//! in a nested LMDB transaction (so one failing command rolls back alone), commits them all with a single
//! durable commit, and only then answers them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::disk_space::{self, DiskReserve};
use crate::map_growth::MapGrowth;
use crate::preallocate::Preallocator;
use crate::store::Store;
use crate::write_txn::WriteTxn;
use crate::StorageError;

/// A type-erased write: runs inside the merged transaction and says whether to keep its changes.
pub type WriteJob = Box<dyn FnOnce(&mut WriteTxn<'_>) -> Pending + Send>;

/// Delivers a job's answer; gets the commit error if the merged transaction failed.
type Finish = Box<dyn FnOnce(Option<&StorageError>) + Send>;

/// The outcome of a job, to be delivered once the merged transaction is durable (or failed).
pub struct Pending {
    succeeded: bool,
    /// A dry run: its changes are rolled back whatever its result, which is answered at once.
    dry_run: bool,
    finish: Finish,
}

/// The merger's counters, updated by its thread and read by `snapshot`.
#[derive(Default)]
pub struct MergerStats {
    commits: AtomicU64,
    merged_commands: AtomicU64,
    failed_commands: AtomicU64,
    panics: AtomicU64,
    commit_failures: AtomicU64,
    largest_batch: AtomicU64,
    commit_micros_total: AtomicU64,
    fsyncs: AtomicU64,
    queued: AtomicU64,
    last_committed_etag: AtomicU64,
    map_size: AtomicU64,
    map_resizes: AtomicU64,
    low_disk_space: AtomicBool,
    disk_full_errors: AtomicU64,
    data_file_free_bytes: AtomicU64,
}

/// The merger's counters at one moment (`/admin/metrics`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MergerStatsSnapshot {
    /// LMDB commits (each flushes its data pages once).
    pub merger_commits: u64,
    /// Disk flushes: two per fully durable commit (data pages, meta page), one per deferred commit, and one
    /// when the queue runs dry after a deferred commit. Commands per flush is the merging factor.
    pub merger_fsyncs: u64,
    /// Commands acknowledged once durable.
    pub merged_commands: u64,
    /// Commands that failed alone (e.g. concurrency conflicts) and changed nothing.
    pub failed_commands: u64,
    /// Commands that panicked (rolled back alone; the writer goes on).
    pub panics: u64,
    /// Merged commits that failed; every command in them got the error.
    pub commit_failures: u64,
    /// Most commands merged into one commit.
    pub largest_batch: u64,
    /// Mean time of a commit, in milliseconds.
    pub average_commit_ms: f64,
    /// Commands waiting for the writer now.
    pub queued_commands: u64,
    /// The last etag of the last durable commit.
    pub last_committed_etag: u64,
    /// Current size of LMDB's memory map; it starts at `--map-size-bytes` and doubles as data grows.
    pub map_size_bytes: u64,
    /// Times the memory map grew.
    pub map_resizes: u64,
    /// The disk was found full: only deletes are accepted until space returns (`disk_space.rs`).
    pub low_disk_space: bool,
    /// Commits that failed because the disk was full.
    pub disk_full_errors: u64,
    /// Pages of the data file no table uses (freed by deletes and overwrites), reused by later writes.
    pub data_file_free_bytes: u64,
}

impl MergerStats {
    /// The counters now.
    pub fn snapshot(&self) -> MergerStatsSnapshot {
        let commits = self.commits.load(Ordering::Relaxed);
        let micros = self.commit_micros_total.load(Ordering::Relaxed);
        MergerStatsSnapshot {
            merger_commits: commits,
            merger_fsyncs: self.fsyncs.load(Ordering::Relaxed),
            merged_commands: self.merged_commands.load(Ordering::Relaxed),
            failed_commands: self.failed_commands.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            commit_failures: self.commit_failures.load(Ordering::Relaxed),
            largest_batch: self.largest_batch.load(Ordering::Relaxed),
            average_commit_ms: if commits == 0 { 0.0 } else { micros as f64 / commits as f64 / 1000.0 },
            queued_commands: self.queued.load(Ordering::Relaxed),
            last_committed_etag: self.last_committed_etag.load(Ordering::Relaxed),
            map_size_bytes: self.map_size.load(Ordering::Relaxed),
            map_resizes: self.map_resizes.load(Ordering::Relaxed),
            low_disk_space: self.low_disk_space.load(Ordering::Relaxed),
            disk_full_errors: self.disk_full_errors.load(Ordering::Relaxed),
            data_file_free_bytes: self.data_file_free_bytes.load(Ordering::Relaxed),
        }
    }
}

/// One database's writer: a thread that merges queued writes into durable commits.
pub struct TransactionMerger {
    sender: Mutex<Option<SyncSender<WriteJob>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<MergerStats>,
}

/// Most commands merged into one transaction; bounds the latency of the first one.
const MAX_BATCH: usize = 4096;

impl TransactionMerger {
    /// Starts the writer thread. `on_commit` runs on it after every durable commit with the last etag.
    pub fn start(
        name: &str,
        store: Arc<Store>,
        queue_capacity: usize,
        on_commit: impl Fn(u64) + Send + 'static,
    ) -> Result<TransactionMerger, StorageError> {
        let (sender, receiver) = sync_channel(queue_capacity);
        let stats = Arc::new(MergerStats::default());
        stats.last_committed_etag.store(store.last_etag_at_open, Ordering::Relaxed);
        let thread_stats = stats.clone();
        let thread = std::thread::Builder::new()
            .name(format!("merger:{name}"))
            .spawn(move || writer_loop(&store, &receiver, &thread_stats, &on_commit))
            .map_err(|e| StorageError::WriterFailed(e.to_string()))?;
        Ok(TransactionMerger { sender: Mutex::new(Some(sender)), thread: Mutex::new(Some(thread)), stats })
    }

    /// Queues a write. `reply` gets the result after the transaction holding it is durable; a failed `op`
    /// changes nothing and is answered at once. Never blocks: a full queue is an error.
    pub fn submit<T, E>(
        &self,
        op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send + 'static,
        reply: impl FnOnce(Result<T, E>) + Send + 'static,
    ) -> Result<(), StorageError>
    where
        T: Send + 'static,
        E: From<StorageError> + Send + 'static,
    {
        let job: WriteJob = Box::new(move |txn| {
            let result = op(txn);
            Pending {
                succeeded: result.is_ok(),
                dry_run: false,
                finish: Box::new(move |commit_error| match (result, commit_error) {
                    (Ok(_), Some(e)) => reply(Err(e.for_each_writer().into())),
                    (result, _) => reply(result),
                }),
            }
        });
        self.enqueue(job)
    }

    fn enqueue(&self, job: WriteJob) -> Result<(), StorageError> {
        let guard = self.sender.lock().unwrap_or_else(|p| p.into_inner());
        let sender = guard.as_ref().ok_or(StorageError::ShuttingDown)?;
        match sender.try_send(job) {
            Ok(()) => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(TrySendError::Full(_)) => Err(StorageError::QueueFull),
            Err(TrySendError::Disconnected(_)) => Err(StorageError::ShuttingDown),
        }
    }

    /// Runs `op` in the writer's transaction and rolls its changes back whatever it returns: what a write
    /// would do, without writing (RavenDB's test patches). Waits for the answer on the calling thread.
    pub fn dry_run_blocking<T, E>(&self, op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send + 'static) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StorageError> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let job: WriteJob = Box::new(move |txn| {
            let result = op(txn);
            Pending {
                succeeded: false,
                dry_run: true,
                finish: Box::new(move |_| {
                    let _ = tx.send(result);
                }),
            }
        });
        self.enqueue(job)?;
        rx.recv().unwrap_or_else(|_| Err(StorageError::WriterFailed("the writer dropped the command".into()).into()))
    }

    /// Like `submit`, waiting for the answer on the calling thread.
    pub fn write_blocking<T, E>(&self, op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send + 'static) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StorageError> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        self.submit(op, move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().unwrap_or_else(|_| Err(StorageError::WriterFailed("the writer dropped the command".into()).into()))
    }

    /// The merger's counters now.
    pub fn stats(&self) -> MergerStatsSnapshot {
        self.stats.snapshot()
    }

    /// Stops accepting writes, finishes the queued ones, and waits for the writer thread.
    pub fn stop(&self) {
        drop(self.sender.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TransactionMerger {
    fn drop(&mut self) {
        self.stop();
    }
}

fn writer_loop(store: &Store, receiver: &Receiver<WriteJob>, stats: &MergerStats, on_commit: &dyn Fn(u64)) {
    let mut last_etag = store.last_etag_at_open;
    let mut preallocator = Preallocator::new(store);
    let mut reserve = DiskReserve::open(store.path(), store.options.disk_reserve_bytes);
    let mut map_growth = MapGrowth::new(store);
    stats.low_disk_space.store(reserve.is_low(), Ordering::Relaxed);
    stats.map_size.store(store.map_size() as u64, Ordering::Relaxed);
    record_free_pages(store, stats);
    // Committed and visible, but not yet known durable: answered after the next flush of the data file.
    let mut unacknowledged: Vec<Pending> = Vec::new();
    let mut unacknowledged_etag = last_etag;
    // Attachment contents no longer referenced by the unacknowledged commit: removed once it is durable.
    let mut unacknowledged_released: Vec<String> = Vec::new();
    loop {
        let first = if unacknowledged.is_empty() {
            match receiver.recv() {
                Ok(job) => job,
                Err(_) => break,
            }
        } else {
            match receiver.try_recv() {
                Ok(job) => job,
                Err(TryRecvError::Empty) => {
                    // Nothing to merge with: make the last commit durable now.
                    flush_and_acknowledge(store, &mut unacknowledged, unacknowledged_etag, &mut unacknowledged_released, stats);
                    continue;
                }
                Err(TryRecvError::Disconnected) => break,
            }
        };
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        stats.queued.fetch_sub(jobs.len() as u64, Ordering::Relaxed);
        stats.largest_batch.fetch_max(jobs.len() as u64, Ordering::Relaxed);
        if reserve.try_leave_low_space() {
            stats.low_disk_space.store(false, Ordering::Relaxed);
            preallocator.resume();
        }
        // No write transaction is open here (the last batch is committed or rolled back), so the map can grow.
        match map_growth.grow_if_needed(store) {
            Ok(Some(size)) => {
                stats.map_size.store(size as u64, Ordering::Relaxed);
                stats.map_resizes.fetch_add(1, Ordering::Relaxed);
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "could not grow the LMDB map"),
        }
        // More writes already waiting: commit with one flush and answer after the next commit's flush.
        // Otherwise commit fully durable (data and meta flushed) and answer at once.
        let deferred = stats.queued.load(Ordering::Relaxed) > 0;
        if let Err(e) = store.set_deferred_meta_sync(deferred) {
            tracing::error!(error = %e, "cannot switch meta-page flushing; committing fully durable");
        }
        let deferred = deferred && store.env.get_flags().is_ok_and(|f| f & heed::EnvFlags::NO_META_SYNC.bits() != 0);
        let low_space = reserve.is_low().then(|| store.path());
        match run_merged(store, &mut last_etag, jobs, low_space, stats) {
            Committed::Yes(done, released) => {
                record_free_pages(store, stats);
                // This commit flushed the data file, which also made the previous commit's meta page durable.
                // A fully durable commit flushes twice (data, then meta page).
                stats.fsyncs.fetch_add(if deferred { 1 } else { 2 }, Ordering::Relaxed);
                // Publish before answering: a client that reads after its write was acknowledged must find
                // the write counted (queries waiting for indexes use this etag as their cutoff).
                on_commit(last_etag);
                // Contents released by durable commits go before the answers, so a client never sees them.
                store.collect_blobs(&std::mem::take(&mut unacknowledged_released));
                acknowledge(std::mem::take(&mut unacknowledged), unacknowledged_etag, None, stats);
                if deferred {
                    unacknowledged = done;
                    unacknowledged_etag = last_etag;
                    unacknowledged_released = released;
                } else {
                    store.collect_blobs(&released);
                    acknowledge(done, last_etag, None, stats);
                }
            }
            Committed::Nothing => {}
            Committed::DiskFull => {
                reserve.enter_low_space();
                stats.low_disk_space.store(true, Ordering::Relaxed);
            }
        }
        // In low-space mode the space the reserve left is for deletes.
        if unacknowledged.is_empty() && !reserve.is_low() {
            preallocator.top_up(store);
        }
    }
    flush_and_acknowledge(store, &mut unacknowledged, unacknowledged_etag, &mut unacknowledged_released, stats);
}

/// Publishes how much of the data file is free pages (what deletes gave back). Merger thread only.
fn record_free_pages(store: &Store, stats: &MergerStats) {
    let Ok(page_size) = store.page_size() else { return };
    let file_bytes = (store.env.info().last_page_number as u64 + 1) * page_size;
    if let Ok(used) = store.read().and_then(|r| r.table_page_bytes()) {
        stats.data_file_free_bytes.store(file_bytes.saturating_sub(used), Ordering::Relaxed);
    }
}

fn flush_and_acknowledge(store: &Store, pending: &mut Vec<Pending>, etag: u64, released: &mut Vec<String>, stats: &MergerStats) {
    if pending.is_empty() {
        return;
    }
    let result = store.env.force_sync().map_err(|e| disk_space::classify(StorageError::from(e), store.path()));
    if result.is_ok() {
        store.collect_blobs(&std::mem::take(released));
    }
    stats.fsyncs.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = &result {
        tracing::error!(error = %e, "flushing committed writes to disk failed; they are reported as failed");
        stats.commit_failures.fetch_add(1, Ordering::Relaxed);
        if matches!(e, StorageError::DiskFull { .. }) {
            stats.disk_full_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    acknowledge(std::mem::take(pending), etag, result.err().as_ref(), stats);
}

fn acknowledge(pending: Vec<Pending>, etag: u64, error: Option<&StorageError>, stats: &MergerStats) {
    if pending.is_empty() {
        return;
    }
    if error.is_none() {
        stats.merged_commands.fetch_add(pending.len() as u64, Ordering::Relaxed);
        stats.last_committed_etag.store(etag, Ordering::Relaxed);
    }
    for p in pending {
        (p.finish)(error);
    }
}

enum Committed {
    /// Committed (visible, flushed data pages); these answers wait for the meta page to be durable.
    Yes(Vec<Pending>, Vec<String>),
    Nothing,
    /// The commit failed for lack of disk space (its writers were answered so).
    DiskFull,
}

/// Runs the jobs in one transaction and commits it.
fn run_merged(store: &Store, last_etag: &mut u64, jobs: Vec<WriteJob>, low_space: Option<&Path>, stats: &MergerStats) -> Committed {
    let durable_etag = *last_etag;
    let mut parent = match store.env.write_txn() {
        Ok(txn) => txn,
        Err(e) => {
            tracing::error!(error = %e, "cannot begin a write transaction; failing {} commands", jobs.len());
            stats.commit_failures.fetch_add(1, Ordering::Relaxed);
            return Committed::Nothing; // dropping the jobs answers each with a writer failure
        }
    };
    let mut done: Vec<Pending> = Vec::with_capacity(jobs.len());
    let mut released: Vec<String> = Vec::new();
    for job in jobs {
        let before = *last_etag;
        let child = match store.env.nested_write_txn(&mut parent) {
            Ok(child) => child,
            Err(e) => {
                tracing::error!(error = %e, "cannot begin a nested transaction");
                continue;
            }
        };
        let mut txn = WriteTxn {
            txn: child,
            tables: store.tables,
            last_etag: *last_etag,
            database_id: store.database_id(),
            released: Vec::new(),
            low_space,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| job(&mut txn)));
        let WriteTxn { txn: child, last_etag: etag_after, released: job_released, .. } = txn;
        match outcome {
            Ok(pending) if pending.succeeded => match child.commit() {
                Ok(()) => {
                    *last_etag = etag_after;
                    released.extend(job_released);
                    done.push(pending);
                }
                Err(e) => {
                    *last_etag = before;
                    stats.failed_commands.fetch_add(1, Ordering::Relaxed);
                    (pending.finish)(Some(&StorageError::from(e)));
                }
            },
            Ok(pending) => {
                child.abort();
                *last_etag = before;
                if !pending.dry_run {
                    stats.failed_commands.fetch_add(1, Ordering::Relaxed);
                }
                (pending.finish)(None);
            }
            Err(_) => {
                child.abort();
                *last_etag = before;
                stats.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!("a write command panicked; it was rolled back and the writer keeps going");
            }
        }
    }
    if done.is_empty() {
        parent.abort();
        return Committed::Nothing;
    }
    let started = Instant::now();
    match parent.commit() {
        Ok(()) => {
            stats.commit_micros_total.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            stats.commits.fetch_add(1, Ordering::Relaxed);
            Committed::Yes(done, released)
        }
        Err(e) => {
            let error = disk_space::classify(StorageError::from(e), store.path());
            tracing::error!(error = %error, "durable commit failed; {} commands fail", done.len());
            *last_etag = durable_etag;
            stats.commit_failures.fetch_add(1, Ordering::Relaxed);
            for pending in done {
                (pending.finish)(Some(&error));
            }
            if matches!(error, StorageError::DiskFull { .. }) {
                stats.disk_full_errors.fetch_add(1, Ordering::Relaxed);
                return Committed::DiskFull;
            }
            Committed::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{StorageError, Store, StoreOptions, TransactionMerger};

    #[test]
    fn a_dry_run_answers_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(Store::open(dir.path(), &StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0 }).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let seen: Result<(u64, bool), StorageError> = merger.dry_run_blocking(|txn| {
            let out = txn.put_document("users/1", "Users", "{}".into(), "{}".into(), 0, 1)?;
            Ok((out.etag, txn.document("users/1")?.is_some()))
        });
        let (etag, visible_inside) = seen.unwrap();
        assert!(visible_inside, "the dry run sees its own changes");
        assert!(store.read().unwrap().document("users/1").unwrap().is_none());
        assert_eq!(store.read().unwrap().last_etag().unwrap(), 0);
        // The etag was not consumed: the next real write gets it.
        let real = merger.write_blocking(|txn| txn.put_document("users/2", "Users", "{}".into(), "{}".into(), 0, 1)).unwrap();
        assert_eq!(real.etag, etag);
        assert_eq!(merger.stats().failed_commands, 0);
    }
}

#[cfg(test)]
mod map_growth_tests {
    use std::sync::Arc;

    use crate::{StorageError, Store, StoreOptions, TransactionMerger};

    #[test]
    fn writes_past_a_small_starting_map_grow_it() {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 1 << 20, max_readers: 16, disk_reserve_bytes: 0 };
        let store = Arc::new(Store::open(dir.path(), &options).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let body = format!("{{\"text\":\"{}\"}}", "x".repeat(64 << 10));
        for n in 0..64 {
            let body = body.clone();
            let written: Result<_, StorageError> =
                merger.write_blocking(move |txn| txn.put_document(&format!("docs/{n}"), "Docs", body, "{}".into(), 0, 1));
            written.unwrap();
        }
        let stats = merger.stats();
        assert!(stats.map_size_bytes > 4 << 20 && stats.map_resizes >= 1, "{stats:?}");
        assert!(store.read().unwrap().document("docs/63").unwrap().is_some());
    }
}
