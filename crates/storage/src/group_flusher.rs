//! The flusher: a thread per database that makes merged commits durable. The merger writes each commit's
//! journal record, commits it to LMDB and hands it here; while this thread waits for one `fdatasync`, the
//! merger builds and applies the next groups, and the next flush covers every record written meanwhile (the
//! pipelined group commit). Commits are acknowledged in journal order, each only after a flush that started
//! after its record was written.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use corvid_types::io_metrics::{IoKind, IoMetrics};

use crate::journal_file;
use crate::merger_stats::MergerStats;
use crate::store::Store;
use crate::StorageError;

/// Delivers a job's answer; gets the commit error if the merged transaction failed.
pub(crate) type Finish = Box<dyn FnOnce(Option<&StorageError>) + Send>;

/// The outcome of a job, to be delivered once the merged transaction is durable (or failed).
pub struct Pending {
    pub(crate) succeeded: bool,
    /// A dry run: its changes are rolled back whatever its result, which is answered at once.
    pub(crate) dry_run: bool,
    pub(crate) finish: Finish,
}

/// One merged commit waiting for its journal record to be durable.
pub(crate) struct FlushGroup {
    pub file: Arc<File>,
    pub path: PathBuf,
    pub pending: Vec<Pending>,
    /// The last etag of the commit.
    pub etag: u64,
    /// Attachment contents whose last reference the commit removed: deleted once it is durable.
    pub released: Vec<String>,
    /// The size of the commit's journal record.
    pub bytes: u64,
    /// The journal file's size.
    pub file_size: u64,
}

/// The flusher thread of one database.
pub(crate) struct GroupFlusher {
    sender: Option<Sender<FlushGroup>>,
    thread: Option<JoinHandle<()>>,
    failed: Arc<AtomicBool>,
    stats: Arc<MergerStats>,
}

impl GroupFlusher {
    /// Starts the thread. `on_commit` runs on it with the last etag of every flush, before the answers.
    pub fn start(
        name: &str,
        store: Arc<Store>,
        stats: Arc<MergerStats>,
        on_commit: Box<dyn Fn(u64) + Send>,
    ) -> Result<GroupFlusher, StorageError> {
        let (sender, receiver) = channel();
        let failed = Arc::new(AtomicBool::new(false));
        let (thread_failed, thread_stats) = (failed.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name(format!("flusher:{name}"))
            .spawn(move || flush_loop(&store, &receiver, &thread_stats, &*on_commit, &thread_failed))
            .map_err(|e| StorageError::WriterFailed(e.to_string()))?;
        Ok(GroupFlusher { sender: Some(sender), thread: Some(thread), failed, stats })
    }

    /// Queues a written and committed group for the next flush.
    pub fn send(&self, group: FlushGroup) {
        self.stats.flush_queue_depth.fetch_add(1, Ordering::Relaxed);
        if let Some(Err(unsent)) = self.sender.as_ref().map(|s| s.send(group)) {
            let error = StorageError::WriterFailed("the journal flusher stopped".into());
            self.stats.flush_queue_depth.fetch_sub(1, Ordering::Relaxed);
            acknowledge(unsent.0.pending, 0, Some(&error), &self.stats);
        }
    }

    /// Whether a flush or a journal write failed: from then on no write is accepted until the database is
    /// opened again (and recovered), as what reached the disk is unknown.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn mark_failed(&self) {
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Flushes and answers everything queued, then stops the thread.
    pub fn finish(&mut self) {
        drop(self.sender.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for GroupFlusher {
    fn drop(&mut self) {
        self.finish();
    }
}

fn flush_loop(store: &Store, receiver: &Receiver<FlushGroup>, stats: &MergerStats, on_commit: &dyn Fn(u64), failed: &AtomicBool) {
    while let Ok(first) = receiver.recv() {
        let mut groups = vec![first];
        groups.extend(receiver.try_iter());
        let started = Instant::now();
        let result = if failed.load(Ordering::SeqCst) {
            Err(StorageError::WriterFailed("an earlier journal flush failed; the database must be reopened".into()))
        } else {
            flush_files(store, &groups, stats)
        };
        stats.flush_latency.record(started.elapsed());
        stats.journal_flushes.fetch_add(1, Ordering::Relaxed);
        stats.flush_queue_depth.fetch_sub(groups.len() as u64, Ordering::Relaxed);
        let error = result.err().map(|e| crate::disk_space::classify(e, store.path()));
        if let Some(e) = &error {
            tracing::error!(error = %e, "flushing the journal failed; its commits are reported as failed and writes stop");
            failed.store(true, Ordering::SeqCst);
            stats.commit_failures.fetch_add(1, Ordering::Relaxed);
        } else {
            // Publish before answering: a client that reads after its write was acknowledged must find the
            // write counted (queries waiting for indexes use this etag as their cutoff).
            on_commit(groups.last().map_or(0, |g| g.etag));
            let released: Vec<String> = groups.iter_mut().flat_map(|g| std::mem::take(&mut g.released)).collect();
            store.collect_blobs(&released);
        }
        for group in groups {
            acknowledge(group.pending, group.etag, error.as_ref(), stats);
        }
    }
}

/// `fdatasync` of every file the groups were written to, in journal order, each once.
fn flush_files(store: &Store, groups: &[FlushGroup], stats: &MergerStats) -> Result<(), StorageError> {
    let mut flushed: Vec<*const File> = Vec::with_capacity(2);
    for group in groups {
        let file = Arc::as_ptr(&group.file);
        if !flushed.contains(&file) {
            let bytes = groups.iter().filter(|g| Arc::as_ptr(&g.file) == file).map(|g| g.bytes).sum();
            let timer = IoMetrics::start();
            journal_file::sync(&group.file, &group.path)?;
            store.record_io(timer, &group.path, IoKind::JournalSync, bytes, group.file_size);
            stats.fsyncs.fetch_add(1, Ordering::Relaxed);
            flushed.push(file);
        }
    }
    Ok(())
}

/// Answers the jobs of one commit.
pub(crate) fn acknowledge(pending: Vec<Pending>, etag: u64, error: Option<&StorageError>, stats: &MergerStats) {
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
