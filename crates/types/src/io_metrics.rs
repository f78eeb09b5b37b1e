//! The recent disk I/O of one storage environment (a database's store, an index): each journal write, flush
//! and sync with its size, duration and start time, kept per file in a short ring whose older events are
//! folded into summaries, and the operations slower than a threshold, kept for the slow-I/O alert
//! (`/debug/io-metrics`, RavenDB's IoMetrics). It does no I/O itself: the storage layers time their own
//! writes and syncs and record them here. Recording takes an uncontended mutex for a few moves, twice per
//! merged commit on the write path.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::dates::now_nanos;

/// Events kept per file before the oldest are folded into a summary.
pub const RECENT_PER_FILE: usize = 128;
/// Events folded into one summary.
const EVENTS_PER_SUMMARY: u64 = 128;
/// Summaries kept per file.
const SUMMARIES_PER_FILE: usize = 32;
/// Files kept per environment (journal files come and go; the oldest are forgotten).
const FILES_KEPT: usize = 16;
/// Slow operations kept for the alert.
const SLOW_KEPT: usize = 64;

/// What an I/O operation was, in RavenDB's names where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoKind {
    /// Records written to the journal (buffered; durable at the next `JournalSync`).
    JournalWrite,
    /// `fdatasync` of the journal: the group commit's durability point (Corvid's; RavenDB writes its
    /// journal with O_DSYNC, so its `JournalWrite` includes this).
    JournalSync,
    /// Pages written to the data file without a sync (an LMDB commit; an index commit).
    DataFlush,
    /// The data file (or an index's files) synced at a checkpoint.
    DataSync,
}

impl IoKind {
    /// The name in `/debug/io-metrics`.
    pub fn name(self) -> &'static str {
        match self {
            IoKind::JournalWrite => "JournalWrite",
            IoKind::JournalSync => "JournalSync",
            IoKind::DataFlush => "DataFlush",
            IoKind::DataSync => "DataSync",
        }
    }

    /// Whether the operation waits for the disk itself (what the slow-I/O alert watches).
    pub fn is_sync(self) -> bool {
        matches!(self, IoKind::JournalSync | IoKind::DataSync)
    }
}

/// One operation.
#[derive(Debug, Clone)]
pub struct IoEvent {
    /// Increasing per environment: the live feed sends the events after the last one it sent.
    pub seq: u64,
    pub kind: IoKind,
    /// Start, Unix nanoseconds.
    pub start: i64,
    pub duration: Duration,
    /// Bytes written (for a sync, what it made durable, when known; else 0).
    pub size: u64,
    /// The file's size at the time, when known (else 0).
    pub file_size: u64,
}

/// Events pushed out of a file's recent ring, summed per kind.
#[derive(Debug, Clone)]
pub struct IoSummary {
    pub kind: IoKind,
    pub start: i64,
    pub end: i64,
    pub count: u64,
    pub size: u64,
    pub file_size: u64,
    /// Sum of the events' durations.
    pub active: Duration,
    pub max: Duration,
    pub min: Duration,
}

/// One file's events.
#[derive(Debug, Clone, Default)]
pub struct FileIo {
    pub recent: VecDeque<IoEvent>,
    pub history: VecDeque<IoSummary>,
    /// The summary being filled, per kind.
    filling: BTreeMap<IoKind, IoSummary>,
    /// When the file last had an event (files not seen for long are forgotten first).
    last_seq: u64,
}

impl FileIo {
    fn push(&mut self, event: IoEvent) {
        self.last_seq = event.seq;
        self.recent.push_back(event);
        while self.recent.len() > RECENT_PER_FILE {
            let old = self.recent.pop_front().expect("longer than the limit");
            self.fold(old);
        }
    }

    fn fold(&mut self, event: IoEvent) {
        let end = event.start + event.duration.as_nanos() as i64;
        let summary = self.filling.entry(event.kind).or_insert_with(|| IoSummary {
            kind: event.kind,
            start: event.start,
            end,
            count: 0,
            size: 0,
            file_size: 0,
            active: Duration::ZERO,
            max: Duration::ZERO,
            min: Duration::MAX,
        });
        summary.end = end;
        summary.count += 1;
        summary.size += event.size;
        summary.file_size = summary.file_size.max(event.file_size);
        summary.active += event.duration;
        summary.max = summary.max.max(event.duration);
        summary.min = summary.min.min(event.duration);
        if summary.count >= EVENTS_PER_SUMMARY {
            let done = self.filling.remove(&event.kind).expect("just filled");
            self.history.push_back(done);
            while self.history.len() > SUMMARIES_PER_FILE {
                self.history.pop_front();
            }
        }
    }

    /// The finished summaries and the ones still filling, oldest first.
    pub fn summaries(&self) -> Vec<IoSummary> {
        let mut all: Vec<IoSummary> = self.history.iter().cloned().collect();
        all.extend(self.filling.values().cloned());
        all.sort_by_key(|s| s.start);
        all
    }
}

/// An operation that took longer than the threshold.
#[derive(Debug, Clone)]
pub struct SlowIo {
    pub file: String,
    pub event: IoEvent,
}

#[derive(Default)]
struct Files {
    by_name: BTreeMap<String, FileIo>,
    slow: VecDeque<SlowIo>,
    slow_total: u64,
}

/// The I/O record of one environment. Shared behind an `Arc` by the threads that write its files.
pub struct IoMetrics {
    /// What the environment is (its directory), named in the slow-I/O warning.
    environment: String,
    files: Mutex<Files>,
    next_seq: AtomicU64,
    slow_threshold: SlowIoThreshold,
}

/// The default slow-I/O threshold: RavenDB warns about journal writes over 500 ms.
pub const DEFAULT_SLOW_IO_THRESHOLD: Duration = Duration::from_millis(500);

/// The slow-I/O threshold (`slow_io_threshold_ms`), one value shared by a database's store and all its
/// indexes: each environment's metrics hold a clone, given when the environment opens.
#[derive(Debug, Clone)]
pub struct SlowIoThreshold(Arc<AtomicU64>);

impl SlowIoThreshold {
    /// Operations at least `threshold` long are slow; zero turns the alert off.
    pub fn new(threshold: Duration) -> SlowIoThreshold {
        SlowIoThreshold(Arc::new(AtomicU64::new(threshold.as_micros() as u64)))
    }

    /// The threshold (zero: off).
    pub fn get(&self) -> Duration {
        Duration::from_micros(self.0.load(Ordering::Relaxed))
    }

    fn is_slow(&self, duration: Duration) -> bool {
        let threshold = self.0.load(Ordering::Relaxed);
        threshold > 0 && duration.as_micros() as u64 >= threshold
    }
}

impl Default for SlowIoThreshold {
    fn default() -> Self {
        SlowIoThreshold::new(DEFAULT_SLOW_IO_THRESHOLD)
    }
}

impl Default for IoMetrics {
    fn default() -> Self {
        IoMetrics::new(String::new(), SlowIoThreshold::default())
    }
}

/// A started operation: its `stop` gives what `IoMetrics::record` takes.
#[must_use]
pub struct IoTimer {
    start: i64,
    started: Instant,
}

impl IoTimer {
    /// The start (Unix nanoseconds) and the time since.
    pub fn stop(self) -> (i64, Duration) {
        (self.start, self.started.elapsed())
    }
}

impl IoMetrics {
    /// The metrics of the environment in `environment` (a directory), warning about operations at least
    /// `slow_threshold` long.
    pub fn new(environment: impl Into<String>, slow_threshold: SlowIoThreshold) -> IoMetrics {
        IoMetrics { environment: environment.into(), files: Mutex::default(), next_seq: AtomicU64::new(1), slow_threshold }
    }

    /// The slow-I/O threshold (zero: off).
    pub fn slow_threshold(&self) -> Duration {
        self.slow_threshold.get()
    }

    /// The shared threshold, for the environments opened after this one (a database's indexes).
    pub fn shared_slow_threshold(&self) -> &SlowIoThreshold {
        &self.slow_threshold
    }

    /// Starts timing an operation.
    pub fn start() -> IoTimer {
        IoTimer { start: now_nanos(), started: Instant::now() }
    }

    /// Records an operation that started at `start` (Unix nanoseconds) and took `duration`, and logs a
    /// warning when it was slow (at least the threshold). Whether it was.
    pub fn record(&self, file: &str, kind: IoKind, start: i64, duration: Duration, size: u64, file_size: u64) -> bool {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let event = IoEvent { seq, kind, start, duration, size, file_size };
        let slow = self.slow_threshold.is_slow(duration);
        if slow {
            tracing::warn!(
                environment = %self.environment, file, operation = kind.name(), size,
                took_ms = duration.as_millis() as u64, threshold_ms = self.slow_threshold().as_millis() as u64,
                "slow I/O: an operation took longer than slow_io_threshold_ms"
            );
        }
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if slow {
            files.slow.push_back(SlowIo { file: file.to_owned(), event: event.clone() });
            files.slow_total += 1;
            while files.slow.len() > SLOW_KEPT {
                files.slow.pop_front();
            }
        }
        match files.by_name.get_mut(file) {
            Some(io) => io.push(event),
            None => {
                if files.by_name.len() >= FILES_KEPT {
                    let stalest = files.by_name.iter().min_by_key(|(_, io)| io.last_seq).map(|(name, _)| name.clone());
                    if let Some(name) = stalest {
                        files.by_name.remove(&name);
                    }
                }
                let mut io = FileIo::default();
                io.push(event);
                files.by_name.insert(file.to_owned(), io);
            }
        }
        slow
    }

    /// Every file's events and summaries.
    pub fn files(&self) -> BTreeMap<String, FileIo> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner).by_name.clone()
    }

    /// The events recorded after `seq`, per file (the live feed).
    pub fn events_after(&self, seq: u64) -> BTreeMap<String, Vec<IoEvent>> {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files
            .by_name
            .iter()
            .map(|(name, io)| (name.clone(), io.recent.iter().filter(|e| e.seq > seq).cloned().collect::<Vec<_>>()))
            .filter(|(_, events)| !events.is_empty())
            .collect()
    }

    /// The last sequence number given out.
    pub fn last_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Relaxed) - 1
    }

    /// The slow operations kept (the newest last) and how many there were in all.
    pub fn slow(&self) -> (Vec<SlowIo>, u64) {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        (files.slow.iter().cloned().collect(), files.slow_total)
    }

    /// Forgets the slow operations (the alert was dismissed).
    pub fn clear_slow(&self) {
        self.files.lock().unwrap_or_else(PoisonError::into_inner).slow.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_kept_per_file_and_folded_into_summaries() {
        let io = IoMetrics::default();
        for i in 0..(RECENT_PER_FILE as u64 + 300) {
            io.record("a.journal", IoKind::JournalWrite, i as i64 * 1000, Duration::from_micros(10 + i % 7), 100, 8 << 20);
        }
        io.record("data.mdb", IoKind::DataSync, 5, Duration::from_millis(3), 4096, 1 << 20);
        let files = io.files();
        let journal = &files["a.journal"];
        assert_eq!(journal.recent.len(), RECENT_PER_FILE);
        let summaries = journal.summaries();
        let folded: u64 = summaries.iter().map(|s| s.count).sum();
        assert_eq!(folded, 300, "every event pushed out is in exactly one summary");
        assert_eq!(summaries.iter().map(|s| s.size).sum::<u64>(), 300 * 100);
        assert!(summaries.iter().all(|s| s.min <= s.max && s.max <= Duration::from_micros(16)));
        assert_eq!(files["data.mdb"].recent[0].kind, IoKind::DataSync);
        assert_eq!(io.events_after(io.last_seq() - 1).len(), 1, "only the data file's event is newer");
    }

    #[test]
    fn slow_operations_are_kept_for_the_alert() {
        let io = IoMetrics::new("db", SlowIoThreshold::new(Duration::from_millis(100)));
        assert!(!io.record("j", IoKind::JournalSync, 0, Duration::from_millis(99), 0, 0));
        assert!(io.record("j", IoKind::JournalSync, 0, Duration::from_millis(100), 0, 0));
        let (slow, total) = io.slow();
        assert_eq!((slow.len(), total), (1, 1));
        io.clear_slow();
        assert!(io.slow().0.is_empty());
        let off = IoMetrics::new("db", SlowIoThreshold::new(Duration::ZERO));
        assert!(!off.record("j", IoKind::JournalSync, 0, Duration::from_secs(10), 0, 0));
    }

    #[test]
    fn the_stalest_file_is_forgotten() {
        let io = IoMetrics::default();
        for i in 0..(FILES_KEPT + 3) {
            io.record(&format!("{i:04}.journal"), IoKind::JournalWrite, 0, Duration::ZERO, 1, 0);
        }
        let files = io.files();
        assert_eq!(files.len(), FILES_KEPT);
        assert!(!files.contains_key("0000.journal") && files.contains_key(&format!("{:04}.journal", FILES_KEPT + 2)));
    }
}
