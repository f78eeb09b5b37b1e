//! What the stats endpoints show about indexes, and index management (delete, reset).

use std::sync::atomic::Ordering;

use corvid_types::id_key;

use crate::indexing::{AutoIndexField, IndexingError};
use crate::{Database, EngineError};

#[derive(Debug, Clone)]
pub struct IndexInfo {
    pub name: String,
    pub collection: String,
    pub fields: Vec<AutoIndexField>,
    pub is_stale: bool,
    /// `Normal`, `Idle` (not queried for a while) or `Error`.
    pub state: &'static str,
    /// What the indexing worker is doing right now.
    pub status: String,
    pub entries: u64,
    pub map_attempts: u64,
    pub map_successes: u64,
    pub map_errors: u64,
    pub errors_count: u64,
    pub created_at: i64,
    pub last_indexing_time: i64,
    pub last_query_time: i64,
    pub processed_etag: u64,
    pub collection_last_etag: u64,
    pub size_on_disk: u64,
    /// RavenDB's type: `AutoMap`, `AutoMapReduce`, `Map`, `JavaScriptMap`, ...
    pub index_type: &'static str,
    /// For static indexes: the definition as the client sent it.
    pub static_definition: Option<serde_json::Value>,
}

impl Database {
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
                name: handle.definition.name.clone(),
                collection: handle.definition.collection.clone(),
                fields: handle.definition.fields.clone(),
                is_stale: self.is_stale(&snapshot, &handle, processed)?,
                state: if handle.faulted.lock().is_some() {
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
                static_definition: handle.definition.static_index.as_ref().map(|s| s.definition.clone()),
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
        Ok(handles.iter().map(|h| (h.definition.name.clone(), h.errors.lock().iter().cloned().collect())).collect())
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
        let compiled = definitions.iter().map(crate::indexing::compile_definition).collect::<Result<Vec<_>, _>>()?;
        let mut names = Vec::with_capacity(compiled.len());
        for definition in compiled {
            names.push(definition.name.clone());
            self.indexes.put_static(definition)?;
        }
        Ok(names)
    }

    pub fn index_exists(&self, name: &str) -> bool {
        self.indexes.get(name).is_some()
    }

    /// Deletes an index; false when there is none by that name. Blocking (joins the worker).
    pub fn delete_index(&self, name: &str) -> bool {
        self.indexes.delete(name)
    }

    /// Rebuilds an index from the documents; false when there is none by that name. Blocking.
    pub fn reset_index(&self, name: &str) -> Result<bool, EngineError> {
        self.indexes.reset(name)
    }
}
