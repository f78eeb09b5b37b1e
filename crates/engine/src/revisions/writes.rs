//! Revisions written in the same transaction as the document change, following RavenDB's rules: a put whose
//! content changed (or a new document) keeps a revision when its collection's configuration is enabled; the
//! first such put of a document that had none also keeps the version it replaces; a delete keeps a delete
//! revision (or, with `PurgeOnDelete`, removes them all); then old revisions are trimmed to the configuration.
//! HiLo state documents and server-written (artificial) documents never get revisions.

use corvid_storage::{flags, DeleteOutcome, DocumentRecord, NewRevision, PutOutcome, WriteTxn};
use corvid_types::{id_key, metadata as meta};
use serde_json::{Map, Value};

use super::active::in_force;
use super::config::CollectionRevisions;
use super::trim::{delete_all, trim};
use crate::EngineError;

/// The rules for a document of `collection` with `doc_flags`; None when it gets no revisions.
fn rules_for(txn: &WriteTxn<'_>, collection: &str, doc_flags: u32) -> Result<Option<CollectionRevisions>, EngineError> {
    if doc_flags & flags::ARTIFICIAL != 0 || collection.eq_ignore_ascii_case(meta::HILO_COLLECTION) {
        return Ok(None);
    }
    let Some(config) = in_force(txn)? else { return Ok(None) };
    Ok(config.for_collection(collection).cloned())
}

/// Client metadata of a revision: counters as a snapshot of their values (`@counters-snapshot`), as RavenDB
/// keeps them, instead of the list of names.
fn revision_metadata(txn: &WriteTxn<'_>, doc_key: &str, doc: &DocumentRecord) -> Result<String, EngineError> {
    if doc.flags & flags::HAS_COUNTERS == 0 {
        return Ok(doc.client_metadata.clone());
    }
    let mut metadata: Map<String, Value> = corvid_types::json::parse(&doc.client_metadata).unwrap_or_default();
    let mut snapshot = Map::new();
    let mut counters = txn.counters_of(doc_key)?;
    counters.sort_by_key(|c| c.name.to_lowercase());
    for counter in counters {
        snapshot.insert(counter.name, Value::from(counter.value));
    }
    metadata.shift_remove("@counters");
    metadata.insert("@counters-snapshot".into(), Value::Object(snapshot));
    Ok(Value::Object(metadata).to_string())
}

/// Stores a revision of `doc` (as it is stored now) with `extra` flags; None when one with its change
/// vector exists already.
pub(crate) fn keep_revision(txn: &mut WriteTxn<'_>, doc: &DocumentRecord, extra: u32) -> Result<Option<u64>, EngineError> {
    let doc_key = id_key(&doc.id);
    let client_metadata = revision_metadata(txn, &doc_key, doc)?;
    let revision = NewRevision {
        id: doc.id.clone(),
        collection: doc.collection.clone(),
        change_vector: doc.change_vector.clone(),
        last_modified: doc.last_modified,
        flags: doc.flags | flags::HAS_REVISIONS | flags::REVISION | extra,
        body: doc.body.clone(),
        client_metadata,
    };
    Ok(txn.put_revision(revision)?)
}

/// Whether a put of (`collection`, `body`, `client_metadata`) over `old` keeps a revision under `rules`.
fn versions(
    rules: &CollectionRevisions,
    old: Option<&DocumentRecord>,
    collection: &str,
    body: &str,
    client_metadata: &str,
    doc_flags: u32,
) -> bool {
    if rules.disabled {
        return false;
    }
    match old {
        None => true,
        Some(old) => {
            rules.minimum_revisions_to_keep == Some(0)
                || doc_flags & flags::REVERTED != 0
                || old.body != body
                || old.client_metadata != client_metadata
                || !old.collection.eq_ignore_ascii_case(collection)
        }
    }
}

/// Stores a document like `WriteTxn::put_document` (`old` is its current version), keeping revisions as the
/// configuration says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn put_document(
    txn: &mut WriteTxn<'_>,
    old: Option<&DocumentRecord>,
    id: &str,
    collection: &str,
    body: String,
    client_metadata: String,
    doc_flags: u32,
    now: i64,
) -> Result<PutOutcome, EngineError> {
    // Every document put of the engine passes here: queue what `@expires`/`@refresh` ask for.
    crate::expiration::schedule::on_document_put(txn, id, &client_metadata)?;
    let rules = rules_for(txn, collection, doc_flags)?;
    let Some(rules) = rules.filter(|r| versions(r, old, collection, &body, &client_metadata, doc_flags)) else {
        return Ok(txn.put_document(id, collection, body, client_metadata, doc_flags, now)?);
    };
    if let Some(old) = old.filter(|o| o.flags & flags::HAS_REVISIONS == 0) {
        // Revisions were configured after this version was written: keep it too, as RavenDB does.
        keep_revision(txn, old, 0)?;
    }
    let doc_flags = doc_flags | flags::HAS_REVISIONS;
    let out = txn.put_document(id, collection, body.clone(), client_metadata.clone(), doc_flags, now)?;
    let stored = DocumentRecord {
        id: id.to_owned(),
        etag: out.etag,
        last_modified: now,
        flags: out.flags,
        collection: collection.to_owned(),
        change_vector: out.change_vector.clone(),
        body,
        client_metadata,
    };
    keep_revision(txn, &stored, 0)?;
    trim(txn, &id_key(id), &rules, now)?;
    Ok(out)
}

/// Deletes a document like `WriteTxn::delete_document`, keeping a delete revision (or purging its revisions)
/// as the configuration says.
pub(crate) fn delete_document(txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<Option<DeleteOutcome>, EngineError> {
    let Some(old) = txn.document(key)? else { return Ok(None) };
    let Some(out) = txn.delete_document(key, now)? else { return Ok(None) };
    let skipped = old.flags & flags::ARTIFICIAL != 0 || old.collection.eq_ignore_ascii_case(meta::HILO_COLLECTION);
    if skipped {
        return Ok(Some(out));
    }
    let rules = rules_for(txn, &old.collection, old.flags)?;
    let enabled = rules.as_ref().is_some_and(|r| !r.disabled);
    let had_revisions = old.flags & flags::HAS_REVISIONS != 0;
    if !enabled && !had_revisions {
        return Ok(Some(out));
    }
    if rules.as_ref().is_some_and(|r| r.purge_on_delete) {
        delete_all(txn, key)?;
        return Ok(Some(out));
    }
    if enabled && !had_revisions {
        keep_revision(txn, &old, 0)?;
    }
    let revision = NewRevision {
        id: old.id.clone(),
        collection: old.collection.clone(),
        change_vector: out.change_vector.clone(),
        last_modified: now,
        flags: (old.flags & !(flags::HAS_ATTACHMENTS | flags::REVERTED)) | flags::HAS_REVISIONS | flags::DELETE_REVISION,
        body: "{}".to_owned(),
        client_metadata: "{}".to_owned(),
    };
    txn.put_revision(revision)?;
    if let Some(rules) = rules.filter(|r| !r.disabled) {
        trim(txn, key, &rules, now)?;
    }
    Ok(Some(out))
}

/// What a `ForceRevisionCreation` command did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForcedRevision {
    /// The document's id as stored.
    pub id: String,
    /// False when a revision of the current version existed already (nothing written).
    pub created: bool,
    /// The document's change vector (new when the `HasRevisions` flag had to be added).
    pub change_vector: String,
    /// When the document was last written, unix nanoseconds.
    pub last_modified: i64,
    /// The document's flags.
    pub flags: u32,
}

/// Keeps a revision of the current version of document `id` whatever the configuration says (once per
/// version). A document without `HasRevisions` is first rewritten with it, as RavenDB does.
pub(crate) fn force_revision(txn: &mut WriteTxn<'_>, id: &str, now: i64) -> Result<ForcedRevision, EngineError> {
    let key = id_key(id);
    let missing = || EngineError::InvalidOperation(format!("Failed to create revision for document {id} because document doesn't exits."));
    let mut doc = txn.document(&key)?.ok_or_else(missing)?;
    if doc.flags & flags::HAS_REVISIONS == 0 {
        let out = txn.put_document(
            &doc.id,
            &doc.collection,
            doc.body.clone(),
            doc.client_metadata.clone(),
            doc.flags | flags::HAS_REVISIONS,
            now,
        )?;
        doc.etag = out.etag;
        doc.change_vector = out.change_vector;
        doc.last_modified = now;
        doc.flags = out.flags;
    }
    let created = keep_revision(txn, &doc, flags::FORCE_CREATED)?.is_some();
    Ok(ForcedRevision { id: doc.id, created, change_vector: doc.change_vector, last_modified: doc.last_modified, flags: doc.flags })
}

/// Before a put with `ForceRevisionCreationStrategy: Before`: keeps a revision of the version about to be
/// replaced (unless it has one already). Refused for a document the server does not have yet.
pub(crate) fn force_revision_before_put(txn: &mut WriteTxn<'_>, id: &str, current: Option<&DocumentRecord>) -> Result<(), EngineError> {
    let Some(current) = current else {
        return Err(EngineError::InvalidOperation(format!(
            "Can't force revision creation - the document was not saved on the server yet. document: {id}."
        )));
    };
    let mut version = current.clone();
    version.flags |= flags::HAS_REVISIONS;
    keep_revision(txn, &version, flags::FORCE_CREATED)?;
    Ok(())
}
