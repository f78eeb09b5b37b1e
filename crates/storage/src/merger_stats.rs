//! The merger's counters (`/admin/metrics`): commits, flushes and their latency, queue depths, checkpoints.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Flush times in buckets of powers of two microseconds: cheap to update from the flusher, precise enough
/// for p50/p99.
#[derive(Default)]
pub(crate) struct LatencyHistogram {
    buckets: [AtomicU64; 32],
    /// The sum of every recorded time, so a Prometheus histogram can report its `_sum`.
    total_micros: AtomicU64,
}

impl LatencyHistogram {
    pub fn record(&self, took: Duration) {
        let micros = took.as_micros().max(1) as u64;
        let bucket = (63 - micros.leading_zeros() as usize).min(31);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.total_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Every bucket's count (bucket `i` holds times below `2^(i+1)` microseconds) and the sum of all times.
    pub fn counts(&self) -> LatencyCounts {
        LatencyCounts {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            total_micros: self.total_micros.load(Ordering::Relaxed),
        }
    }

    /// The upper bound of the bucket holding quantile `q`, in milliseconds; 0 with no samples.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return (1u64 << (bucket + 1)) as f64 / 1000.0;
            }
        }
        0.0
    }
}

/// A latency histogram's counts at one moment.
#[derive(Debug, Clone, Default)]
pub struct LatencyCounts {
    /// Samples per bucket; bucket `i` holds times in `[2^i, 2^(i+1))` microseconds (the last one, longer).
    pub buckets: [u64; 32],
    /// The sum of every sample, in microseconds.
    pub total_micros: u64,
}

impl LatencyCounts {
    /// The upper bound of bucket `i`, in seconds.
    pub fn upper_bound_seconds(bucket: usize) -> f64 {
        (1u64 << (bucket + 1)) as f64 / 1_000_000.0
    }
}

/// The merger's counters, updated by its thread and read by `snapshot`.
#[derive(Default)]
pub struct MergerStats {
    pub(crate) commits: AtomicU64,
    pub(crate) merged_commands: AtomicU64,
    pub(crate) failed_commands: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) commit_failures: AtomicU64,
    pub(crate) largest_batch: AtomicU64,
    pub(crate) commit_micros_total: AtomicU64,
    pub(crate) fsyncs: AtomicU64,
    pub(crate) queued: AtomicU64,
    pub(crate) last_committed_etag: AtomicU64,
    pub(crate) map_size: AtomicU64,
    pub(crate) map_resizes: AtomicU64,
    pub(crate) low_disk_space: AtomicBool,
    pub(crate) disk_full_errors: AtomicU64,
    pub(crate) data_file_free_bytes: AtomicU64,
    pub(crate) journal_flushes: AtomicU64,
    pub(crate) flush_latency: LatencyHistogram,
    pub(crate) flush_queue_depth: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
    pub(crate) journal_bytes: AtomicU64,
    pub(crate) journal_bytes_since_checkpoint: AtomicU64,
}

/// The merger's counters at one moment (`/admin/metrics`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MergerStatsSnapshot {
    /// LMDB commits (not flushed: the journal makes them durable).
    pub merger_commits: u64,
    /// Disk flushes: one per journal flush (covering one or more merged commits) and two per checkpoint
    /// (the data file, then the checkpoint record). Commands per flush is the merging factor.
    pub merger_fsyncs: u64,
    /// Journal flushes (`fdatasync`); each acknowledges every commit written before it.
    pub journal_flushes: u64,
    /// Commands acknowledged per journal flush, on average (docs per flush).
    pub commands_per_flush: f64,
    /// Median time of a journal flush, in milliseconds (from a histogram of powers of two).
    pub journal_flush_p50_ms: f64,
    /// 99th percentile of the journal flush time, in milliseconds.
    pub journal_flush_p99_ms: f64,
    /// Merged commits written to the journal and waiting for (or in) a flush now.
    pub flush_queue_depth: u64,
    /// Checkpoints: data file flushed, checkpoint record durable, older journal files recycled.
    pub checkpoints: u64,
    /// Journal record bytes written since the database opened.
    pub journal_bytes: u64,
    /// Journal record bytes since the last checkpoint (what a crash now would replay).
    pub journal_bytes_since_checkpoint: u64,
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
    /// Journal flush times as a histogram (for Prometheus; `/admin/metrics` shows p50/p99).
    #[serde(skip)]
    pub journal_flush_latency: LatencyCounts,
}

impl MergerStats {
    /// The counters now.
    pub fn snapshot(&self) -> MergerStatsSnapshot {
        let commits = self.commits.load(Ordering::Relaxed);
        let micros = self.commit_micros_total.load(Ordering::Relaxed);
        let flushes = self.journal_flushes.load(Ordering::Relaxed);
        let merged = self.merged_commands.load(Ordering::Relaxed);
        MergerStatsSnapshot {
            merger_commits: commits,
            journal_flushes: flushes,
            commands_per_flush: if flushes == 0 { 0.0 } else { merged as f64 / flushes as f64 },
            journal_flush_p50_ms: self.flush_latency.quantile_ms(0.5),
            journal_flush_p99_ms: self.flush_latency.quantile_ms(0.99),
            flush_queue_depth: self.flush_queue_depth.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.load(Ordering::Relaxed),
            journal_bytes: self.journal_bytes.load(Ordering::Relaxed),
            journal_bytes_since_checkpoint: self.journal_bytes_since_checkpoint.load(Ordering::Relaxed),
            merger_fsyncs: self.fsyncs.load(Ordering::Relaxed),
            merged_commands: merged,
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
            journal_flush_latency: self.flush_latency.counts(),
        }
    }
}
