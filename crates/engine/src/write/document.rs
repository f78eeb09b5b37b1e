//! Putting and deleting one document inside a write transaction, with the optimistic concurrency check and
//! the server-kept metadata. Each returns its own outcome; the commands turn it into their replies.

use corvid_storage::{flags, WriteTxn};
use corvid_types::{id_key, validate_id, NODE_TAG};

use super::metadata::{with_server_metadata, KEPT_BY_SERVER};
use super::precondition::ExpectedChangeVector;
use crate::{EngineError, IncomingDocument};

/// A document as a put left it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PutOutcome {
    /// The id as stored (the spelling of the first write, or the generated id).
    pub id: String,
    pub collection: String,
    pub change_vector: String,
    pub last_modified: i64,
    pub flags: u32,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeleteOutcome {
    pub id: String,
    /// False when there was no such document.
    pub deleted: bool,
    /// The tombstone's change vector.
    pub change_vector: Option<String>,
}

/// The final id of a PUT: `prefix/` gets a server-generated id, `prefix|` the next identity.
fn resolve_id(txn: &mut WriteTxn<'_>, id: &str) -> Result<String, EngineError> {
    if let Some(prefix) = id.strip_suffix('|') {
        let value = txn.next_identity(&identity_name(prefix))?;
        return Ok(format!("{}/{value}", prefix.trim_end_matches('/')));
    }
    if id.is_empty() {
        // No id at all: the server makes up a unique one, as RavenDB does.
        return Ok(corvid_types::new_guid());
    }
    if id.ends_with('/') {
        return Ok(format!("{id}{:019}-{NODE_TAG}", txn.peek_next_etag()));
    }
    Ok(id.to_owned())
}

/// Identities are named with a trailing `|` (`users|`), as RavenDB lists them; `users`, `users|` and
/// `users/` name the same identity.
pub(crate) fn identity_name(prefix: &str) -> String {
    format!("{}|", prefix.trim_end_matches(['|', '/']))
}

/// Stores `document` under `id` (resolved first: `prefix/`, `prefix|` or empty) if `expected` holds.
pub(crate) fn put_document(
    txn: &mut WriteTxn<'_>,
    id: &str,
    expected: &ExpectedChangeVector,
    document: IncomingDocument,
    now: i64,
) -> Result<PutOutcome, EngineError> {
    put_document_with(txn, id, expected, document, false, now)
}

/// `put_document`, first keeping a forced revision of the version it replaces when `force_revision_before`
/// (the PUT command's `ForceRevisionCreationStrategy: Before`).
pub(crate) fn put_document_with(
    txn: &mut WriteTxn<'_>,
    id: &str,
    expected: &ExpectedChangeVector,
    document: IncomingDocument,
    force_revision_before: bool,
    now: i64,
) -> Result<PutOutcome, EngineError> {
    let id = resolve_id(txn, id)?;
    validate_id(&id)?;
    let current = txn.document(&id_key(&id))?;
    expected.check(&id, current.as_ref(), "PUT")?;
    // Keep the id's original spelling from the first write, like RavenDB does on overwrite.
    let stored_id = current.as_ref().map(|c| c.id.clone()).unwrap_or(id);
    // `Reverted` marks only the version a revert wrote.
    let flags = current.as_ref().map(|c| c.flags).unwrap_or(0) & !flags::REVERTED;
    let (client_metadata, server_flags) = with_server_metadata(txn, &id_key(&stored_id), &document.client_metadata)?;
    let mut flags = (flags & !KEPT_BY_SERVER) | server_flags;
    if force_revision_before {
        crate::revisions::writes::force_revision_before_put(txn, &stored_id, current.as_ref())?;
        flags |= flags::HAS_REVISIONS;
    }
    let out = crate::revisions::writes::put_document(
        txn,
        current.as_ref(),
        &stored_id,
        &document.collection,
        document.body,
        client_metadata,
        flags,
        now,
    )?;
    Ok(PutOutcome {
        id: stored_id,
        collection: out.collection,
        change_vector: out.change_vector,
        last_modified: out.last_modified,
        flags: out.flags,
    })
}

/// Deletes document `id` if `expected` holds; deleting a missing document is not an error.
pub(crate) fn delete_document(
    txn: &mut WriteTxn<'_>,
    id: &str,
    expected: &ExpectedChangeVector,
    now: i64,
) -> Result<DeleteOutcome, EngineError> {
    let key = id_key(id);
    let current = txn.document(&key)?;
    expected.check(id, current.as_ref(), "DELETE")?;
    let outcome = crate::revisions::writes::delete_document(txn, &key, now)?;
    Ok(DeleteOutcome { id: id.to_owned(), deleted: outcome.is_some(), change_vector: outcome.map(|o| o.change_vector) })
}

/// Deletes every document whose id starts with `prefix`; true when there was at least one.
pub(crate) fn delete_documents_with_prefix(txn: &mut WriteTxn<'_>, prefix: &str, now: i64) -> Result<bool, EngineError> {
    let keys = txn.document_keys_with_prefix(&id_key(prefix))?;
    for key in &keys {
        crate::revisions::writes::delete_document(txn, key, now)?;
    }
    Ok(!keys.is_empty())
}
