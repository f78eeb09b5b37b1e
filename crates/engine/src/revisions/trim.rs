//! Deleting old revisions: down to `MinimumRevisionsToKeep`, never one younger than
//! `MinimumRevisionAgeToKeep`, at most `MaximumRevisionsToDeleteUponDocumentUpdate` per write, oldest first;
//! and every revision of a document when `PurgeOnDelete` applies.

use corvid_storage::{flags, WriteTxn};

use super::config::CollectionRevisions;
use crate::EngineError;

/// Trims the revisions of the document whose lower-cased id is `doc_key` after a write at `now`. Returns
/// how many were deleted.
pub(crate) fn trim(txn: &mut WriteTxn<'_>, doc_key: &str, rules: &CollectionRevisions, now: i64) -> Result<u64, EngineError> {
    let count = txn.revision_count(doc_key)?;
    let bound = rules.maximum_revisions_to_delete_upon_document_update.unwrap_or(u64::MAX);
    let to_delete = match (rules.minimum_revisions_to_keep, rules.minimum_revision_age_to_keep) {
        (None, None) => return Ok(0),
        (Some(minimum), _) => count.saturating_sub(minimum).min(bound),
        (None, Some(_)) => bound.min(count),
    };
    if to_delete == 0 {
        return Ok(0);
    }
    let mut victims = Vec::new();
    for revision in txn.revisions_oldest_first(doc_key, to_delete as usize)? {
        let young = rules.minimum_revision_age_to_keep.is_some_and(|age| {
            let elapsed = now.saturating_sub(revision.last_modified);
            elapsed <= i64::try_from(age.as_nanos()).unwrap_or(i64::MAX)
        });
        if young {
            break;
        }
        victims.push(revision);
    }
    // A delete revision that is the newest one stays while older ones remain, so they are not orphaned.
    if let Some(last) = victims.last().filter(|last| last.flags & flags::DELETE_REVISION != 0) {
        let remaining_after = count - victims.len() as u64;
        let newest = txn.newest_revision(doc_key)?.map(|r| r.etag);
        if remaining_after + 1 > 1 && newest == Some(last.etag) {
            victims.pop();
        }
    }
    for revision in &victims {
        txn.delete_revision_record(doc_key, revision)?;
    }
    Ok(victims.len() as u64)
}

/// Deletes every revision of the document whose lower-cased id is `doc_key`; returns how many.
pub(crate) fn delete_all(txn: &mut WriteTxn<'_>, doc_key: &str) -> Result<u64, EngineError> {
    let revisions = txn.revisions_oldest_first(doc_key, usize::MAX)?;
    for revision in &revisions {
        txn.delete_revision_record(doc_key, revision)?;
    }
    Ok(revisions.len() as u64)
}
