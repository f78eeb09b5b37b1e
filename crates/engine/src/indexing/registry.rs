//! The indexes of one database: their definitions on disk, their tantivy indexes, their worker threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use corvid_storage::{Store, TransactionMerger};
use parking_lot::{Mutex, RwLock};

use super::aggregation::Aggregation;
use super::control::{IndexControl, CONTROL_FILE};
use super::definition::AutoIndexDefinition;
use super::field::AutoIndexField;
use super::handle::{IndexHandle, REPLACEMENT_PREFIX};
use super::worker::{self, WorkerListener};
use crate::changes::IndexChangeKind;
use crate::commit_watch::CommitWatch;
use crate::version_hasher::VersionHasher;
use crate::EngineError;

const DEFINITION_FILE: &str = "definition.json";

/// When unused automatic indexes are marked idle and then deleted.
#[derive(Debug, Clone, Copy)]
pub struct AutoIndexLifetimes {
    /// Unqueried this long, an automatic index is idle.
    pub idle_after: Duration,
    /// Idle this much longer, it is deleted.
    pub delete_after: Duration,
}

/// The indexes of one database: it opens them, creates automatic ones on demand, replaces, resets and
/// deletes them, and owns their worker threads.
pub struct IndexRegistry {
    /// Indexing of the whole database is stopped (`/admin/indexes/stop` without a name); new indexes start
    /// paused too.
    pub all_paused: AtomicBool,
    lifetimes: AutoIndexLifetimes,
    stopping: AtomicBool,
    housekeeper: Mutex<Option<JoinHandle<()>>>,
    dir: PathBuf,
    store: Arc<Store>,
    /// Map-reduce output documents are written through the database's merger like any other write.
    merger: Arc<TransactionMerger>,
    watch: Arc<CommitWatch>,
    indexes: RwLock<Vec<Arc<IndexHandle>>>,
    /// Serialises creation so two queries needing the same new index create it once.
    create_lock: Mutex<()>,
    /// Tells the Changes API what happened to an index (batches, errors, swaps).
    announce: IndexAnnouncer,
}

/// Where the registry reports what happened to its indexes (the database's Changes API hub).
pub type IndexAnnouncer = Arc<dyn Fn(&str, IndexChangeKind) + Send + Sync>;

/// A directory name for an index: its name made safe for file systems, and a hash telling apart names that
/// become the same.
fn directory_name(name: &str) -> String {
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).take(80).collect();
    format!("{safe}-{:08x}", VersionHasher::of(name) as u32)
}

impl IndexRegistry {
    /// Opens every index found under `dir` and starts its worker. An index that cannot be opened is
    /// rebuilt from the documents, never fatal to the database.
    pub fn open(
        dir: &Path,
        store: Arc<Store>,
        merger: Arc<TransactionMerger>,
        watch: Arc<CommitWatch>,
        lifetimes: AutoIndexLifetimes,
        announce: IndexAnnouncer,
    ) -> Result<Arc<IndexRegistry>, EngineError> {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        let registry = Arc::new(IndexRegistry {
            all_paused: AtomicBool::new(false),
            lifetimes,
            stopping: AtomicBool::new(false),
            housekeeper: Mutex::new(None),
            dir: dir.to_owned(),
            store,
            merger,
            watch,
            indexes: RwLock::new(Vec::new()),
            create_lock: Mutex::new(()),
            announce,
        });
        let entries = std::fs::read_dir(dir).map_err(|e| EngineError::Internal(format!("cannot list {}: {e}", dir.display())))?;
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(path.join(DEFINITION_FILE)) else { continue };
            match serde_json::from_str::<AutoIndexDefinition>(&text) {
                Ok(definition) => found.push((definition, path)),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "unreadable index definition; skipping it"),
            }
        }
        // Held while opening: a caught-up replacement must not swap itself in before the index it replaces
        // is registered (`promote` only tries the lock).
        let opening = registry.create_lock.lock();
        for (definition, path) in resolve_generations(found) {
            match registry.start(definition.clone(), &path) {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(index = %definition.name, error = %e, "index could not be opened; rebuilding it");
                    // The control state (replacement, generation, lock mode) outlives the rebuild.
                    let control = std::fs::read(path.join(CONTROL_FILE)).ok();
                    let _ = std::fs::remove_dir_all(&path);
                    if let Some(control) = control {
                        let _ = std::fs::create_dir_all(&path);
                        let _ = std::fs::write(path.join(CONTROL_FILE), control);
                    }
                    registry.start(definition, &path)?;
                }
            }
        }
        drop(opening);
        let weak = Arc::downgrade(&registry);
        let housekeeper = std::thread::Builder::new()
            .name("index-housekeeping".into())
            .spawn(move || housekeeping(&weak, lifetimes))
            .map_err(|e| EngineError::Internal(format!("cannot start index housekeeping: {e}")))?;
        *registry.housekeeper.lock() = Some(housekeeper);
        Ok(registry)
    }

    /// A new directory for an index built from scratch (created, replaced side by side or reset). Never the
    /// directory of an earlier index of that name: a query may still hold that one, and with it its LMDB
    /// environments, which cannot be opened twice.
    fn fresh_dir(&self, name: &str) -> PathBuf {
        self.dir.join(directory_name(&format!("{name}@{}", corvid_types::now_nanos())))
    }

    /// Whether an index has gone unqueried long enough to be idle.
    pub fn is_idle(&self, handle: &IndexHandle) -> bool {
        !handle.definition.is_static() && unused_for(handle) > self.lifetimes.idle_after
    }

    fn start(self: &Arc<Self>, definition: AutoIndexDefinition, dir: &Path) -> Result<Arc<IndexHandle>, EngineError> {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        let definition_json = serde_json::to_string_pretty(&definition).map_err(|e| EngineError::Internal(e.to_string()))?;
        std::fs::write(dir.join(DEFINITION_FILE), definition_json).map_err(|e| EngineError::Internal(e.to_string()))?;
        let handle = Arc::new(IndexHandle::open(definition, dir, self.store.io_metrics().shared_slow_threshold())?);
        if self.all_paused.load(Ordering::Relaxed) {
            handle.control.set_paused(true);
        }
        let registry: Weak<IndexRegistry> = Arc::downgrade(self);
        let registry: Weak<dyn WorkerListener> = registry;
        let (h, store, merger, watch) = (handle.clone(), self.store.clone(), self.merger.clone(), self.watch.clone());
        let thread = std::thread::Builder::new()
            .name(format!("index:{}", handle.definition.name))
            .spawn(move || worker::run(&h, &store, &merger, &watch, &registry))
            .map_err(|e| EngineError::Internal(format!("cannot start indexing thread: {e}")))?;
        handle.set_worker(thread);
        self.indexes.write().push(handle.clone());
        Ok(handle)
    }

    /// Every index, replacements included.
    pub fn all(&self) -> Vec<Arc<IndexHandle>> {
        self.indexes.read().clone()
    }

    /// The index of that name; `ReplacementOf/<name>` finds the replacement being built for it.
    pub fn get(&self, name: &str) -> Option<Arc<IndexHandle>> {
        let (name, replacement) = split_replacement(name);
        self.indexes
            .read()
            .iter()
            .find(|h| h.definition.name.eq_ignore_ascii_case(name) && h.control.is_replacement() == replacement)
            .cloned()
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
        let (definition, _) = self.map_index_to_create(collection, needed);
        definition.check_auto_limits()?;
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
        if let Some(found) = self.find_covering_reduce(collection, group_by, aggregations) {
            return Ok((found, false));
        }
        let _guard = self.create_lock.lock();
        if let Some(found) = self.find_covering_reduce(collection, group_by, aggregations) {
            return Ok((found, false));
        }
        let (definition, _) = self.reduce_index_to_create(collection, group_by, aggregations);
        definition.check_auto_limits()?;
        let dir = self.dir.join(directory_name(&definition.name));
        let _ = std::fs::remove_dir_all(&dir);
        tracing::info!(index = %definition.name, "creating automatic map-reduce index");
        Ok((self.start(definition, &dir)?, true))
    }

    /// Creates a static index, or starts building a replacement side by side when an index of that name
    /// computes something else (the old one answers queries until the replacement catches up, see
    /// `promote`). Returns false when nothing changes.
    pub fn put_static(self: &Arc<Self>, definition: AutoIndexDefinition) -> Result<bool, EngineError> {
        let _guard = self.create_lock.lock();
        let Some(existing) = self.get(&definition.name) else {
            let dir = self.fresh_dir(&definition.name);
            tracing::info!(index = %definition.name, "creating static index");
            self.start(definition, &dir)?;
            return Ok(true);
        };
        if !existing.definition.is_static() {
            return Err(EngineError::IndexCompilation {
                message: format!("Index '{}' is an automatic index; a static index cannot replace it", definition.name),
            });
        }
        if same_static(&existing.definition, &definition) {
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
        let mut generation = existing.control.generation() + 1;
        if let Some(pending) = self.get(&format!("{REPLACEMENT_PREFIX}{}", definition.name)) {
            if same_static(&pending.definition, &definition) {
                return Ok(false);
            }
            // A newer definition replaces the replacement being built.
            self.delete_handle(&pending);
            generation = generation.max(pending.control.generation() + 1);
        }
        let dir = self.fresh_dir(&definition.name);
        std::fs::create_dir_all(&dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        IndexControl::create_replacement(&dir, &existing.control, generation)?;
        tracing::info!(index = %definition.name, generation, "building a replacement side by side");
        self.start(definition, &dir)?;
        Ok(true)
    }

    /// Swaps a caught-up replacement in for the index of its name, then deletes the replaced index and its
    /// files. Queries see the old index or the new one, never neither. Called by the replacement's worker;
    /// false when the swap must wait (a definition change or delete is in progress).
    pub fn promote(&self, replacement: &IndexHandle) -> Result<bool, EngineError> {
        // A put or delete holding the lock may be joining this very worker: never wait for it.
        let Some(_guard) = self.create_lock.try_lock() else { return Ok(false) };
        if replacement.should_stop() || !replacement.control.is_replacement() {
            return Ok(false);
        }
        let old = self.get(&replacement.definition.name);
        // Durable first: after a crash from here on, the higher generation wins (`resolve_generations`).
        replacement.control.promote(&replacement.dir)?;
        {
            let mut indexes = self.indexes.write();
            if let Some(old) = &old {
                indexes.retain(|h| !Arc::ptr_eq(h, old));
            }
            replacement.control.show_promoted();
        }
        if let Some(old) = old {
            self.retire(&old);
        }
        tracing::info!(index = %replacement.definition.name, "replacement caught up and took the place of the index");
        Ok(true)
    }

    /// The automatic index a map query that no index covers creates: the widest automatic index of the
    /// collection extended with the query's fields (returned too), or a new one.
    pub(super) fn map_index_to_create(
        &self,
        collection: &str,
        needed: &[AutoIndexField],
    ) -> (AutoIndexDefinition, Option<Arc<IndexHandle>>) {
        let base = self.all().into_iter().filter(|h| h.definition.is_auto_map_of(collection)).max_by_key(|h| h.definition.fields.len());
        match base {
            // An index grown past the limits by many queries is not extended: the query gets one of its own.
            Some(base) if base.definition.extended_with(needed).check_auto_limits().is_ok() => {
                (base.definition.extended_with(needed), Some(base))
            }
            _ => (AutoIndexDefinition::new(collection, needed.to_vec()), None),
        }
    }

    /// The automatic map-reduce index a `group by` query that no index covers creates: the index with the same
    /// reduce key (returned too) extended with the query's aggregations, or a new one.
    pub(super) fn reduce_index_to_create(
        &self,
        collection: &str,
        group_by: &[String],
        aggregations: &[Aggregation],
    ) -> (AutoIndexDefinition, Option<Arc<IndexHandle>>) {
        let mut wanted: Vec<Aggregation> = aggregations.to_vec();
        let base = self.all().into_iter().find(|h| h.definition.covers_reduce(collection, group_by, &[]));
        if let Some(base) = &base {
            wanted.extend(base.definition.aggregations.iter().cloned());
        }
        (AutoIndexDefinition::map_reduce(collection, group_by.to_vec(), wanted), base)
    }

    /// The automatic map-reduce index that answers this `group by` as it is, if there is one.
    pub(super) fn find_covering_reduce(
        &self,
        collection: &str,
        group_by: &[String],
        aggregations: &[Aggregation],
    ) -> Option<Arc<IndexHandle>> {
        self.all().into_iter().find(|h| h.definition.covers_reduce(collection, group_by, aggregations))
    }

    /// The automatic map index that covers the query as it is, if there is one: of several, the one that has
    /// indexed the most, then the widest.
    pub(super) fn find_covering(&self, collection: &str, needed: &[AutoIndexField]) -> Option<Arc<IndexHandle>> {
        self.indexes
            .read()
            .iter()
            .filter(|h| h.definition.covers(collection, needed))
            .max_by_key(|h| (h.processed_etag.load(Ordering::Relaxed), h.definition.fields.len()))
            .cloned()
    }

    /// Deletes an index and its files (and the replacement being built for it); false when it did not exist.
    pub fn delete(&self, name: &str) -> bool {
        let Some(handle) = self.get(name) else { return false };
        if !handle.control.is_replacement() {
            if let Some(pending) = self.get(&format!("{REPLACEMENT_PREFIX}{}", handle.definition.name)) {
                self.delete_handle(&pending);
            }
        }
        self.delete_handle(&handle);
        true
    }

    fn delete_handle(&self, handle: &Arc<IndexHandle>) {
        let removed = {
            let mut indexes = self.indexes.write();
            let before = indexes.len();
            indexes.retain(|h| !Arc::ptr_eq(h, handle));
            indexes.len() != before
        };
        if removed {
            self.retire(handle);
        }
    }

    /// Stops the worker of an index no longer registered and removes its files.
    fn retire(&self, handle: &IndexHandle) {
        handle.stop_and_join(&self.watch);
        if let Some(output) = &handle.output {
            // Its output documents go with it (a replacement writes its own, under another prefix).
            if let Err(e) = output.delete_all(&self.merger) {
                tracing::warn!(index = %handle.name(), error = %e, "could not delete the index's output documents");
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&handle.dir) {
            tracing::warn!(index = %handle.name(), error = %e, "could not remove index files");
        }
        tracing::info!(index = %handle.name(), "index deleted");
    }

    /// Drops an index's data and rebuilds it from the documents (a replacement being built stays).
    pub fn reset(self: &Arc<Self>, name: &str) -> Result<bool, EngineError> {
        let Some(handle) = self.get(name) else { return Ok(false) };
        let definition = handle.definition.clone();
        let dir = self.fresh_dir(&definition.name);
        // Lock mode, priority and the replacement state survive a reset (the errored state does not).
        std::fs::create_dir_all(&dir).map_err(|e| EngineError::Internal(format!("cannot create {}: {e}", dir.display())))?;
        IndexControl::carry_over(&handle.dir, &dir)?;
        self.delete_handle(&handle);
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

impl WorkerListener for IndexRegistry {
    fn caught_up(&self, index: &IndexHandle) {
        self.retire_superseded(&index.definition);
    }

    fn ready_to_swap(&self, replacement: &IndexHandle) -> Result<bool, EngineError> {
        let swapped = self.promote(replacement)?;
        if swapped {
            (self.announce)(&replacement.definition.name, IndexChangeKind::SideBySideReplace);
        }
        Ok(swapped)
    }

    fn index_changed(&self, index: &IndexHandle, kind: IndexChangeKind) {
        (self.announce)(&index.name(), kind);
    }
}

/// `ReplacementOf/<name>` as (`<name>`, true); any other name as (name, false).
fn split_replacement(name: &str) -> (&str, bool) {
    match name.get(..REPLACEMENT_PREFIX.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(REPLACEMENT_PREFIX) => (&name[REPLACEMENT_PREFIX.len()..], true),
        _ => (name, false),
    }
}

/// Whether two static definitions compute the same index.
fn same_static(a: &AutoIndexDefinition, b: &AutoIndexDefinition) -> bool {
    match (&a.static_index, &b.static_index) {
        (Some(x), Some(y)) => x.computes_same_as(y),
        _ => a == b,
    }
}

/// Of the directories found at open, keeps one index and at most one replacement per name: a crash in the
/// middle of a swap leaves two directories claiming a name, and the higher generation is the newer one.
/// A replacement whose index is gone (a crash while deleting) becomes the index. The others are removed.
fn resolve_generations(found: Vec<(AutoIndexDefinition, PathBuf)>) -> Vec<(AutoIndexDefinition, PathBuf)> {
    use std::collections::HashMap;
    // Equal generations (an index deleted and created again, whose old files could not be removed) are
    // ordered by when the definition was written: the later one is current.
    type Rank = (u64, std::time::SystemTime);
    let mut best: HashMap<(String, bool), (Rank, AutoIndexDefinition, PathBuf)> = HashMap::new();
    for (definition, path) in found {
        let control = IndexControl::load(&path);
        let slot = (definition.name.to_lowercase(), control.is_replacement());
        let written = std::fs::metadata(path.join(DEFINITION_FILE)).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
        let generation = (control.generation(), written);
        match best.get(&slot) {
            Some((kept, _, _)) if *kept >= generation => {
                tracing::warn!(index = %definition.name, path = %path.display(), "removing an older generation of the index");
                let _ = std::fs::remove_dir_all(&path);
            }
            _ => {
                if let Some((_, _, older)) = best.insert(slot, (generation, definition, path)) {
                    tracing::warn!(path = %older.display(), "removing an older generation of the index");
                    let _ = std::fs::remove_dir_all(&older);
                }
            }
        }
    }
    let mut out = Vec::new();
    let names: Vec<(String, bool)> = best.keys().cloned().collect();
    for (name, replacement) in names {
        if !replacement {
            continue;
        }
        let main_generation = best.get(&(name.clone(), false)).map(|((g, _), _, _)| *g);
        let Some((rank, definition, path)) = best.remove(&(name.clone(), true)) else { continue };
        match main_generation {
            // Left over from a replacement that was itself replaced or already swapped in.
            Some(main) if main >= rank.0 => {
                let _ = std::fs::remove_dir_all(&path);
            }
            Some(_) => {
                best.insert((name, true), (rank, definition, path));
            }
            None => {
                if let Err(e) = IndexControl::load(&path).promote(&path) {
                    tracing::warn!(index = %definition.name, error = %e, "could not promote an orphaned replacement");
                }
                best.insert((name, false), (rank, definition, path));
            }
        }
    }
    for (_, (_, definition, path)) in best {
        out.push((definition, path));
    }
    out
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
                // A query that needs it again waits (`find_or_create`) until its files are gone: the new
                // index gets the same directory, which the deletion would otherwise remove under it.
                let _creating = registry.create_lock.lock();
                registry.delete(&handle.definition.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_dir(root: &Path, name: &str, generation: u64, replacement: bool) -> (AutoIndexDefinition, PathBuf) {
        let definition = super::super::compile_definition(&serde_json::json!({
            "Name": name, "Maps": ["map('Items', function (d) { return { v: d.v }; })"]
        }))
        .unwrap();
        let dir = root.join(directory_name(&format!("{name}.{generation}.{replacement}")));
        std::fs::create_dir_all(&dir).unwrap();
        if generation > 0 || replacement {
            IndexControl::create_replacement(&dir, &IndexControl::default(), generation).unwrap();
            if !replacement {
                IndexControl::load(&dir).promote(&dir).unwrap();
            }
        }
        (definition, dir)
    }

    fn kept(out: &[(AutoIndexDefinition, PathBuf)]) -> Vec<(u64, bool)> {
        let mut kept: Vec<(u64, bool)> = out
            .iter()
            .map(|(_, p)| {
                let c = IndexControl::load(p);
                (c.generation(), c.is_replacement())
            })
            .collect();
        kept.sort();
        kept
    }

    #[test]
    fn a_crash_in_the_middle_of_a_swap_keeps_the_newer_generation() {
        let root = tempfile::tempdir().unwrap();
        let old = index_dir(root.path(), "A", 0, false);
        let new = index_dir(root.path(), "A", 1, false);
        let out = resolve_generations(vec![new, old.clone()]);
        assert_eq!(kept(&out), [(1, false)]);
        assert!(!old.1.exists(), "the replaced index's files are removed");
    }

    #[test]
    fn a_replacement_is_kept_beside_its_index_and_an_orphan_becomes_the_index() {
        let root = tempfile::tempdir().unwrap();
        let out = resolve_generations(vec![index_dir(root.path(), "A", 0, false), index_dir(root.path(), "A", 1, true)]);
        assert_eq!(kept(&out), [(0, false), (1, true)]);
        let orphan = resolve_generations(vec![index_dir(root.path(), "B", 2, true)]);
        assert_eq!(kept(&orphan), [(2, false)]);
        // A replacement no newer than its index is a leftover.
        let stale = resolve_generations(vec![index_dir(root.path(), "C", 3, false), index_dir(root.path(), "C", 3, true)]);
        assert_eq!(kept(&stale), [(3, false)]);
    }

    #[test]
    fn of_two_directories_of_one_generation_the_later_definition_wins() {
        let root = tempfile::tempdir().unwrap();
        let (older, newer) = (index_dir(root.path(), "A", 0, false), index_dir(root.path(), "a", 0, false));
        let newer = (newer.0, root.path().join("newer"));
        std::fs::create_dir_all(&newer.1).unwrap();
        for (dir, age) in [(&older.1, 60), (&newer.1, 0)] {
            let file = std::fs::File::create(dir.join(DEFINITION_FILE)).unwrap();
            file.set_modified(std::time::SystemTime::now() - Duration::from_secs(age)).unwrap();
        }
        let out = resolve_generations(vec![newer.clone(), older.clone()]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1, newer.1);
        assert!(!older.1.exists());
    }

    #[test]
    fn replacement_names_are_recognised_case_insensitively() {
        assert_eq!(split_replacement("ReplacementOf/Orders/Totals"), ("Orders/Totals", true));
        assert_eq!(split_replacement("replacementof/x"), ("x", true));
        assert_eq!(split_replacement("Orders/Totals"), ("Orders/Totals", false));
    }
}
