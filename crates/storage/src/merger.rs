//! The transaction merger: one writer thread per database takes every write waiting at that moment, runs each
//! in a nested LMDB transaction (so one failing command rolls back alone), writes the merged commit's journal
//! record, commits it to LMDB without a flush and hands it to the flusher (`group_flusher.rs`), which
//! answers it once the record is durable. Checkpoints (`checkpoint.rs`) run between commits.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use corvid_types::io_metrics::{IoKind, IoMetrics};

use crate::checkpoint::{Checkpointer, CHECKPOINT_INTERVAL};
use crate::disk_space::{self, DiskReserve};
use crate::group_flusher::{FlushGroup, GroupFlusher, Pending};
use crate::journal::Journal;
use crate::journal_record::OpBuffer;
use crate::journaled_txn::JournaledTxn;
use crate::map_growth::MapGrowth;
use crate::merger_stats::{MergerStats, MergerStatsSnapshot};
use crate::preallocate::Preallocator;
use crate::store::Store;
use crate::write_txn::WriteTxn;
use crate::StorageError;

/// A type-erased write: runs inside the merged transaction and says whether to keep its changes.
pub type WriteJob = Box<dyn FnOnce(&mut WriteTxn<'_>) -> Pending + Send>;

/// One database's writer: a thread that merges queued writes into durable commits.
pub struct TransactionMerger {
    sender: Mutex<Option<SyncSender<WriteJob>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<MergerStats>,
    /// Asks the writer for a checkpoint before its next batch (tests).
    #[cfg_attr(not(test), allow(dead_code))]
    checkpoint_requested: Arc<AtomicBool>,
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
        let mut flusher = GroupFlusher::start(name, store.clone(), stats.clone(), Box::new(on_commit))?;
        let checkpoint_requested = Arc::new(AtomicBool::new(false));
        let (thread_stats, requested) = (stats.clone(), checkpoint_requested.clone());
        let thread = std::thread::Builder::new()
            .name(format!("merger:{name}"))
            .spawn(move || {
                let journal = store.journal.lock().take();
                match journal {
                    Some(mut journal) => {
                        writer_loop(&store, &mut journal, &receiver, &thread_stats, &mut flusher, &requested);
                        *store.journal.lock() = Some(journal);
                    }
                    // Dropping the jobs answers each with a writer failure.
                    None => tracing::error!("the database's journal is held by another writer; refusing writes"),
                }
            })
            .map_err(|e| StorageError::WriterFailed(e.to_string()))?;
        Ok(TransactionMerger { sender: Mutex::new(Some(sender)), thread: Mutex::new(Some(thread)), stats, checkpoint_requested })
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

    /// Makes the writer checkpoint, then runs an empty write and waits for it (tests).
    #[cfg(test)]
    pub(crate) fn checkpoint_blocking(&self) {
        self.checkpoint_requested.store(true, Ordering::SeqCst);
        let done: Result<(), StorageError> = self.write_blocking(|_| Ok(()));
        done.unwrap();
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

fn writer_loop(
    store: &Store,
    journal: &mut Journal,
    receiver: &Receiver<WriteJob>,
    stats: &MergerStats,
    flusher: &mut GroupFlusher,
    checkpoint_requested: &AtomicBool,
) {
    let mut checkpointer = match Checkpointer::new(store) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot protect the last checkpoint; refusing writes");
            return;
        }
    };
    let mut last_etag = store.last_etag_at_open;
    let mut preallocator = Preallocator::new(store);
    let mut reserve = DiskReserve::open(store.path(), store.options.disk_reserve_bytes);
    let mut map_growth = MapGrowth::new(store);
    stats.low_disk_space.store(reserve.is_low(), Ordering::Relaxed);
    stats.map_size.store(store.map_size() as u64, Ordering::Relaxed);
    record_free_pages(store, stats);
    loop {
        let first = match receiver.recv_timeout(CHECKPOINT_INTERVAL) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                // Idle: a checkpoint keeps the replay after a crash short.
                finish_checkpoint(&mut checkpointer, journal, stats, true);
                if checkpointer.due(journal) {
                    checkpoint(&mut checkpointer, journal, stats);
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
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
        if checkpoint_requested.swap(false, Ordering::SeqCst) {
            checkpoint(&mut checkpointer, journal, stats);
        }
        if reserve.try_leave_low_space() {
            stats.low_disk_space.store(false, Ordering::Relaxed);
            preallocator.resume();
        }
        // No write transaction is open here (the last batch is committed or rolled back), so the map can grow;
        // the merger's own reader on the checkpoint is let go meanwhile (after a checkpoint, see checkpoint.rs).
        if map_growth.wanted(store) {
            match checkpointer.without_protection(journal, || map_growth.grow_if_needed(store)) {
                Ok(Ok(Some(size))) => {
                    stats.map_size.store(size as u64, Ordering::Relaxed);
                    stats.map_resizes.fetch_add(1, Ordering::Relaxed);
                    stats.checkpoints.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) | Err(e) => tracing::error!(error = %e, "could not grow the LMDB map"),
            }
        }
        if flusher.failed() {
            let error = StorageError::WriterFailed("the journal could not be flushed; the database must be reopened".into());
            for job in jobs {
                fail_job(job, &error);
            }
            continue;
        }
        let low_space = reserve.is_low().then(|| store.path());
        match run_merged(store, journal, &mut last_etag, jobs, low_space, stats, flusher) {
            Committed::Yes(group) => {
                record_free_pages(store, stats);
                flusher.send(group);
            }
            Committed::Nothing => {}
            Committed::DiskFull => {
                reserve.enter_low_space();
                stats.low_disk_space.store(true, Ordering::Relaxed);
            }
        }
        stats.journal_bytes.store(journal.bytes_written, Ordering::Relaxed);
        stats.journal_bytes_since_checkpoint.store(journal.bytes_since_checkpoint(), Ordering::Relaxed);
        finish_checkpoint(&mut checkpointer, journal, stats, false);
        if checkpointer.due(journal) {
            if let Err(e) = checkpointer.start(journal) {
                tracing::error!(error = %e, "cannot start a checkpoint");
            }
        }
        // In low-space mode the space the reserve left is for deletes.
        if stats.queued.load(Ordering::Relaxed) == 0 && !reserve.is_low() {
            preallocator.top_up(store);
        }
    }
    // Every answer first, then a last checkpoint: the next opening replays nothing.
    flusher.finish();
    checkpoint(&mut checkpointer, journal, stats);
}

/// Refuses a job without running it: dropping it drops its reply, which answers its writer with a failure.
fn fail_job(job: WriteJob, error: &StorageError) {
    drop(job);
    tracing::debug!(error = %error, "a write was refused");
}

/// Finishes the checkpoint in progress if its data-file flush is done (or waits for it).
fn finish_checkpoint(checkpointer: &mut Checkpointer<'_>, journal: &mut Journal, stats: &MergerStats, wait: bool) {
    match checkpointer.finish(journal, wait) {
        Ok(true) => {
            stats.checkpoints.fetch_add(1, Ordering::Relaxed);
            stats.fsyncs.fetch_add(2, Ordering::Relaxed);
        }
        Ok(false) => {}
        Err(e) => tracing::error!(error = %e, "checkpoint failed; the journal keeps growing until one succeeds"),
    }
    stats.journal_bytes_since_checkpoint.store(journal.bytes_since_checkpoint(), Ordering::Relaxed);
}

/// A whole checkpoint, waited for.
fn checkpoint(checkpointer: &mut Checkpointer<'_>, journal: &mut Journal, stats: &MergerStats) {
    match checkpointer.checkpoint(journal) {
        Ok(()) => {
            stats.checkpoints.fetch_add(1, Ordering::Relaxed);
            stats.fsyncs.fetch_add(2, Ordering::Relaxed);
        }
        Err(e) => tracing::error!(error = %e, "checkpoint failed; the journal keeps growing until one succeeds"),
    }
    stats.journal_bytes_since_checkpoint.store(journal.bytes_since_checkpoint(), Ordering::Relaxed);
}

/// Publishes how much of the data file is free pages (what deletes gave back). Merger thread only.
fn record_free_pages(store: &Store, stats: &MergerStats) {
    let Ok(page_size) = store.page_size() else { return };
    let file_bytes = (store.env.info().last_page_number as u64 + 1) * page_size;
    if let Ok(used) = store.read().and_then(|r| r.table_page_bytes()) {
        stats.data_file_free_bytes.store(file_bytes.saturating_sub(used), Ordering::Relaxed);
    }
}

enum Committed {
    /// Committed (visible) and its journal record written; the answers wait for the record's flush.
    Yes(FlushGroup),
    Nothing,
    /// The commit failed for lack of disk space (its writers were answered so).
    DiskFull,
}

/// Runs the jobs in one transaction, writes its journal record and commits it.
fn run_merged(
    store: &Store,
    journal: &mut Journal,
    last_etag: &mut u64,
    jobs: Vec<WriteJob>,
    low_space: Option<&Path>,
    stats: &MergerStats,
    flusher: &GroupFlusher,
) -> Committed {
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
    let mut ops = OpBuffer::default();
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
            txn: JournaledTxn::new(child),
            tables: store.tables,
            last_etag: *last_etag,
            database_id: store.database_id(),
            released: Vec::new(),
            low_space,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| job(&mut txn)));
        let WriteTxn { txn: journaled, last_etag: etag_after, released: job_released, .. } = txn;
        let (child, job_ops) = journaled.into_parts();
        match outcome {
            Ok(pending) if pending.succeeded => match child.commit() {
                Ok(()) => {
                    *last_etag = etag_after;
                    released.extend(job_released);
                    ops.append(&job_ops);
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
    // The record goes first: a process crash right after the commit (which readers may already see) still
    // finds it in the journal. Without a record, the commit does not happen.
    let written_before = journal.bytes_written;
    let timer = IoMetrics::start();
    let appended = match journal.append_transaction(&ops) {
        Ok(appended) => appended,
        Err(e) => {
            parent.abort();
            return fail_commit(store, last_etag, durable_etag, done, e, stats);
        }
    };
    let bytes = journal.bytes_written - written_before;
    store.record_io(timer, &appended.path, IoKind::JournalWrite, bytes, appended.capacity);
    let timer = IoMetrics::start();
    match parent.commit() {
        Ok(()) => {
            store.record_io(timer, Path::new(crate::tables::DATA_FILE), IoKind::DataFlush, 0, 0);
            stats.commit_micros_total.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            stats.commits.fetch_add(1, Ordering::Relaxed);
            Committed::Yes(FlushGroup {
                file: appended.file,
                path: appended.path,
                pending: done,
                etag: *last_etag,
                released,
                bytes,
                file_size: appended.capacity,
            })
        }
        Err(e) => {
            if let Err(discard) = journal.discard_last() {
                tracing::error!(error = %discard, "cannot take back the journal record of a failed commit; writes stop");
                flusher.mark_failed();
            }
            fail_commit(store, last_etag, durable_etag, done, e.into(), stats)
        }
    }
}

/// Answers every job of a commit that did not happen with its error.
fn fail_commit(
    store: &Store,
    last_etag: &mut u64,
    durable_etag: u64,
    done: Vec<Pending>,
    e: StorageError,
    stats: &MergerStats,
) -> Committed {
    let error = disk_space::classify(e, store.path());
    tracing::error!(error = %error, "merged commit failed; {} commands fail", done.len());
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{StorageError, Store, StoreOptions, TransactionMerger};

    #[test]
    fn a_dry_run_answers_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            Store::open(dir.path(), &StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() })
                .unwrap(),
        );
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
        let options = StoreOptions { map_size: 1 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() };
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
