//! One running index as the rest of the engine sees it: its definition, where it keeps its entries, its
//! progress, counters and errors, and the controls its worker obeys. The registry owns the handles; the
//! worker and queries share them.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::thread::JoinHandle;

use corvid_index::{DocumentIndex, FieldSpec, IndexSpec, RecentSegments};
use corvid_storage::{MapReduceStore, ReduceStore, ReferenceStore};
use corvid_types::io_metrics::SlowIoThreshold;
use parking_lot::Mutex;
use serde::Serialize;

use super::control::IndexControl;
use super::definition::AutoIndexDefinition;
use super::failure::Attempts;
use super::output_collection::ReduceOutput;
use super::performance::PerformanceHistory;
use super::trace::TraceRecorder;
use crate::commit_watch::CommitWatch;
use crate::EngineError;

/// How RavenDB names the index built side by side to replace another (`ReplacementOf/Orders/Totals`).
pub const REPLACEMENT_PREFIX: &str = "ReplacementOf/";
/// Errors an index keeps (the oldest go first), as RavenDB keeps a bounded list.
const MAX_KEPT_ERRORS: usize = 500;

/// An error recorded while indexing, as `GET /indexes/errors` lists it.
#[derive(Debug, Clone)]
pub struct IndexingError {
    /// The document (or, for a reduce, the reduce key) it is about; empty for a whole batch.
    pub document: String,
    /// What went wrong, as users see it.
    pub message: String,
    /// When, in nanoseconds since the Unix epoch.
    pub at: i64,
    /// What the index was doing.
    pub action: IndexingAction,
}

/// What an index was doing when an error happened (RavenDB's `Action` of an index error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IndexingAction {
    /// Mapping one document.
    Map,
    /// Reducing one reduce key.
    Reduce,
    /// Writing a batch (to the index, the map-reduce store or the output collection).
    Write,
    /// Writing the index's in-memory commits to disk.
    Checkpoint,
}

/// What the worker of an index has done since it started (`/indexes/stats`).
#[derive(Default)]
pub struct IndexCounters {
    /// Documents given to the maps.
    pub map_attempts: AtomicU64,
    /// Documents mapped without error.
    pub map_successes: AtomicU64,
    /// Documents whose map failed.
    pub map_errors: AtomicU64,
    /// Reduce keys given to the reduce.
    pub reduce_attempts: AtomicU64,
    /// Reduce keys whose reduce failed.
    pub reduce_errors: AtomicU64,
    /// Batches that changed the index.
    pub batches: AtomicU64,
    /// When the last such batch ended, in nanoseconds since the Unix epoch.
    pub last_indexing_time: AtomicI64,
}

/// Where an index keeps its entries: a tantivy index (map), reduce values (automatic map-reduce), or map
/// entries and reduce results with a tantivy index over the results (static map-reduce).
pub enum IndexBackend {
    /// A map index: one tantivy entry per document.
    Search(Box<DocumentIndex>),
    /// An automatic map-reduce index: counts and sums per reduce key.
    Reduce(ReduceStore),
    /// A static map-reduce index: every document's map entries, and its reduce results searchable in tantivy.
    StaticReduce {
        /// The map entries per document and the results per reduce key.
        store: MapReduceStore,
        /// The reduce results, one entry per reduce key.
        results: Box<DocumentIndex>,
    },
}

/// Opens (or creates) the tantivy index of `definition` in `dir`.
fn open_search(dir: &Path, definition: &AutoIndexDefinition, slow_io: &SlowIoThreshold) -> Result<DocumentIndex, EngineError> {
    DocumentIndex::open_or_create_with(dir, &index_spec(definition), RecentSegments::InMemory, slow_io.clone())
        .map_err(|e| EngineError::Internal(e.to_string()))
}

impl IndexBackend {
    /// Opens (or creates) the backend the definition needs in `dir`.
    fn open(definition: &AutoIndexDefinition, dir: &Path, slow_io: &SlowIoThreshold) -> Result<IndexBackend, EngineError> {
        // Counters and time-series map indexes keep their entries in the map-reduce store too (one result per
        // entry, `batch_apply::identity_reduce`), so queries answer with the entries: items are not documents.
        let static_reduce = definition.static_index.as_ref().is_some_and(|s| s.reduce.is_some()) || definition.item_source().is_some();
        Ok(if static_reduce {
            // After a crash the worker rewrites results that are behind the store (`worker::resync_results`).
            let results = open_search(&dir.join("tantivy"), definition, slow_io)?;
            IndexBackend::StaticReduce {
                store: MapReduceStore::open(&dir.join("map-reduce"), slow_io.clone())?,
                results: Box::new(results),
            }
        } else if definition.is_map_reduce() {
            IndexBackend::Reduce(ReduceStore::open(&dir.join("reduce"), slow_io.clone())?)
        } else {
            IndexBackend::Search(Box::new(open_search(&dir.join("tantivy"), definition, slow_io)?))
        })
    }

    /// The etag up to which the backend's durable state reflects the documents.
    pub fn last_indexed_etag(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.last_indexed_etag(),
            IndexBackend::Reduce(store) => store.last_etag().unwrap_or(0),
            // Both are replayable from the older one (a replayed batch gives the same state).
            IndexBackend::StaticReduce { store, results } => store.last_etag().unwrap_or(0).min(results.last_indexed_etag()),
        }
    }

    /// Entries in the index (documents, or reduce keys).
    pub fn entries_count(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.entries_count(),
            IndexBackend::Reduce(store) => store.count().unwrap_or(0),
            IndexBackend::StaticReduce { results, .. } => results.entries_count(),
        }
    }

    /// Writes and fsyncs the tantivy commits held in memory (the LMDB stores commit durably already).
    pub fn checkpoint(&self) -> Result<(), EngineError> {
        let index = match self {
            IndexBackend::Search(index) => index,
            IndexBackend::StaticReduce { results, .. } => results,
            IndexBackend::Reduce(_) => return Ok(()),
        };
        index.checkpoint().map_err(|e| EngineError::Internal(e.to_string()))
    }

    /// A digest of the committed entries that does not depend on how they were committed
    /// (`corvid_index::EntriesDigest`; for automatic map-reduce indexes the same sum over the reduce rows).
    pub fn entries_digest(&self) -> Result<String, EngineError> {
        let index = match self {
            IndexBackend::Search(index) => index,
            IndexBackend::StaticReduce { results, .. } => results,
            IndexBackend::Reduce(store) => {
                let rows = store.rows()?;
                let mut digest = corvid_index::EntriesDigest { entries: rows.len() as u64, ..Default::default() };
                for row in rows {
                    let values: Vec<u8> = row.values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    digest.add(row.reduce_key.as_bytes(), "values", &values);
                }
                return Ok(digest.text());
            }
        };
        Ok(index.entries_digest().map_err(|e| EngineError::Internal(e.to_string()))?.text())
    }

    /// Bytes the backend's files take.
    pub fn size_on_disk(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.size_on_disk(),
            IndexBackend::Reduce(store) => store.size_on_disk(),
            IndexBackend::StaticReduce { store, results } => store.size_on_disk() + results.size_on_disk(),
        }
    }
}

/// The tantivy fields of an index definition.
fn index_spec(definition: &AutoIndexDefinition) -> IndexSpec {
    IndexSpec {
        fields: definition
            .fields
            .iter()
            .map(|f| FieldSpec {
                path: f.path.clone(),
                search: f.search,
                exact: f.exact,
                spatial: f.spatial,
                analyzer: f.analyzer.clone(),
                spatial_options: f.spatial_options,
                case_sensitive: f.case_sensitive,
                analyzed_only: f.analyzed_only,
            })
            .collect(),
    }
}

/// One index: what it computes, its entries, and the state its worker and the stats endpoints share.
pub struct IndexHandle {
    /// What the index computes.
    pub definition: AutoIndexDefinition,
    /// The index's own directory (a fresh one for every build from scratch).
    pub dir: PathBuf,
    /// Where the entries are.
    pub index: IndexBackend,
    /// Every document and tombstone up to this etag is reflected in the index (in memory; the durable
    /// value is the tantivy commit payload, which may lag while nothing relevant changes).
    pub processed_etag: AtomicU64,
    /// What the worker has done since it started.
    pub counters: IndexCounters,
    /// The latest errors, oldest first (a bounded list).
    pub errors: Mutex<VecDeque<IndexingError>>,
    /// What the worker is doing now, for the stats endpoints.
    pub status: Mutex<String>,
    /// When the handle was opened, in nanoseconds since the Unix epoch.
    pub created_at: i64,
    /// When a query last used the index, in nanoseconds since the Unix epoch (0: never).
    pub last_query_time: AtomicI64,
    /// Set when a worker batch failed as a whole (not a single document).
    pub faulted: Mutex<Option<String>>,
    /// A failing checkpoint was recorded in `errors` (reported once until one succeeds).
    pub checkpoint_failure_reported: Mutex<bool>,
    /// Disabled / paused, priority, lock mode.
    pub control: IndexControl,
    /// Static indexes: the documents each mapped document loaded.
    pub references: Option<ReferenceStore>,
    /// Map-reduce indexes with `OutputReduceToCollection`: where their results are written as documents.
    pub output: Option<ReduceOutput>,
    /// The output documents must be compared with the stored results (at start, after a failed write).
    pub output_resync: AtomicBool,
    /// The last batches' counts and timings (`/indexes/performance`).
    pub performance: PerformanceHistory,
    /// Records what the worker consumes while an indexing trace is on.
    pub trace: TraceRecorder,
    stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl IndexHandle {
    /// Opens the index kept in `dir` (creating what is missing); its worker is started separately.
    pub(super) fn open(definition: AutoIndexDefinition, dir: &Path, slow_io: &SlowIoThreshold) -> Result<IndexHandle, EngineError> {
        let index = IndexBackend::open(&definition, dir, slow_io)?;
        let static_reduce = matches!(index, IndexBackend::StaticReduce { .. });
        let output = if static_reduce { ReduceOutput::of(&definition) } else { None };
        let is_static = definition.is_static();
        Ok(IndexHandle {
            processed_etag: AtomicU64::new(index.last_indexed_etag()),
            definition,
            dir: dir.to_owned(),
            index,
            counters: IndexCounters::default(),
            errors: Mutex::new(VecDeque::new()),
            status: Mutex::new("Starting".into()),
            created_at: corvid_types::now_nanos(),
            last_query_time: AtomicI64::new(0),
            faulted: Mutex::new(None),
            checkpoint_failure_reported: Mutex::new(false),
            control: IndexControl::load(dir),
            references: if is_static { Some(ReferenceStore::open(&dir.join("references"))?) } else { None },
            output,
            output_resync: AtomicBool::new(true),
            performance: PerformanceHistory::default(),
            trace: TraceRecorder::default(),
            stop: AtomicBool::new(false),
            worker: Mutex::new(None),
        })
    }

    /// The name clients see: the definition's, prefixed while the index is a side-by-side replacement.
    pub fn name(&self) -> String {
        if self.control.is_replacement() {
            format!("{REPLACEMENT_PREFIX}{}", self.definition.name)
        } else {
            self.definition.name.clone()
        }
    }

    /// The index is being deleted or the database closed: its worker must end.
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Keeps an error for `GET /indexes/errors`, dropping the oldest once the list is full.
    pub fn record_error(&self, error: IndexingError) {
        let mut errors = self.errors.lock();
        if errors.len() >= MAX_KEPT_ERRORS {
            errors.pop_front();
        }
        errors.push_back(error);
    }

    /// The map and reduce attempts so far and how many failed.
    pub fn attempts(&self) -> Attempts {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Attempts {
            map_attempts: load(&self.counters.map_attempts),
            map_errors: load(&self.counters.map_errors),
            reduce_attempts: load(&self.counters.reduce_attempts),
            reduce_errors: load(&self.counters.reduce_errors),
        }
    }

    /// Forgets the map and reduce attempts (an errored index enabled again starts its count afresh).
    pub fn clear_attempts(&self) {
        let counters = &self.counters;
        for counter in
            [&counters.map_attempts, &counters.map_successes, &counters.map_errors, &counters.reduce_attempts, &counters.reduce_errors]
        {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Marks the index errored when it has failed too often (`failure.rs`); true when it is errored.
    pub fn error_if_failing(&self, caught_up: bool) -> bool {
        if self.control.is_errored() {
            return true;
        }
        let attempts = self.attempts();
        if !attempts.make_index_errored(caught_up) {
            return false;
        }
        let reason = attempts.explain(&self.name());
        tracing::warn!(index = %self.name(), %reason, "index errored: it stops indexing until it is reset, enabled or redefined");
        if let Err(e) = self.control.set_errored(&self.dir, reason) {
            tracing::warn!(index = %self.name(), error = %e, "could not save the errored state; it holds until restart");
        }
        true
    }

    /// Keeps the worker's thread, to be joined when the index stops.
    pub(super) fn set_worker(&self, thread: JoinHandle<()>) {
        *self.worker.lock() = Some(thread);
    }

    /// Tells the worker to end, wakes it and waits for it.
    pub(super) fn stop_and_join(&self, watch: &CommitWatch) {
        self.stop.store(true, Ordering::Relaxed);
        watch.wake_all();
        if let Some(thread) = self.worker.lock().take() {
            let _ = thread.join();
        }
    }
}
