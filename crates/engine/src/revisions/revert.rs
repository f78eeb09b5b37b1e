//! Reverting documents to revisions: every document changed after a point in time back to its newest
//! revision at or before it (a tracked operation, `POST /revisions/revert`), or chosen documents to chosen
//! revisions (`POST /revisions/revert/docs`). A document whose newest revision before the time is a delete
//! revision, or that has none (it was created later), is deleted. Each restored version is written as a
//! new version with the `Reverted` flag, so it gets its own revision.

use std::sync::Arc;

use corvid_storage::{flags, DocumentRecord, WriteTxn};
use corvid_types::{id_key, now_nanos};

use super::writes;
use crate::operation_result::{OperationResult, RevertSummary};
use crate::operations::Operation;
use crate::{Database, EngineError};

/// Documents reverted per merged transaction.
const BATCH: usize = 256;

/// What a point-in-time revert is asked to do.
#[derive(Debug, Clone)]
pub struct RevertRequest {
    /// Documents changed after this moment (unix nanoseconds) go back to how they were at it.
    pub time: i64,
    /// Only documents of these collections (case-insensitive); all when empty.
    pub collections: Vec<String>,
}

/// Restores `revision` as the current version of its document (or deletes the document when it is a delete
/// revision); the document's counters go back to the revision's snapshot.
fn restore(txn: &mut WriteTxn<'_>, revision: &DocumentRecord, now: i64) -> Result<(), EngineError> {
    let key = id_key(&revision.id);
    if revision.flags & flags::DELETE_REVISION != 0 {
        writes::delete_document(txn, &key, now)?;
        return Ok(());
    }
    let mut metadata: serde_json::Map<String, serde_json::Value> = corvid_types::json::parse(&revision.client_metadata).unwrap_or_default();
    let snapshot = metadata.shift_remove("@counters-snapshot");
    // Attachments are not restored: the document keeps the ones it has now.
    metadata.shift_remove("@attachments");
    metadata.shift_remove("@counters");
    if let Some(serde_json::Value::Object(counters)) = snapshot {
        for current in txn.counters_of(&key)? {
            txn.delete_counter(&key, &current.name)?;
        }
        for (name, value) in counters {
            txn.increment_counter(&key, &name, value.as_i64().unwrap_or(0))?;
        }
    }
    let (client_metadata, server_flags) =
        crate::write::metadata::with_server_metadata(txn, &key, &serde_json::Value::Object(metadata).to_string())?;
    let current = txn.document(&key)?;
    let kept = current.as_ref().map(|c| c.flags).unwrap_or(0) & !crate::write::metadata::KEPT_BY_SERVER;
    let doc_flags = kept | server_flags | flags::REVERTED;
    writes::put_document(
        txn,
        current.as_ref(),
        &revision.id,
        &revision.collection,
        revision.body.clone(),
        client_metadata,
        doc_flags,
        now,
    )?;
    Ok(())
}

impl Database {
    /// Starts reverting every document changed after `request.time`; the operation completes with what it
    /// reverted.
    pub fn start_revert(self: &Arc<Self>, request: RevertRequest) -> Result<Arc<Operation>, EngineError> {
        let operation = self.operations.start(
            None,
            "DatabaseRevert",
            format!("Revert database '{}' to {}", self.name(), corvid_types::format_date(request.time)),
        );
        let database = self.clone();
        let op = operation.clone();
        std::thread::Builder::new()
            .name(format!("corvid-op-{}", operation.id))
            .spawn(move || match database.run_revert(&op, &request) {
                Ok(Some(summary)) => op.complete(OperationResult::Revert(summary)),
                Ok(None) => op.mark_canceled(),
                Err(e) => op.fail(e),
            })
            .map_err(|e| EngineError::Internal(format!("could not start the operation thread: {e}")))?;
        Ok(operation)
    }

    /// Ok(None) when canceled.
    fn run_revert(&self, op: &Operation, request: &RevertRequest) -> Result<Option<RevertSummary>, EngineError> {
        let snapshot = self.store.read()?;
        let changed = snapshot.documents_with_revisions_after(request.time)?;
        let mut summary = RevertSummary { scanned_documents: changed.len() as u64, ..RevertSummary::default() };
        let mut targets: Vec<(String, Option<DocumentRecord>)> = Vec::new();
        for key in changed {
            let newest = snapshot.revisions_newest_first(&key, 0, 1)?;
            let Some(newest) = newest.first() else { continue };
            if !request.collections.is_empty() && !request.collections.iter().any(|c| c.eq_ignore_ascii_case(&newest.collection)) {
                continue;
            }
            summary.scanned_revisions += snapshot.revision_count(&key)?;
            targets.push((key.clone(), snapshot.revision_before(&key, request.time)?));
        }
        drop(snapshot);
        op.set_total(targets.len() as u64);
        for chunk in targets.chunks(BATCH) {
            if op.is_canceled() {
                return Ok(None);
            }
            let chunk = chunk.to_vec();
            let reverted = self.write_blocking(move |txn| {
                let now = now_nanos();
                let mut reverted = 0u64;
                for (key, before) in &chunk {
                    match before {
                        Some(revision) => restore(txn, revision, now)?,
                        // Created after the time: it did not exist then.
                        None => {
                            writes::delete_document(txn, key, now)?;
                        }
                    }
                    reverted += 1;
                }
                Ok(reverted)
            })?;
            summary.reverted_documents += reverted;
            op.add_processed(reverted);
        }
        Ok(Some(summary))
    }

    /// Reverts each document to the revision with the given change vector, all in one transaction; refused
    /// (nothing changed) when a change vector names no revision or a revision of another document.
    pub fn revert_to_revisions(&self, id_to_change_vector: Vec<(String, String)>) -> Result<(), EngineError> {
        self.write_blocking(move |txn| {
            let now = now_nanos();
            for (id, cv) in &id_to_change_vector {
                if id.is_empty() || cv.is_empty() {
                    return Err(EngineError::BadRequest("Document id and change vector cannot be empty".into()));
                }
                let revision = txn
                    .revision_by_change_vector(cv)?
                    .ok_or_else(|| EngineError::InvalidOperation(format!("Revision with the cv \"{cv}\" doesn't exist (id: '{id}')")))?;
                if !revision.id.eq_ignore_ascii_case(id) {
                    return Err(EngineError::InvalidOperation(format!(
                        "Revision with the cv \"{cv}\" doesn't belong to the doc \"{id}\" but to the doc \"{}\"",
                        revision.id
                    )));
                }
                restore(txn, &revision, now)?;
            }
            Ok(())
        })
    }
}
