//! The indexes of one database: their definitions on disk, their tantivy indexes, their worker threads.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use corvid_index::{DocumentIndex, FieldSpec, IndexSpec};
use corvid_storage::{MapReduceStore, ReduceStore, ReferenceStore, Store};
use parking_lot::{Mutex, RwLock};

use super::control::IndexControl;
use super::definition::{Aggregation, AutoIndexDefinition, AutoIndexField};
use super::worker;
use crate::commit_watch::CommitWatch;
use crate::EngineError;

const DEFINITION_FILE: &str = "definition.json";
const MAX_KEPT_ERRORS: usize = 500;

#[derive(Debug, Clone)]
pub struct IndexingError {
    pub document: String,
    pub message: String,
    pub at: i64,
    pub action: String,
}

#[derive(Default)]
pub struct IndexCounters {
    pub map_attempts: AtomicU64,
    pub map_successes: AtomicU64,
    pub map_errors: AtomicU64,
    pub batches: AtomicU64,
    pub last_indexing_time: AtomicI64,
}

/// Where an index keeps its entries: a tantivy index (map), reduce values (automatic map-reduce), or map
/// entries and reduce results with a tantivy index over the results (static map-reduce).
pub enum IndexBackend {
    Search(Box<DocumentIndex>),
    Reduce(ReduceStore),
    StaticReduce { store: MapReduceStore, results: Box<DocumentIndex> },
}

impl IndexBackend {
    pub fn last_indexed_etag(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.last_indexed_etag(),
            IndexBackend::Reduce(store) => store.last_etag().unwrap_or(0),
            // Both are replayable from the older one (a replayed batch gives the same state).
            IndexBackend::StaticReduce { store, results } => store.last_etag().unwrap_or(0).min(results.last_indexed_etag()),
        }
    }

    pub fn entries_count(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.entries_count(),
            IndexBackend::Reduce(store) => store.count().unwrap_or(0),
            IndexBackend::StaticReduce { results, .. } => results.entries_count(),
        }
    }

    pub fn size_on_disk(&self) -> u64 {
        match self {
            IndexBackend::Search(index) => index.size_on_disk(),
            IndexBackend::Reduce(store) => store.size_on_disk(),
            IndexBackend::StaticReduce { store, results } => store.size_on_disk() + results.size_on_disk(),
        }
    }
}

pub struct IndexHandle {
    pub definition: AutoIndexDefinition,
    pub dir: PathBuf,
    pub index: IndexBackend,
    /// Every document and tombstone up to this etag is reflected in the index (in memory; the durable
    /// value is the tantivy commit payload, which may lag while nothing relevant changes).
    pub processed_etag: AtomicU64,
    pub counters: IndexCounters,
    pub errors: Mutex<VecDeque<IndexingError>>,
    /// What the worker is doing now, for the stats endpoints.
    pub status: Mutex<String>,
    pub created_at: i64,
    pub last_query_time: AtomicI64,
    /// Set when a worker batch failed as a whole (not a single document).
    pub faulted: Mutex<Option<String>>,
    /// Disabled / paused, priority, lock mode.
    pub control: IndexControl,
    /// Static indexes: the documents each mapped document loaded.
    pub references: Option<ReferenceStore>,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl IndexHandle {
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn record_error(&self, error: IndexingError) {
        let mut errors = self.errors.lock();
        if errors.len() >= MAX_KEPT_ERRORS {
            errors.pop_front();
        }
        errors.push_back(error);
    }

    fn stop_and_join(&self, watch: &CommitWatch) {
        self.stop.store(true, Ordering::Relaxed);
        watch.wake_all();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

/// When unused automatic indexes are marked idle and then deleted.
#[derive(Debug, Clone, Copy)]
pub struct AutoIndexLifetimes {
    pub idle_after: Duration,
    pub delete_after: Duration,
}

pub struct IndexRegistry {
    /// Indexing of the whole database is stopped (`/admin/indexes/stop` without a name); new indexes start
    /// paused too.
    pub all_paused: AtomicBool,
    lifetimes: AutoIndexLifetimes,
    stopping: AtomicBool,
    housekeeper: Mutex<Option<JoinHandle<()>>>,
    dir: PathBuf,
    store: Arc<Store>,
    watch: Arc<CommitWatch>,
    indexes: RwLock<Vec<Arc<IndexHandle>>>,
    /// Serialises creation so two queries needing the same new index create it once.
    create_lock: Mutex<()>,
}

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
            })
            .collect(),
    }
}

fn directory_name(name: &str) -> String {
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).take(80).collect();
    format!("{safe}-{:08x}", crate::reads::VersionHasher::of(name) as u32)
}

impl IndexRegistry {
    /// Opens every index found under `dir` and starts its worker. An index that cannot be opened is
    /// rebuilt from the documents, never fatal to the database.
    pub fn open(
        dir: &Path,
        store: Arc<Store>,
        watch: Arc<CommitWatch>,
        lifetimes: AutoIndexLifetimes,
    ) -> Result<Arc<IndexRegistry>, EngineError> {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        let registry = Arc::new(IndexRegistry {
            all_paused: AtomicBool::new(false),
            lifetimes,
            stopping: AtomicBool::new(false),
            housekeeper: Mutex::new(None),
            dir: dir.to_owned(),
            store,
            watch,
            indexes: RwLock::new(Vec::new()),
            create_lock: Mutex::new(()),
        });
        let entries = std::fs::read_dir(dir).map_err(|e| EngineError::Internal(format!("cannot list {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(path.join(DEFINITION_FILE)) else { continue };
            let definition: AutoIndexDefinition = match serde_json::from_str(&text) {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "unreadable index definition; skipping it");
                    continue;
                }
            };
            match registry.start(definition.clone(), &path) {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(index = %definition.name, error = %e, "index could not be opened; rebuilding it");
                    let _ = std::fs::remove_dir_all(&path);
                    registry.start(definition, &path)?;
                }
            }
        }
        let weak = Arc::downgrade(&registry);
        let housekeeper = std::thread::Builder::new()
            .name("index-housekeeping".into())
            .spawn(move || housekeeping(&weak, lifetimes))
            .map_err(|e| EngineError::Internal(format!("cannot start index housekeeping: {e}")))?;
        *registry.housekeeper.lock() = Some(housekeeper);
        Ok(registry)
    }

    /// Whether an index has gone unqueried long enough to be idle.
    pub fn is_idle(&self, handle: &IndexHandle) -> bool {
        !handle.definition.is_static() && unused_for(handle) > self.lifetimes.idle_after
    }

    fn start(self: &Arc<Self>, definition: AutoIndexDefinition, dir: &Path) -> Result<Arc<IndexHandle>, EngineError> {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        let definition_json = serde_json::to_string_pretty(&definition).map_err(|e| EngineError::Internal(e.to_string()))?;
        std::fs::write(dir.join(DEFINITION_FILE), definition_json).map_err(|e| EngineError::Internal(e.to_string()))?;
        let static_reduce = definition.static_index.as_ref().is_some_and(|s| s.reduce.is_some());
        let handle_is_static = definition.is_static();
        let index = if static_reduce {
            let results = DocumentIndex::open_or_create(&dir.join("tantivy"), &index_spec(&definition))
                .map_err(|e| EngineError::Internal(e.to_string()))?;
            IndexBackend::StaticReduce { store: MapReduceStore::open(&dir.join("map-reduce"))?, results: Box::new(results) }
        } else if definition.is_map_reduce() {
            IndexBackend::Reduce(ReduceStore::open(&dir.join("reduce"))?)
        } else {
            let index = DocumentIndex::open_or_create(&dir.join("tantivy"), &index_spec(&definition))
                .map_err(|e| EngineError::Internal(e.to_string()))?;
            IndexBackend::Search(Box::new(index))
        };
        let handle = Arc::new(IndexHandle {
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
            control: IndexControl::load(dir),
            references: if handle_is_static { Some(ReferenceStore::open(&dir.join("references"))?) } else { None },
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        if self.all_paused.load(Ordering::Relaxed) {
            handle.control.set_paused(true);
        }
        let weak: Weak<IndexRegistry> = Arc::downgrade(self);
        let (h, store, watch) = (handle.clone(), self.store.clone(), self.watch.clone());
        let thread = std::thread::Builder::new()
            .name(format!("index:{}", handle.definition.name))
            .spawn(move || worker::run(&h, &store, &watch, &weak))
            .map_err(|e| EngineError::Internal(format!("cannot start indexing thread: {e}")))?;
        *handle.thread.lock() = Some(thread);
        self.indexes.write().push(handle.clone());
        Ok(handle)
    }

    pub fn all(&self) -> Vec<Arc<IndexHandle>> {
        self.indexes.read().clone()
    }

    pub fn get(&self, name: &str) -> Option<Arc<IndexHandle>> {
        self.indexes.read().iter().find(|h| h.definition.name.eq_ignore_ascii_case(name)).cloned()
    }

    /// An index that answers a query on `collection` needing `needed`: an existing one that covers it, or
    /// a new one (extending the widest partial match, as RavenDB does). Returns the handle and whether it
    /// was just created.
    pub fn find_or_create(self: &Arc<Self>, collection: &str, needed: &[AutoIndexField]) -> Result<(Arc<IndexHandle>, bool), EngineError> {
        if let Some(found) = self.find_covering(collection, needed) {
            return Ok((found, false));
        }
        let _guard = self.create_lock.lock();
        if let Some(found) = self.find_covering(collection, needed) {
            return Ok((found, false));
        }
        let base = self
            .all()
            .into_iter()
            .filter(|h| {
                !h.definition.is_map_reduce() && !h.definition.is_static() && h.definition.collection.eq_ignore_ascii_case(collection)
            })
            .max_by_key(|h| h.definition.fields.len());
        let definition = match base {
            Some(base) => base.definition.extended_with(needed),
            None => AutoIndexDefinition::new(collection, needed.to_vec()),
        };
        let dir = self.dir.join(directory_name(&definition.name));
        let _ = std::fs::remove_dir_all(&dir);
        tracing::info!(index = %definition.name, "creating automatic index");
        Ok((self.start(definition, &dir)?, true))
    }

    /// The map-reduce index for a `group by` query, created (or extended with more aggregations) on demand.
    pub fn find_or_create_reduce(
        self: &Arc<Self>,
        collection: &str,
        group_by: &[String],
        aggregations: &[Aggregation],
    ) -> Result<(Arc<IndexHandle>, bool), EngineError> {
        let find = || self.all().into_iter().find(|h| h.definition.covers_reduce(collection, group_by, aggregations));
        if let Some(found) = find() {
            return Ok((found, false));
        }
        let _guard = self.create_lock.lock();
        if let Some(found) = find() {
            return Ok((found, false));
        }
        let mut wanted: Vec<Aggregation> = aggregations.to_vec();
        // Extend an index with the same reduce key by the union of aggregations.
        if let Some(base) = self.all().into_iter().find(|h| h.definition.covers_reduce(collection, group_by, &[])) {
            wanted.extend(base.definition.aggregations.iter().cloned());
        }
        let definition = AutoIndexDefinition::map_reduce(collection, group_by.to_vec(), wanted);
        let dir = self.dir.join(directory_name(&definition.name));
        let _ = std::fs::remove_dir_all(&dir);
        tracing::info!(index = %definition.name, "creating automatic map-reduce index");
        Ok((self.start(definition, &dir)?, true))
    }

    /// Creates a static index, or replaces one of the same name whose definition differs (the new one is
    /// built from scratch). Returns false when an identical definition already exists.
    pub fn put_static(self: &Arc<Self>, definition: AutoIndexDefinition) -> Result<bool, EngineError> {
        let _guard = self.create_lock.lock();
        if let Some(existing) = self.get(&definition.name) {
            if existing.definition == definition {
                return Ok(false);
            }
            match existing.control.lock_mode().as_str() {
                "LockedIgnore" => return Ok(false),
                "LockedError" => {
                    return Err(EngineError::IndexCompilation {
                        message: format!("Index '{}' is locked (LockedError); unlock it before changing its definition", definition.name),
                    })
                }
                _ => {}
            }
            if !existing.definition.is_static() {
                return Err(EngineError::IndexCompilation {
                    message: format!("Index '{}' is an automatic index; a static index cannot replace it", definition.name),
                });
            }
            self.delete(&definition.name);
        }
        let dir = self.dir.join(directory_name(&definition.name));
        let _ = std::fs::remove_dir_all(&dir);
        tracing::info!(index = %definition.name, "creating static index");
        self.start(definition, &dir)?;
        Ok(true)
    }

    fn find_covering(&self, collection: &str, needed: &[AutoIndexField]) -> Option<Arc<IndexHandle>> {
        self.indexes
            .read()
            .iter()
            .filter(|h| h.definition.covers(collection, needed))
            .max_by_key(|h| (h.processed_etag.load(Ordering::Relaxed), h.definition.fields.len()))
            .cloned()
    }

    /// Deletes an index and its files; false when it did not exist.
    pub fn delete(&self, name: &str) -> bool {
        let removed = {
            let mut indexes = self.indexes.write();
            let position = indexes.iter().position(|h| h.definition.name.eq_ignore_ascii_case(name));
            position.map(|p| indexes.remove(p))
        };
        match removed {
            Some(handle) => {
                handle.stop_and_join(&self.watch);
                if let Err(e) = std::fs::remove_dir_all(&handle.dir) {
                    tracing::warn!(index = %handle.definition.name, error = %e, "could not remove index files");
                }
                tracing::info!(index = %handle.definition.name, "index deleted");
                true
            }
            None => false,
        }
    }

    /// Drops an index's data and rebuilds it from the documents.
    pub fn reset(self: &Arc<Self>, name: &str) -> Result<bool, EngineError> {
        let Some(handle) = self.get(name) else { return Ok(false) };
        let definition = handle.definition.clone();
        let dir = handle.dir.clone();
        // The old handle must be gone before the new one opens the same LMDB environments.
        drop(handle);
        self.delete(name);
        self.start(definition, &dir)?;
        Ok(true)
    }

    /// Removes narrower automatic indexes of the same collection once `wider` has caught up.
    pub fn retire_superseded(&self, wider: &AutoIndexDefinition) {
        let narrower: Vec<String> = self
            .all()
            .iter()
            .filter(|h| {
                h.definition.name != wider.name
                    && !h.definition.is_static()
                    && if wider.is_map_reduce() {
                        wider.covers_reduce(&h.definition.collection, &h.definition.group_by, &h.definition.aggregations)
                    } else {
                        !h.definition.is_map_reduce() && wider.covers(&h.definition.collection, &h.definition.fields)
                    }
            })
            .map(|h| h.definition.name.clone())
            .collect();
        for name in narrower {
            tracing::info!(index = %name, replaced_by = %wider.name, "retiring superseded automatic index");
            self.delete(&name);
        }
    }

    /// Stops every worker (at database close).
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(thread) = self.housekeeper.lock().take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
        for handle in self.all() {
            handle.stop_and_join(&self.watch);
        }
    }
}

/// How long since the index was last queried (or created, if never).
fn unused_for(handle: &IndexHandle) -> Duration {
    let last_used = handle.last_query_time.load(Ordering::Relaxed).max(handle.created_at);
    Duration::from_nanos(u64::try_from(corvid_types::now_nanos() - last_used).unwrap_or(0))
}

/// Deletes automatic indexes that stayed idle past their lifetime.
fn housekeeping(registry: &Weak<IndexRegistry>, lifetimes: AutoIndexLifetimes) {
    let tick = (lifetimes.idle_after / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    loop {
        std::thread::park_timeout(tick);
        let Some(registry) = registry.upgrade() else { return };
        if registry.stopping.load(Ordering::Relaxed) {
            return;
        }
        for handle in registry.all() {
            if !handle.definition.is_static() && unused_for(&handle) > lifetimes.idle_after + lifetimes.delete_after {
                tracing::info!(index = %handle.definition.name, "deleting automatic index that stayed idle");
                registry.delete(&handle.definition.name);
            }
        }
    }
}
