//! Replays an indexing trace (`trace.rs`) into a fresh index in a temporary directory, through the same
//! mapping and writing code as the worker (`batch_apply.rs`), and reports the resulting entries' digest and
//! timings. The commit points can differ from the recorded ones (`commit_every`) and the index can be
//! closed and reopened between commits (`restart_every`): a correct index gives the same digest whatever
//! they are.
//!
//! The trace is read into memory whole. `load()` answers from the documents the trace holds (the batches'
//! own and the ones recorded as loaded), in the state they had at that point of the trace. Known limit: with
//! `commit_every`, a document that loads another document of its own recorded batch may be mapped before
//! that document is in the replay's view, where the live worker saw the whole batch's snapshot; indexes
//! without `load()` replay exactly with any commit points.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use corvid_storage::{DocumentRecord, StorageError};
use corvid_types::id_key;
use corvid_types::io_metrics::SlowIoThreshold;

use super::batch_apply::{apply_batch, Applied, BatchInput, BatchSource};
use super::handle::IndexHandle;
use super::mapper::{DocumentSource, Mapper};
use super::performance::BatchTimer;
use super::trace::{TraceError, TraceHeader, TraceLine, TRACE_FORMAT, TRACE_VERSION};
use crate::EngineError;

/// How to replay a trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Commit after every this many documents and tombstones instead of at the recorded commit points.
    pub commit_every: Option<usize>,
    /// Close and reopen the index after every this many commits.
    pub restart_every: Option<usize>,
}

/// What a replay did and what the index holds afterwards.
#[derive(Debug, Clone)]
pub struct ReplayReport {
    /// The traced index.
    pub index: String,
    /// Committed batches in the trace.
    pub recorded_batches: u64,
    /// Documents and tombstones replayed.
    pub documents: u64,
    /// Tombstones among them.
    pub tombstones: u64,
    /// Commits made by the replay.
    pub commits: u64,
    /// Times the index was closed and reopened.
    pub restarts: u64,
    /// Whether the index errored (too many failing documents) before the end, as the live one would have.
    pub errored: bool,
    /// The entries' digest (`corvid_index::EntriesDigest::text`, or the reduce rows' for automatic map-reduce).
    pub digest: String,
    /// Entries in the index.
    pub entries: u64,
    /// The whole replay.
    pub elapsed: Duration,
    /// Time mapping, reducing, committing and merging, summed over the commits.
    pub map: Duration,
    /// See `map`.
    pub reduce: Duration,
    /// See `map`.
    pub commit: Duration,
    /// See `map`.
    pub merge: Duration,
}

/// One recorded batch that committed.
struct RecordedBatch {
    /// Tombstones first, then documents: the order the worker applies them.
    items: Vec<Item>,
    loaded: Vec<DocumentRecord>,
}

enum Item {
    Document(DocumentRecord),
    Tombstone(String),
}

impl Item {
    fn key(&self) -> String {
        match self {
            Item::Document(record) => id_key(&record.id),
            Item::Tombstone(key) => key.clone(),
        }
    }
}

/// The documents `load()` sees during a replay.
#[derive(Default)]
struct ReplayDocuments {
    documents: HashMap<String, DocumentRecord>,
}

impl DocumentSource for &ReplayDocuments {
    fn document(&self, key: &str) -> Result<Option<DocumentRecord>, StorageError> {
        Ok(self.documents.get(key).cloned())
    }
}

impl BatchSource for &ReplayDocuments {
    fn release(self) {}
}

/// Removes the replay's temporary directory when the replay ends, however it ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Replays the trace at `path` into a fresh index (see the module documentation).
pub fn replay_trace(path: &Path, options: &ReplayOptions) -> Result<ReplayReport, EngineError> {
    let started = Instant::now();
    let (header, batches) = read_trace(path)?;
    let stamp = corvid_types::now_nanos();
    let temp = TempDir(std::env::temp_dir().join(format!("corvid-replay-{}-{stamp}", std::process::id())));
    let dir = temp.0.join("index");
    std::fs::create_dir_all(&dir).map_err(|e| EngineError::Internal(format!("{}: {e}", dir.display())))?;
    let mapper = Mapper::for_definition(&header.definition).map_err(|e| EngineError::Internal(e.to_string()))?;
    let mut handle = IndexHandle::open(header.definition.clone(), &dir, &SlowIoThreshold::default())?;
    let mut report = ReplayReport {
        index: header.index,
        recorded_batches: batches.len() as u64,
        documents: 0,
        tombstones: 0,
        commits: 0,
        restarts: 0,
        errored: false,
        digest: String::new(),
        entries: 0,
        elapsed: Duration::ZERO,
        map: Duration::ZERO,
        reduce: Duration::ZERO,
        commit: Duration::ZERO,
        merge: Duration::ZERO,
    };
    let mut documents = ReplayDocuments::default();
    let mut position: u64 = 0;
    for chunk in chunks(batches, options.commit_every) {
        for record in chunk.loaded {
            documents.documents.insert(id_key(&record.id), record);
        }
        let mut input = BatchInput { records: Vec::new(), deletes: Vec::new(), cut: 0, bulk: false };
        for item in chunk.items {
            position += 1;
            report.documents += 1;
            match item {
                Item::Document(record) => {
                    documents.documents.insert(id_key(&record.id), record.clone());
                    input.records.push(record);
                }
                Item::Tombstone(key) => {
                    report.tombstones += 1;
                    documents.documents.remove(&key);
                    input.deletes.push(key);
                }
            }
        }
        // The replay's own etags: one per item, so commit payloads grow as the worker's do.
        input.cut = position;
        let mut timer = BatchTimer::start();
        let applied = apply_batch(&handle, None, &mapper, &documents, input, &mut timer.stats)?;
        let stats = timer.finish(0);
        (report.map, report.reduce, report.commit, report.merge) =
            (report.map + stats.map, report.reduce + stats.reduce, report.commit + stats.commit, report.merge + stats.merge);
        if applied == Applied::Interrupted {
            report.errored = true;
            break;
        }
        report.commits += 1;
        if options.restart_every.is_some_and(|m| m > 0 && report.commits.is_multiple_of(m as u64)) {
            handle.index.checkpoint()?;
            drop(handle);
            handle = IndexHandle::open(header.definition.clone(), &dir, &SlowIoThreshold::default())?;
            report.restarts += 1;
        }
    }
    handle.index.checkpoint()?;
    report.digest = handle.index.entries_digest()?;
    report.entries = handle.index.entries_count();
    drop(handle);
    report.elapsed = started.elapsed();
    Ok(report)
}

/// The header and the committed batches of a trace (interrupted ones and an unfinished last one left out).
fn read_trace(path: &Path) -> Result<(TraceHeader, Vec<RecordedBatch>), TraceError> {
    let io = |source| TraceError::Io { path: path.to_owned(), source };
    let malformed = |line: usize, message: String| TraceError::Malformed { path: path.to_owned(), line, message };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut lines = std::io::BufReader::new(file).lines();
    let first = lines.next().transpose().map_err(io)?.ok_or_else(|| malformed(1, "the trace is empty".into()))?;
    let header: TraceHeader = serde_json::from_str(&first).map_err(|e| malformed(1, e.to_string()))?;
    if header.trace != TRACE_FORMAT || header.version != TRACE_VERSION {
        return Err(malformed(1, format!("not a {TRACE_FORMAT} version {TRACE_VERSION} file")));
    }
    let mut batches = Vec::new();
    let mut open: Option<RecordedBatch> = None;
    for (number, line) in lines.enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: TraceLine = serde_json::from_str(&line).map_err(|e| malformed(number + 2, e.to_string()))?;
        match parsed {
            TraceLine::Batch(batch) => {
                let mut items: Vec<Item> = batch.tombstones.into_iter().map(Item::Tombstone).collect();
                items.extend(batch.documents.into_iter().map(|d| Item::Document(d.into())));
                open = Some(RecordedBatch { items, loaded: Vec::new() });
            }
            TraceLine::Loaded(documents) => {
                if let Some(batch) = open.as_mut() {
                    batch.loaded.extend(documents.into_iter().map(DocumentRecord::from));
                }
            }
            TraceLine::Commit(_) => batches.extend(open.take()),
            TraceLine::Dropped(_) => open = None,
        }
    }
    Ok((header, batches))
}

/// The commits of a replay: the recorded batches, or their items cut every `commit_every`. A cut chunk keeps
/// only the last item of each key (in trace order), so that applying its tombstones before its documents, as
/// a batch does, gives the state the trace reached.
fn chunks(batches: Vec<RecordedBatch>, commit_every: Option<usize>) -> Vec<RecordedBatch> {
    let Some(size) = commit_every.filter(|&n| n > 0) else { return batches };
    let mut out = Vec::new();
    let mut current = RecordedBatch { items: Vec::new(), loaded: Vec::new() };
    for batch in batches {
        current.loaded.extend(batch.loaded);
        for item in batch.items {
            current.items.push(item);
            if current.items.len() == size {
                out.push(last_per_key(std::mem::replace(&mut current, RecordedBatch { items: Vec::new(), loaded: Vec::new() })));
            }
        }
    }
    if !current.items.is_empty() || !current.loaded.is_empty() {
        out.push(last_per_key(current));
    }
    out
}

fn last_per_key(batch: RecordedBatch) -> RecordedBatch {
    let mut last: HashMap<String, usize> = HashMap::new();
    for (position, item) in batch.items.iter().enumerate() {
        last.insert(item.key(), position);
    }
    let (mut tombstones, mut documents) = (Vec::new(), Vec::new());
    for (position, item) in batch.items.into_iter().enumerate() {
        if last.get(&item.key()) == Some(&position) {
            match item {
                Item::Tombstone(_) => tombstones.push(item),
                Item::Document(_) => documents.push(item),
            }
        }
    }
    tombstones.extend(documents);
    RecordedBatch { items: tombstones, loaded: batch.loaded }
}
