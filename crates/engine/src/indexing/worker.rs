//! The indexing loop of one index: after each commit it reads the documents and tombstones newer than its
//! last processed etag from a storage snapshot, maps them and commits them to tantivy with the last etag as
//! the commit payload (so a restart resumes there).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

use corvid_index::DocumentIndex;
use corvid_storage::{MapReduceStore, ReadTxn, ReferenceStore};
use corvid_storage::{Store, TransactionMerger};
use corvid_types::{id_key, now_nanos};

use super::batch_apply::{apply_batch, result_entry, Applied, BatchInput, BatchSource};
use super::handle::{IndexBackend, IndexHandle, IndexingAction, IndexingError};
use super::item_batch::read_item_batch;
use super::mapper::{DocumentSource, Mapper};
use super::performance::{BatchEnd, BatchTimer};
use super::trace::{batch_line, TraceLine, TraceRecorder, TracedDocument};
use crate::changes::IndexChangeKind;
use crate::commit_watch::CommitWatch;
use crate::EngineError;

/// Documents per tantivy commit when keeping up with writes: small enough that new writes become visible
/// quickly.
const BATCH: usize = 8192;
/// Documents per commit while behind by more than [`CATCH_UP_AFTER`] (a new index over existing data): every
/// commit ends a segment per indexing thread and small segments cost merges, so catching up commits rarely.
const CATCH_UP_BATCH: usize = 262_144;
const CATCH_UP_AFTER: u64 = 65_536;
/// A map-reduce index waits this long after each batch before reading the next. Its batches cost mostly per
/// batch, not per document (a durable commit of the map-reduce store, a commit of the results index, a
/// re-reduce of every touched key), and its results are read by aggregate queries that tolerate a few more
/// milliseconds; keeping up at 1,000 updates/s it made 45-65 batches a second, most of them a few dozen
/// documents, and took CPU from the search indexes beside it. With the pause, about 13 (S4's lag step run
/// ad hoc, four times each way alternating: search lag p50 16-19 ms instead of 20-25; p99 unchanged within
/// its noise, 68-115 vs 67-91 ms).
const REDUCE_BATCH_PAUSE: Duration = Duration::from_millis(40);
/// Document bytes read into one batch at most: a batch of large documents ends early rather than holding
/// gigabytes in memory.
const BATCH_BYTES: usize = 128 << 20;
/// After a failed batch the worker waits 1 s, then twice as long after each further failure, up to this: a
/// full disk is retried without spinning and picked up again within seconds once space returns.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);

/// What a worker tells the owner of its index: that the index caught up, and what the Changes API reports
/// (a batch committed, the index errored). The registry implements it; the worker holds it weakly, so that a
/// worker never keeps the registry of a closed database alive.
pub(super) trait WorkerListener: Send + Sync {
    /// The index caught up for the first time since its worker started: the narrower automatic indexes it
    /// covers can go.
    fn caught_up(&self, index: &IndexHandle);

    /// A side-by-side replacement caught up and is durable: it may take the place of the index of its name.
    /// False when the swap must wait (the worker asks again the next time it has caught up).
    fn ready_to_swap(&self, replacement: &IndexHandle) -> Result<bool, EngineError>;

    /// Something subscribers of the Changes API hear of happened to the index; must not block.
    fn index_changed(&self, index: &IndexHandle, kind: IndexChangeKind);
}

/// Tells the registry, if it is still there, what happened to the index.
fn announce(registry: &Weak<dyn WorkerListener>, handle: &IndexHandle, kind: IndexChangeKind) {
    if let Some(registry) = registry.upgrade() {
        registry.index_changed(handle, kind);
    }
}

/// The worker loop of one index, until the index is stopped.
pub(super) fn run(
    handle: &IndexHandle,
    store: &Store,
    merger: &TransactionMerger,
    watch: &CommitWatch,
    registry: &Weak<dyn WorkerListener>,
) {
    let mapper = loop {
        match Mapper::for_definition(&handle.definition) {
            Ok(mapper) => break mapper,
            Err(e) => {
                // Checked when the index was defined; reaching here means the runtime refused it (memory).
                *handle.faulted.lock() = Some(e.to_string());
                *handle.status.lock() = format!("Error: the maps do not compile: {e}");
                if handle.should_stop() {
                    return;
                }
                watch.wait_beyond(u64::MAX, Duration::from_secs(5));
            }
        }
    };
    let mut retired_narrower = false;
    let mut failures: u32 = 0;
    let mut errored = handle.control.is_errored();
    while !handle.should_stop() {
        if handle.control.is_errored() != errored {
            errored = !errored;
            if errored {
                announce(registry, handle, IndexChangeKind::IndexMarkedAsErrored);
            }
        }
        if !handle.control.may_index() {
            *handle.status.lock() = match handle.control.errored_reason() {
                Some(reason) => format!("Error: not indexing: {reason}"),
                None => format!("{}: not indexing", handle.control.status()),
            };
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        if let Some(index) = tantivy_index(handle) {
            index.hold_checkpoints(merger.stats().low_disk_space);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| run_batch(handle, store, merger, &mapper)));
        if matches!(outcome, Ok(Ok(_))) && failures > 0 {
            tracing::info!(index = %handle.name(), failures, "indexing recovered");
            *handle.faulted.lock() = None;
            failures = 0;
        }
        match outcome {
            Ok(Ok(true)) => {
                announce(registry, handle, IndexChangeKind::BatchCompleted);
                handle.error_if_failing(false);
                if !matches!(handle.index, IndexBackend::Search(_)) {
                    std::thread::sleep(REDUCE_BATCH_PAUSE);
                }
                continue;
            }
            Ok(Ok(false)) => {
                *handle.faulted.lock() = None;
                if handle.error_if_failing(true) {
                    continue;
                }
                if !retired_narrower {
                    if let Some(registry) = registry.upgrade() {
                        registry.caught_up(handle);
                    }
                    retired_narrower = true;
                }
                *handle.status.lock() = "Idle: caught up".into();
                end_catch_up(handle);
                if handle.control.is_replacement() {
                    // Durable before it answers queries in place of the index it replaces.
                    checkpoint(handle, true);
                    if let Some(registry) = registry.upgrade() {
                        if let Err(e) = registry.ready_to_swap(handle) {
                            tracing::warn!(index = %handle.name(), error = %e, "could not swap the replacement in; retrying");
                        }
                    }
                }
                checkpoint(handle, false);
                watch.wait_beyond(handle.processed_etag.load(Ordering::Relaxed), Duration::from_secs(1));
            }
            Ok(Err(e)) => {
                let pause = retry_pause(failures);
                tracing::error!(index = %handle.name(), error = %e, retry_in_ms = pause.as_millis() as u64, "indexing batch failed; retrying");
                if failures == 0 {
                    // Once per run of failures: a full disk would otherwise fill the error list with one entry a second.
                    handle.record_error(IndexingError {
                        document: String::new(),
                        message: e.to_string(),
                        at: now_nanos(),
                        action: IndexingAction::Write,
                    });
                }
                *handle.faulted.lock() = Some(e.to_string());
                *handle.status.lock() = format!("Error: {e}; retrying in {} ms", pause.as_millis());
                failures = failures.saturating_add(1);
                if let Some(index) = tantivy_index(handle) {
                    index.reopen_writer();
                }
                pause_unless_stopped(handle, pause);
            }
            Err(_) => {
                tracing::error!(index = %handle.name(), "indexing batch panicked; retrying");
                *handle.faulted.lock() = Some("the indexing batch panicked".into());
                failures = failures.saturating_add(1);
                if let Some(index) = tantivy_index(handle) {
                    index.reopen_writer();
                }
                pause_unless_stopped(handle, retry_pause(failures - 1));
            }
        }
    }
    checkpoint(handle, true);
    *handle.status.lock() = "Stopped".into();
}

fn retry_pause(failures: u32) -> Duration {
    Duration::from_secs(1).saturating_mul(1 << failures.min(8)).min(MAX_RETRY_PAUSE)
}

/// Sleeps `pause`, returning early when the index is being stopped.
fn pause_unless_stopped(handle: &IndexHandle, pause: Duration) {
    let until = std::time::Instant::now() + pause;
    while !handle.should_stop() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The tantivy index of a backend: the search index, or the results of a static map-reduce index.
fn tantivy_index(handle: &IndexHandle) -> Option<&DocumentIndex> {
    match &handle.index {
        IndexBackend::Search(index) => Some(index),
        IndexBackend::StaticReduce { results, .. } => Some(results),
        IndexBackend::Reduce(_) => None,
    }
}

/// A caught-up index leaves bulk mode at once, so the segments of its catch-up merge while it is idle.
fn end_catch_up(handle: &IndexHandle) {
    let Some(index) = tantivy_index(handle) else { return };
    if let Err(e) = index.end_bulk() {
        tracing::warn!(index = %handle.definition.name, error = %e, "could not end the catch-up; it ends at the next batch");
    }
}

/// Fsyncs the tantivy commits of an index that is idle (when due) or stopping (always); see `soft_sync.rs`.
/// A failure only delays durability: the commits stay valid for this boot and the next checkpoint retries.
/// A failing checkpoint (a full disk) is reported once in the index's errors; the commits stay in memory
/// and the next checkpoint writes them.
fn checkpoint(handle: &IndexHandle, stopping: bool) {
    let Some(index) = tantivy_index(handle) else { return };
    let result = if stopping { index.checkpoint() } else { index.checkpoint_if_due() };
    if let Err(e) = result {
        tracing::warn!(index = %handle.definition.name, error = %e, "index checkpoint failed");
    }
    let failure = index.checkpoint_failure();
    let mut reported = handle.checkpoint_failure_reported.lock();
    if let (Some(message), false) = (&failure, *reported) {
        let message = format!("writing the index to disk failed (it keeps working from memory and retries): {message}");
        handle.record_error(IndexingError { document: String::new(), message, at: now_nanos(), action: IndexingAction::Checkpoint });
    }
    *reported = failure.is_some();
}

/// Adds to the batch the documents whose loaded documents changed (or were deleted) in (from, cut], so a
/// change to a referenced document re-indexes the documents that loaded it.
fn add_dependents(
    handle: &IndexHandle,
    references: &ReferenceStore,
    snapshot: &ReadTxn<'_>,
    from: u64,
    cut: u64,
    records: &mut Vec<corvid_storage::DocumentRecord>,
) -> Result<(), EngineError> {
    if references.is_empty()? {
        return Ok(());
    }
    let mut changed = Vec::new();
    snapshot.documents_after_etag(from, |r| {
        if r.etag > cut {
            return false;
        }
        changed.push(id_key(&r.id));
        true
    })?;
    snapshot.tombstones_after_etag(from, |t| {
        if t.etag > cut {
            return false;
        }
        changed.push(id_key(&t.id));
        true
    })?;
    let own: std::collections::HashSet<String> = records.iter().map(|r| id_key(&r.id)).collect();
    let mut dependents = std::collections::BTreeSet::new();
    for key in changed {
        for loading in references.loading(&key)? {
            if !own.contains(&loading) {
                dependents.insert(loading);
            }
        }
    }
    let collections = handle.definition.static_index.as_ref().map(|s| s.collections.clone()).unwrap_or_default();
    for key in dependents {
        if let Some(record) = snapshot.document(&key)? {
            if collections.is_empty() || collections.iter().any(|c| c.eq_ignore_ascii_case(&record.collection)) {
                records.push(record);
            }
        }
    }
    Ok(())
}

/// The results index keeps recent segments in memory until a checkpoint while the map-reduce store commits
/// every batch, so after a crash the results can be behind the store (and replaying documents cannot tell which
/// keys a replayed delete emptied): every result is rewritten from the store.
fn resync_results(handle: &IndexHandle, reduced: &MapReduceStore, results: &DocumentIndex) -> Result<(), EngineError> {
    let store_etag = reduced.last_etag()?;
    if results.last_indexed_etag() >= store_etag {
        return Ok(());
    }
    *handle.status.lock() = format!("Rewriting the reduce results up to etag {store_etag} from the map-reduce store");
    tracing::info!(index = %handle.name(), results_etag = results.last_indexed_etag(), store_etag, "rewriting reduce results from the map-reduce store");
    let failed = |e: corvid_index::IndexError| EngineError::Internal(format!("index {}: {e}", handle.definition.name));
    let mut batch = results.batch().map_err(failed)?;
    batch.delete_all().map_err(failed)?;
    for (key, texts) in reduced.all_results()? {
        if let Some(entry) = result_entry(key, &texts) {
            batch.upsert(&entry).map_err(failed)?;
        }
    }
    batch.commit(store_etag).map_err(failed)?;
    results.checkpoint().map_err(failed)?;
    handle.processed_etag.store(store_etag, Ordering::Relaxed);
    Ok(())
}

/// Indexes one batch; false when there was nothing to do.
fn run_batch(handle: &IndexHandle, store: &Store, merger: &TransactionMerger, mapper: &Mapper) -> Result<bool, EngineError> {
    if let (Some(output), IndexBackend::StaticReduce { store: reduced, .. }) = (&handle.output, &handle.index) {
        if handle.output_resync.load(Ordering::Relaxed) {
            output.resync(merger, reduced)?;
            handle.output_resync.store(false, Ordering::Relaxed);
        }
    }
    if let IndexBackend::StaticReduce { store: reduced, results } = &handle.index {
        resync_results(handle, reduced, results)?;
    }
    let from = handle.processed_etag.load(Ordering::Relaxed);
    let snapshot = store.read()?;
    let last_etag = snapshot.last_etag()?;
    if last_etag <= from {
        return Ok(false);
    }
    *handle.status.lock() = format!("Indexing documents after etag {from}");
    let mut timer = BatchTimer::start();
    let read_started = Instant::now();
    let (input, end) = read_batch(handle, &snapshot, from, last_etag)?;
    timer.stats.read = read_started.elapsed();
    timer.stats.documents_read = input.records.len() as u64;
    timer.stats.tombstones_read = input.deletes.len() as u64;
    timer.stats.documents_bytes = input.records.iter().map(|r| r.body.len() as u64).sum();
    timer.stats.cut = input.cut;
    timer.stats.end = end;
    let cut = input.cut;
    let tracing = handle.trace.is_recording();
    if tracing {
        handle.trace.record(&batch_line(&input.records, &input.deletes, cut));
    }
    let applied = if tracing {
        let source = TracingSource::new(snapshot, &handle.trace, &input.records);
        apply_batch(handle, Some(merger), mapper, source, input, &mut timer.stats)
    } else {
        apply_batch(handle, Some(merger), mapper, snapshot, input, &mut timer.stats)
    };
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) => {
            if tracing {
                handle.trace.record(&TraceLine::Dropped(true));
            }
            return Err(e);
        }
    };
    if tracing {
        handle.trace.record(&match applied {
            Applied::Interrupted => TraceLine::Dropped(true),
            Applied::Done { .. } => TraceLine::Commit(cut),
        });
    }
    if applied == Applied::Interrupted {
        timer.stats.end = BatchEnd::Interrupted;
    }
    let read_something = timer.stats.documents_read + timer.stats.tombstones_read > 0;
    if read_something || applied == Applied::Interrupted {
        let memory = tantivy_index(handle).map_or(0, |index| index.memory_bytes() as u64);
        handle.performance.record(timer.finish(memory));
    }
    Ok(true)
}

/// Reads the documents and tombstones after `from` that the index takes, up to the batch's size, and the
/// documents to re-map because a document they load changed; with why the batch ended.
fn read_batch(handle: &IndexHandle, snapshot: &ReadTxn<'_>, from: u64, last_etag: u64) -> Result<(BatchInput, BatchEnd), EngineError> {
    let definition = &handle.definition;
    let batch = if last_etag - from > CATCH_UP_AFTER { CATCH_UP_BATCH } else { BATCH };
    if let Some(source) = definition.item_source() {
        let collections = definition.static_index.as_ref().map(|s| s.collections.clone()).unwrap_or_default();
        let references = handle.references.as_ref();
        if let Some(read) = read_item_batch(source, &collections, references, snapshot, from, last_etag, batch)? {
            return Ok(read);
        }
    }
    let mut records = Vec::new();
    let mut cut = last_etag;
    let mut bytes = 0;
    let mut end = BatchEnd::NoMoreDocuments;
    let mut visit = |record: corvid_storage::DocumentRecord| {
        let etag = record.etag;
        bytes += record.body.len();
        records.push(record);
        if records.len() >= batch || bytes >= BATCH_BYTES {
            end = if records.len() >= batch { BatchEnd::DocumentCount(batch) } else { BatchEnd::DocumentBytes(BATCH_BYTES) };
            cut = etag;
            return false;
        }
        true
    };
    if let Some(statics) = definition.static_index.as_ref().filter(|s| !s.collections.is_empty() && definition.is_all_docs()) {
        // A multi-map index reads every document and keeps those of its collections.
        let wanted: Vec<String> = statics.collections.iter().map(|c| id_key(c)).collect();
        let mut filtered = |record: corvid_storage::DocumentRecord| {
            // Documents of other collections are passed over (the batch's cut is set by `visit`).
            !wanted.contains(&id_key(&record.collection)) || visit(record)
        };
        snapshot.documents_after_etag(from, &mut filtered)?;
    } else if definition.is_all_docs() {
        snapshot.documents_after_etag(from, &mut visit)?;
    } else {
        snapshot.collection_documents_after_etag(&id_key(&definition.collection), from, &mut visit)?;
    }
    let mut deletes: Vec<String> = Vec::new();
    snapshot.tombstones_after_etag(from, |t| {
        if t.etag > cut {
            return false;
        }
        if definition.is_all_docs() || t.collection.eq_ignore_ascii_case(&definition.collection) {
            deletes.push(id_key(&t.id));
        }
        true
    })?;
    if let Some(references) = &handle.references {
        add_dependents(handle, references, snapshot, from, cut, &mut records)?;
    }
    Ok((BatchInput { records, deletes, cut, bulk: batch == CATCH_UP_BATCH }, end))
}

/// A batch's snapshot while a trace is on: remembers the documents `load()` returned that the batch does
/// not hold, and records them when the batch releases it.
struct TracingSource<'s, 'r> {
    snapshot: ReadTxn<'s>,
    trace: &'r TraceRecorder,
    own: std::collections::HashSet<String>,
    loaded: std::cell::RefCell<std::collections::BTreeMap<String, corvid_storage::DocumentRecord>>,
}

impl<'s, 'r> TracingSource<'s, 'r> {
    fn new(snapshot: ReadTxn<'s>, trace: &'r TraceRecorder, records: &[corvid_storage::DocumentRecord]) -> Self {
        let own = records.iter().map(|r| id_key(&r.id)).collect();
        TracingSource { snapshot, trace, own, loaded: Default::default() }
    }
}

impl DocumentSource for TracingSource<'_, '_> {
    fn document(&self, key: &str) -> Result<Option<corvid_storage::DocumentRecord>, corvid_storage::StorageError> {
        let found = self.snapshot.document(key)?;
        if let Some(record) = &found {
            if !self.own.contains(key) {
                self.loaded.borrow_mut().insert(key.to_owned(), record.clone());
            }
        }
        Ok(found)
    }
}

impl BatchSource for TracingSource<'_, '_> {
    fn release(self) {
        let loaded = self.loaded.into_inner();
        if !loaded.is_empty() {
            self.trace.record(&TraceLine::Loaded(loaded.values().map(TracedDocument::from).collect()));
        }
    }
}
