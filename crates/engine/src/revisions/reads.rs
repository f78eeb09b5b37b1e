//! Reading revisions from one snapshot, rendered as RavenDB sends them (a document with its `@metadata`,
//! `@flags` naming `Revision` or `DeleteRevision`).

use corvid_storage::DocumentRecord;
use corvid_types::id_key;

use crate::document_json::DocumentJson;
use crate::{Database, EngineError};

/// A page of a document's revisions, newest first, with how many it has.
#[derive(Debug, Clone)]
pub struct RevisionsPage {
    /// Each revision's wire JSON.
    pub results: Vec<String>,
    /// Every revision of the document.
    pub total: u64,
    /// The change vector of the first result (the answer's ETag), empty when none.
    pub first_change_vector: String,
}

fn render(revisions: &[DocumentRecord], metadata_only: bool) -> Vec<String> {
    revisions.iter().map(|r| r.to_json_string(metadata_only)).collect()
}

impl Database {
    /// The revisions of document `id`, newest first, skipping `start`, at most `page_size`.
    pub fn revisions_of(&self, id: &str, start: usize, page_size: usize, metadata_only: bool) -> Result<RevisionsPage, EngineError> {
        let snapshot = self.store.read()?;
        let key = id_key(id);
        let revisions = snapshot.revisions_newest_first(&key, start, page_size)?;
        let first_change_vector = revisions.first().map(|r| r.change_vector.clone()).unwrap_or_default();
        Ok(RevisionsPage { results: render(&revisions, metadata_only), total: snapshot.revision_count(&key)?, first_change_vector })
    }

    /// The newest revision of document `id` written at or before `at` (unix nanoseconds).
    pub fn revision_before(&self, id: &str, at: i64) -> Result<Option<(String, String)>, EngineError> {
        let revision = self.store.read()?.revision_before(&id_key(id), at)?;
        Ok(revision.map(|r| (r.to_json_string(false), r.change_vector)))
    }

    /// The revisions with these change vectors, in their order (None for an unknown one).
    pub fn revisions_by_change_vectors(&self, change_vectors: &[String], metadata_only: bool) -> Result<Vec<Option<String>>, EngineError> {
        let snapshot = self.store.read()?;
        let mut out = Vec::with_capacity(change_vectors.len());
        for cv in change_vectors {
            out.push(snapshot.revision_by_change_vector(cv)?.map(|r| r.to_json_string(metadata_only)));
        }
        Ok(out)
    }

    /// How many revisions document `id` has.
    pub fn revision_count(&self, id: &str) -> Result<u64, EngineError> {
        Ok(self.store.read()?.revision_count(&id_key(id))?)
    }

    /// The revisions bin: the delete revisions of documents still deleted, newest first.
    pub fn revisions_bin(&self, start: usize, page_size: usize) -> Result<Vec<String>, EngineError> {
        let bin = self.store.read()?.revisions_bin(start, page_size)?;
        Ok(render(&bin, false))
    }
}
