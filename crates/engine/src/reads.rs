//! Document reads. Each call runs on one storage snapshot, so a load with includes is consistent.

use std::collections::HashSet;

use corvid_storage::DocumentRecord;
use corvid_types::id_key;

use crate::document_json::DocumentJson;
use crate::includes::referenced_ids;
// Re-exported for the query modules, which import it from here.
pub(crate) use crate::version_hasher::VersionHasher;
use crate::wildcard::matches_any;
use crate::{Database, EngineError};

/// Documents loaded by id, as wire JSON, with their includes.
#[derive(Debug, Default)]
pub struct LoadResult {
    /// One slot per requested id, in request order; None where the document does not exist.
    pub results: Vec<Option<String>>,
    /// Included documents (id as stored, wire JSON), each once.
    pub includes: Vec<(String, String)>,
    /// Changes whenever any returned or included document changes; used as the HTTP `ETag`.
    pub version_hash: u64,
    /// The change vector of each result (None where missing), for conditional loads of one document.
    pub change_vectors: Vec<Option<String>>,
}

/// A listing of documents by id prefix (or newest first when there is no prefix).
#[derive(Debug, Default, Clone)]
pub struct PageRequest {
    /// The id prefix to list (case-insensitive); without one, every document newest first.
    pub starts_with: Option<String>,
    /// Wildcard patterns (`|`-separated) the rest of the id after the prefix must match.
    pub matches: Option<String>,
    /// Wildcard patterns (`|`-separated) that leave a document out.
    pub exclude: Option<String>,
    /// With a prefix: list only ids after this one.
    pub start_after: Option<String>,
    /// Matching documents to skip first.
    pub start: usize,
    /// Most documents listed.
    pub page_size: usize,
    /// Whether each document is returned with its `@metadata` only.
    pub metadata_only: bool,
}

impl Database {
    /// Loads documents by id from one snapshot, with the documents their `include_paths` name.
    pub fn load(&self, ids: &[String], include_paths: &[String], metadata_only: bool) -> Result<LoadResult, EngineError> {
        let snapshot = self.store.read()?;
        let mut hasher = VersionHasher::new();
        let mut result = LoadResult::default();
        let mut found = Vec::new();
        // One slot per requested id, in order; an empty id (a client's null) finds nothing.
        for id in ids {
            let record = snapshot.document(&id_key(id))?;
            match &record {
                Some(r) => {
                    hasher.add(r.change_vector.as_bytes());
                    result.results.push(Some(r.to_json_string(metadata_only)));
                    result.change_vectors.push(Some(r.change_vector.clone()));
                }
                None => {
                    hasher.add(b"-");
                    result.results.push(None);
                    result.change_vectors.push(None);
                }
            }
            if let Some(r) = record {
                found.push(r);
            }
        }
        if !include_paths.is_empty() {
            let requested: HashSet<String> = ids.iter().map(|id| id_key(id)).collect();
            let mut seen = HashSet::new();
            for record in &found {
                for included in self.referenced_ids(record, include_paths)? {
                    let key = id_key(&included);
                    if requested.contains(&key) || !seen.insert(key.clone()) {
                        continue;
                    }
                    if let Some(doc) = snapshot.document(&key)? {
                        hasher.add(doc.change_vector.as_bytes());
                        result.includes.push((doc.id.clone(), doc.to_json_string(false)));
                    }
                }
            }
        }
        result.version_hash = hasher.finish();
        Ok(result)
    }

    fn referenced_ids(&self, record: &DocumentRecord, include_paths: &[String]) -> Result<Vec<String>, EngineError> {
        let body: serde_json::Value = corvid_types::json::parse(&record.body)
            .map_err(|e| EngineError::Storage(corvid_storage::StorageError::Corrupted { table: "docs", context: e.to_string() }))?;
        let mut out = Vec::new();
        for path in include_paths {
            referenced_ids(&body, path, &mut out);
        }
        Ok(out)
    }

    /// The change vector of a document, if it exists.
    pub fn change_vector(&self, id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.store.read()?.document(&id_key(id))?.map(|r| r.change_vector))
    }

    /// A page of documents by prefix (id order) or, without a prefix, newest first. Returns wire JSON and a
    /// version hash of the page.
    pub fn load_page(&self, request: &PageRequest) -> Result<(Vec<String>, u64), EngineError> {
        let mut out = Vec::new();
        let mut hasher = VersionHasher::new();
        self.visit_page(request, |record| {
            hasher.add(record.change_vector.as_bytes());
            out.push(record.to_json_string(request.metadata_only));
            true
        })?;
        Ok((out, hasher.finish()))
    }

    /// Streams the documents of a page as wire JSON, one snapshot for all; `emit` returns false to stop
    /// (the client went away).
    pub fn stream_page(&self, request: &PageRequest, mut emit: impl FnMut(String) -> bool) -> Result<(), EngineError> {
        self.visit_page(request, |record| emit(record.to_json_string(request.metadata_only)))
    }

    /// Visits the documents of a page in order until `visit` returns false or the page is full.
    fn visit_page(&self, request: &PageRequest, mut visit: impl FnMut(&DocumentRecord) -> bool) -> Result<(), EngineError> {
        let snapshot = self.store.read()?;
        let mut skipped = 0usize;
        let mut taken = 0usize;
        let mut filter = |record: DocumentRecord| {
            let name = record.id.rsplit('/').next().unwrap_or("").to_owned();
            let name = match &request.starts_with {
                Some(prefix) => record.id.get(prefix.len()..).unwrap_or(&name).to_owned(),
                None => name,
            };
            if let Some(m) = request.matches.as_deref().filter(|m| !m.is_empty()) {
                if !matches_any(m, &name) {
                    return true;
                }
            }
            if let Some(x) = request.exclude.as_deref().filter(|x| !x.is_empty()) {
                if matches_any(x, &name) {
                    return true;
                }
            }
            if skipped < request.start {
                skipped += 1;
                return true;
            }
            taken += 1;
            visit(&record) && taken < request.page_size
        };
        if request.page_size > 0 {
            match &request.starts_with {
                Some(prefix) => {
                    let after = request.start_after.as_deref().map(id_key);
                    snapshot.documents_with_prefix(&id_key(prefix), after.as_deref(), &mut filter)?
                }
                None => snapshot.documents_newest_first(&mut filter)?,
            }
        }
        Ok(())
    }
}
