//! What the stats endpoints show about indexes, and index management (delete, reset).

use std::sync::atomic::Ordering;

use corvid_types::id_key;

use crate::changes::{Change, IndexChangeKind};
use crate::indexing::{AutoIndexField, IndexingError};
use crate::{Database, EngineError};

/// One index as the stats endpoints show it: its definition, state and counters.
#[derive(Debug, Clone)]
pub struct IndexInfo {
    /// The index's name.
    pub name: String,
    /// The collection it maps (`@all_docs` for an index of every document).
    pub collection: String,
    /// The fields an automatic index keeps.
    pub fields: Vec<AutoIndexField>,
    /// An automatic map-reduce index's reduce key paths (`array(path)` for an array's content).
    pub group_by: Vec<String>,
    /// An automatic map-reduce index's aggregations.
    pub aggregations: Vec<crate::indexing::Aggregation>,
    /// Whether documents written before now are not indexed yet.
    pub is_stale: bool,
    /// `Normal`, `Idle` (not queried for a while), `Error` or `Disabled`.
    pub state: &'static str,
    /// What the indexing worker is doing right now.
    pub status: String,
    /// Entries in the index.
    pub entries: u64,
    /// Documents the map was run on since the index opened.
    pub map_attempts: u64,
    /// Map runs that succeeded.
    pub map_successes: u64,
    /// Map runs that failed.
    pub map_errors: u64,
    /// Indexing errors recorded (as listed by `/indexes/errors`).
    pub errors_count: u64,
    /// When the index was created, in unix nanoseconds.
    pub created_at: i64,
    /// When the worker last indexed a batch, in unix nanoseconds (0 if never).
    pub last_indexing_time: i64,
    /// When the index was last queried, in unix nanoseconds (0 if never).
    pub last_query_time: i64,
    /// The last etag the index has processed.
    pub processed_etag: u64,
    /// The last etag of its collection (of all documents for an all-documents index).
    pub collection_last_etag: u64,
    /// Bytes the index's files take.
    pub size_on_disk: u64,
    /// RavenDB's type: `AutoMap`, `AutoMapReduce`, `Map`, `JavaScriptMap`, ...
    pub index_type: &'static str,
    /// RavenDB's source type: `Documents`, `Counters` or `TimeSeries`.
    pub source_type: &'static str,
    /// `Running`, `Paused` or `Disabled`.
    pub run_status: &'static str,
    /// `Low`, `Normal` or `High`.
    pub priority: String,
    /// `Unlock`, `LockedIgnore` or `LockedError`.
    pub lock_mode: String,
    /// For static indexes: the definition as the client sent it.
    pub static_definition: Option<serde_json::Value>,
}

impl Database {
    /// Every index, sorted by name.
    pub fn index_infos(&self) -> Result<Vec<IndexInfo>, EngineError> {
        let snapshot = self.store.read()?;
        let mut out = Vec::new();
        for handle in self.indexes.all() {
            let processed = handle.processed_etag.load(Ordering::Relaxed);
            let collection_last_etag = if handle.definition.is_all_docs() {
                snapshot.last_document_etag()?
            } else {
                snapshot.last_collection_etag(&id_key(&handle.definition.collection))?
            };
            out.push(IndexInfo {
                name: handle.name(),
                collection: handle.definition.collection.clone(),
                fields: handle.definition.fields.clone(),
                group_by: handle.definition.group_by.clone(),
                aggregations: handle.definition.aggregations.clone(),
                is_stale: self.is_stale(&snapshot, &handle, processed)?,
                state: if handle.control.is_disabled() {
                    "Disabled"
                } else if handle.control.is_errored() || handle.faulted.lock().is_some() {
                    "Error"
                } else if self.indexes.is_idle(&handle) {
                    "Idle"
                } else {
                    "Normal"
                },
                status: handle.status.lock().clone(),
                entries: handle.index.entries_count(),
                map_attempts: handle.counters.map_attempts.load(Ordering::Relaxed),
                map_successes: handle.counters.map_successes.load(Ordering::Relaxed),
                map_errors: handle.counters.map_errors.load(Ordering::Relaxed),
                errors_count: handle.errors.lock().len() as u64,
                created_at: handle.created_at,
                last_indexing_time: handle.counters.last_indexing_time.load(Ordering::Relaxed),
                last_query_time: handle.last_query_time.load(Ordering::Relaxed),
                processed_etag: processed,
                collection_last_etag,
                size_on_disk: handle.index.size_on_disk(),
                index_type: match &handle.definition.static_index {
                    Some(s) => s.type_name(),
                    None if handle.definition.is_map_reduce() => "AutoMapReduce",
                    None => "AutoMap",
                },
                source_type: handle.definition.static_index.as_ref().map_or("Documents", |s| s.source.name()),
                static_definition: handle.definition.static_index.as_ref().map(|s| s.definition.clone()),
                run_status: handle.control.status(),
                priority: handle.control.priority(),
                lock_mode: handle.control.lock_mode(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Indexing errors per index (all indexes, or the one named).
    pub fn index_errors(&self, name: Option<&str>) -> Result<Vec<(String, Vec<IndexingError>)>, EngineError> {
        let handles = match name {
            Some(n) => vec![self.indexes.get(n).ok_or_else(|| EngineError::IndexDoesNotExist(n.to_owned()))?],
            None => self.indexes.all(),
        };
        Ok(handles.iter().map(|h| (h.name(), h.errors.lock().iter().cloned().collect())).collect())
    }

    /// Forgets the recorded indexing errors of the named indexes (all when `names` is empty).
    pub fn clear_index_errors(&self, names: &[String]) -> Result<(), EngineError> {
        let handles = if names.is_empty() {
            self.indexes.all()
        } else {
            names.iter().map(|n| self.indexes.get(n).ok_or_else(|| EngineError::IndexDoesNotExist(n.clone()))).collect::<Result<_, _>>()?
        };
        for handle in handles {
            handle.errors.lock().clear();
        }
        Ok(())
    }

    /// Creates or replaces static indexes from the clients' IndexDefinition JSON. Every definition is
    /// compiled first; if any is invalid, none is stored. Blocking.
    pub fn put_indexes(&self, definitions: &[serde_json::Value]) -> Result<Vec<String>, EngineError> {
        let mut compiled = definitions.iter().map(crate::indexing::compile_definition).collect::<Result<Vec<_>, _>>()?;
        for definition in &mut compiled {
            self.prepare_output_collection(definition)?;
        }
        let mut names_out = Vec::with_capacity(compiled.len());
        for (definition, raw) in compiled.into_iter().zip(definitions) {
            let name = definition.name.clone();
            self.indexes.put_static(definition)?;
            self.announce_index(&name, IndexChangeKind::IndexAdded);
            // Priority and lock mode sent with the definition apply too, to a replacement being built as
            // well (it carries them over when it swaps in).
            let mut names = vec![name.clone()];
            let replacement = format!("{}{name}", crate::indexing::REPLACEMENT_PREFIX);
            if self.indexes.get(&replacement).is_some() {
                names.push(replacement);
            }
            if let Some(priority) = raw.get("Priority").and_then(serde_json::Value::as_str) {
                self.set_indexes_priority(&names, priority)?;
            }
            if let Some(mode) = raw.get("LockMode").and_then(serde_json::Value::as_str) {
                self.set_indexes_lock_mode(&names, mode)?;
            }
            names_out.push(name);
        }
        Ok(names_out)
    }

    /// Checks a map-reduce index's `OutputReduceToCollection` against the database (no other index writes
    /// there; the collection is empty unless this index already fills it) and assigns the definition its
    /// `ReduceOutputIndex`, which sets its output documents apart from those of the index it replaces.
    fn prepare_output_collection(&self, definition: &mut crate::indexing::AutoIndexDefinition) -> Result<(), EngineError> {
        use crate::indexing::output_collection_of;
        let Some(statics) = definition.static_index.as_mut() else { return Ok(()) };
        let Some(output) = output_collection_of(&statics.definition) else { return Ok(()) };
        let refuse = |message: String| EngineError::IndexCompilation { message: format!("Index '{}': {message}", definition.name) };
        let mut own_output_index = None;
        for handle in self.indexes.all() {
            let Some(raw) = handle.definition.static_index.as_ref().map(|s| &s.definition) else { continue };
            let same_name = handle.definition.name.eq_ignore_ascii_case(&definition.name);
            match output_collection_of(raw) {
                Some(other) if other.eq_ignore_ascii_case(&output) => {
                    if !same_name {
                        return Err(refuse(format!(
                            "index '{}' already outputs reduce results to collection '{output}'",
                            handle.definition.name
                        )));
                    }
                    let n = raw.get("ReduceOutputIndex").and_then(serde_json::Value::as_u64).unwrap_or(0);
                    own_output_index = Some(own_output_index.unwrap_or(0).max(n));
                }
                _ => {}
            }
            if let Some(s) = &handle.definition.static_index {
                if s.collections.iter().any(|c| c.eq_ignore_ascii_case(&output)) && s.reduce.is_some() && !same_name {
                    // Two map-reduce indexes feeding each other's collections would loop forever.
                    if let Some(theirs) = output_collection_of(raw) {
                        if statics.collections.iter().any(|c| c.eq_ignore_ascii_case(&theirs)) {
                            return Err(refuse(format!(
                                "index '{}' reads '{output}' and outputs to '{theirs}', which this index reads (an infinite indexing loop)",
                                handle.definition.name
                            )));
                        }
                    }
                }
            }
        }
        if own_output_index.is_none() && self.store.read()?.count_collection(&id_key(&output))? > 0 {
            return Err(refuse(format!(
                "collection '{output}' already has documents; OutputReduceToCollection needs an empty collection (or a new name)"
            )));
        }
        if let serde_json::Value::Object(raw) = &mut statics.definition {
            raw.insert("ReduceOutputIndex".into(), serde_json::json!(own_output_index.map_or(1, |n| n + 1)));
        }
        Ok(())
    }

    /// The named indexes, or every index when `names` is empty; an unknown name is an error.
    fn handles(&self, names: &[String]) -> Result<Vec<std::sync::Arc<crate::indexing::IndexHandle>>, EngineError> {
        if names.is_empty() {
            return Ok(self.indexes.all());
        }
        names.iter().map(|n| self.indexes.get(n).ok_or_else(|| EngineError::IndexDoesNotExist(n.clone()))).collect()
    }

    /// Whether indexing of the whole database is stopped.
    pub fn indexing_paused(&self) -> bool {
        self.indexes.all_paused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Disables (no indexing, kept across restarts) or enables indexes. Blocking (writes a small file).
    pub fn set_indexes_disabled(&self, names: &[String], disabled: bool) -> Result<(), EngineError> {
        for handle in self.handles(names)? {
            let was_errored = handle.control.is_errored();
            handle.control.set_disabled(&handle.dir, disabled)?;
            if disabled {
                self.announce_index(&handle.definition.name, IndexChangeKind::IndexDemotedToDisabled);
            }
            if was_errored && !handle.control.is_errored() {
                // A fresh start: the old failures would error it again at once.
                handle.clear_attempts();
            }
        }
        self.watch.wake_all();
        Ok(())
    }

    /// Pauses (`stop`) or resumes (`start`) indexing until the database reloads.
    pub fn set_indexes_paused(&self, names: &[String], paused: bool) -> Result<(), EngineError> {
        if names.is_empty() {
            self.indexes.all_paused.store(paused, std::sync::atomic::Ordering::Relaxed);
        }
        for handle in self.handles(names)? {
            handle.control.set_paused(paused);
            if paused {
                self.announce_index(&handle.definition.name, IndexChangeKind::IndexPaused);
            }
        }
        self.watch.wake_all();
        Ok(())
    }

    /// Sets the priority of the named indexes (all when `names` is empty). Blocking (writes a small file).
    pub fn set_indexes_priority(&self, names: &[String], priority: &str) -> Result<(), EngineError> {
        for handle in self.handles(names)? {
            handle.control.set_priority(&handle.dir, priority)?;
            self.announce_index(&handle.definition.name, IndexChangeKind::PriorityChanged);
        }
        Ok(())
    }

    /// Sets the lock mode of the named indexes (all when `names` is empty). Blocking (writes a small file).
    pub fn set_indexes_lock_mode(&self, names: &[String], mode: &str) -> Result<(), EngineError> {
        for handle in self.handles(names)? {
            handle.control.set_lock_mode(&handle.dir, mode)?;
            self.announce_index(&handle.definition.name, IndexChangeKind::LockModeChanged);
        }
        Ok(())
    }

    /// Whether storing `definition` would change the index of that name (`/indexes/has-changed`).
    pub fn index_definition_changed(&self, definition: &serde_json::Value) -> Result<bool, EngineError> {
        // A definition that does not compile is a change (storing it would fail), as RavenDB answers.
        let Ok(compiled) = crate::indexing::compile_definition(definition) else { return Ok(true) };
        // What the index computes, not how the client spelled the request (defaults, key order).
        let same = |a: &crate::indexing::AutoIndexDefinition| match (&a.static_index, &compiled.static_index) {
            (Some(x), Some(y)) => x.computes_same_as(y),
            _ => false,
        };
        Ok(self.indexes.get(&compiled.name).is_none_or(|h| !same(&h.definition)))
    }

    /// Terms of an index field after `from_value`, at most `page_size` (`/indexes/terms`).
    pub fn index_terms(&self, name: &str, field: &str, from_value: Option<&str>, page_size: usize) -> Result<Vec<String>, EngineError> {
        let handle = self.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.to_owned()))?;
        let index = match &handle.index {
            crate::indexing::IndexBackend::Search(index) => index,
            crate::indexing::IndexBackend::StaticReduce { results, .. } => results,
            crate::indexing::IndexBackend::Reduce(_) => {
                return Err(EngineError::InvalidQuery { message: format!("index '{name}' keeps no terms (automatic map-reduce)") })
            }
        };
        let terms = index.field_terms(field)?;
        Ok(terms.into_iter().map(|(t, _)| t).filter(|t| from_value.is_none_or(|f| t.as_str() > f)).take(page_size).collect())
    }

    /// Whether an index has this name.
    pub fn index_exists(&self, name: &str) -> bool {
        self.indexes.get(name).is_some()
    }

    /// Deletes an index; false when there is none by that name. Blocking (joins the worker).
    pub fn delete_index(&self, name: &str) -> bool {
        let deleted = self.indexes.delete(name);
        if deleted {
            self.announce_index(name, IndexChangeKind::IndexRemoved);
        }
        deleted
    }

    /// Tells the Changes API's subscribers what happened to an index.
    fn announce_index(&self, name: &str, kind: IndexChangeKind) {
        self.changes.publish(Change::Index { kind, name: name.to_owned() });
    }

    /// Rebuilds an index from the documents; false when there is none by that name. Blocking.
    pub fn reset_index(&self, name: &str) -> Result<bool, EngineError> {
        self.indexes.reset(name)
    }
}
