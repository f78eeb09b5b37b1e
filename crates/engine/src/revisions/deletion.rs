//! Deleting revisions on request (`DeleteRevisionsOperation`): of chosen documents, by change vector or by
//! date range, leaving forced revisions alone unless asked.

use corvid_storage::flags;
use corvid_types::id_key;

use crate::{Database, EngineError};

/// Which revisions `delete_revisions` removes.
#[derive(Debug, Clone, Default)]
pub struct RevisionsDeletion {
    /// The documents whose revisions go.
    pub document_ids: Vec<String>,
    /// Only these revisions (of the single document), when given.
    pub change_vectors: Vec<String>,
    /// Only revisions written at or after this moment (unix nanoseconds).
    pub from: Option<i64>,
    /// Only revisions written at or before this moment (unix nanoseconds).
    pub to: Option<i64>,
    /// Forced revisions (`ForceRevisionCreation`) go too.
    pub remove_force_created: bool,
}

impl Database {
    /// Deletes the revisions `deletion` names, in one transaction; returns how many.
    pub fn delete_revisions(&self, deletion: RevisionsDeletion) -> Result<u64, EngineError> {
        if deletion.document_ids.iter().any(|id| id.trim().is_empty()) || deletion.document_ids.is_empty() {
            return Err(EngineError::BadRequest("Document ids cannot be null or empty".into()));
        }
        if !deletion.change_vectors.is_empty() && deletion.document_ids.len() != 1 {
            return Err(EngineError::BadRequest("The number of document ids must be 1 when using revisions change vectors".into()));
        }
        self.write_blocking(move |txn| {
            let mut deleted = 0;
            for id in &deletion.document_ids {
                let key = id_key(id);
                for revision in txn.revisions_oldest_first(&key, usize::MAX)? {
                    let chosen = if deletion.change_vectors.is_empty() {
                        deletion.from.is_none_or(|from| revision.last_modified >= from)
                            && deletion.to.is_none_or(|to| revision.last_modified <= to)
                            && (deletion.remove_force_created || revision.flags & flags::FORCE_CREATED == 0)
                    } else {
                        deletion.change_vectors.contains(&revision.change_vector)
                    };
                    if chosen && txn.delete_revision(&key, revision.etag)? {
                        deleted += 1;
                    }
                }
            }
            Ok(deleted)
        })
    }
}
