//! What each indexing batch cost: documents read, mapped and written, the time of each stage, memory and
//! why the batch ended. The worker fills a [`BatchTimer`] while it runs a batch; every index keeps its last
//! [`KEPT_BATCHES`] in a [`PerformanceHistory`] for `/indexes/performance` (RavenDB's IndexPerformanceStats).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Batches an index keeps (the oldest go first): a few minutes of a busy index, enough for the Studio's graph.
pub const KEPT_BATCHES: usize = 256;

/// Why a batch ended (RavenDB's `BatchCompleteReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every document and tombstone up to the snapshot's last etag was read.
    NoMoreDocuments,
    /// The batch reached its document count (the catch-up or keep-up batch size).
    DocumentCount(usize),
    /// The documents read reached the batch's byte limit.
    DocumentBytes(usize),
    /// The index was stopped, deleted or errored while mapping: the batch was dropped.
    Interrupted,
}

impl BatchEnd {
    /// The reason as the performance stats say it.
    pub fn describe(&self) -> String {
        match self {
            BatchEnd::NoMoreDocuments => "No more documents to index".to_owned(),
            BatchEnd::DocumentCount(n) => format!("Reached the batch size of {n} documents"),
            BatchEnd::DocumentBytes(n) => format!("Reached the batch's limit of {} MB of documents", n >> 20),
            BatchEnd::Interrupted => "Interrupted: the index was stopped, deleted or errored; the batch was dropped".to_owned(),
        }
    }
}

/// One finished batch of one index.
#[derive(Debug, Clone)]
pub struct BatchPerformance {
    /// Numbered from 1 per index since its worker started.
    pub id: u64,
    /// When the batch started, nanoseconds since the Unix epoch.
    pub started: i64,
    /// How long the whole batch took.
    pub duration: Duration,
    /// Documents read from storage (including documents re-read because a document they load changed).
    pub documents_read: u64,
    /// Tombstones read from storage.
    pub tombstones_read: u64,
    /// Documents mapped without error.
    pub mapped: u64,
    /// Documents whose map (or parse) failed.
    pub map_errors: u64,
    /// Reduce keys re-reduced (map-reduce indexes).
    pub reduced_keys: u64,
    /// Reduce keys whose reduce failed.
    pub reduce_errors: u64,
    /// Entries written to the index (upserts and deletes; reduce results for map-reduce indexes).
    pub entries_written: u64,
    /// Bytes of the documents read.
    pub documents_bytes: u64,
    /// Reading documents and tombstones from the snapshot.
    pub read: Duration,
    /// Mapping documents (for map indexes it includes handing entries to tantivy, which overlaps).
    pub map: Duration,
    /// Re-reducing the touched keys (map-reduce indexes).
    pub reduce: Duration,
    /// Committing: the tantivy commit, or the map-reduce store's durable commit.
    pub commit: Duration,
    /// Merging reduce results into the results index (static map-reduce indexes); tantivy's segment merges
    /// run on their own threads, outside batches.
    pub merge: Duration,
    /// The process's resident memory when the batch ended.
    pub process_resident_bytes: u64,
    /// Bytes of recent index segments held in memory until the next checkpoint.
    pub index_memory_bytes: u64,
    /// Why the batch ended.
    pub end: BatchEnd,
    /// The etag the batch indexed up to.
    pub cut: u64,
}

/// Measures one batch while the worker runs it.
pub struct BatchTimer {
    start: Instant,
    started: i64,
    /// What is measured so far; `finish` completes it.
    pub stats: BatchPerformance,
}

impl BatchTimer {
    /// Starts measuring a batch now.
    pub fn start() -> BatchTimer {
        let started = corvid_types::now_nanos();
        BatchTimer {
            start: Instant::now(),
            started,
            stats: BatchPerformance {
                id: 0,
                started,
                duration: Duration::ZERO,
                documents_read: 0,
                tombstones_read: 0,
                mapped: 0,
                map_errors: 0,
                reduced_keys: 0,
                reduce_errors: 0,
                entries_written: 0,
                documents_bytes: 0,
                read: Duration::ZERO,
                map: Duration::ZERO,
                reduce: Duration::ZERO,
                commit: Duration::ZERO,
                merge: Duration::ZERO,
                process_resident_bytes: 0,
                index_memory_bytes: 0,
                end: BatchEnd::NoMoreDocuments,
                cut: 0,
            },
        }
    }

    /// The batch as it ended.
    pub fn finish(mut self, index_memory_bytes: u64) -> BatchPerformance {
        self.stats.started = self.started;
        self.stats.duration = self.start.elapsed();
        self.stats.index_memory_bytes = index_memory_bytes;
        self.stats.process_resident_bytes = process_resident_bytes();
        self.stats
    }
}

/// The process's resident set size (`VmRSS` of `/proc/self/status`; 0 where it cannot be read).
pub fn process_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The last batches of one index, newest last.
#[derive(Default)]
pub struct PerformanceHistory {
    batches: Mutex<VecDeque<Arc<BatchPerformance>>>,
    next_id: Mutex<u64>,
}

impl PerformanceHistory {
    /// Keeps a finished batch, numbering it, and drops the oldest past [`KEPT_BATCHES`].
    pub fn record(&self, mut batch: BatchPerformance) {
        let mut next = self.next_id.lock();
        *next += 1;
        batch.id = *next;
        let mut batches = self.batches.lock();
        if batches.len() >= KEPT_BATCHES {
            batches.pop_front();
        }
        batches.push_back(Arc::new(batch));
    }

    /// The kept batches with an id above `after`, oldest first.
    pub fn since(&self, after: u64) -> Vec<Arc<BatchPerformance>> {
        self.batches.lock().iter().filter(|b| b.id > after).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_the_last_batches_numbered() {
        let history = PerformanceHistory::default();
        for _ in 0..KEPT_BATCHES + 3 {
            history.record(BatchTimer::start().finish(0));
        }
        let kept = history.since(0);
        assert_eq!(kept.len(), KEPT_BATCHES);
        assert_eq!(kept.first().map(|b| b.id), Some(4));
        assert_eq!(kept.last().map(|b| b.id), Some(KEPT_BATCHES as u64 + 3));
        assert_eq!(history.since(KEPT_BATCHES as u64 + 2).len(), 1);
    }
}
