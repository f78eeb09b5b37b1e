//! The sections of documents and what hangs off them: `Docs` (with attachment contents before the document
//! that references them), `RevisionDocuments`, `Tombstones` and `CounterGroups`.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};

use corvid_storage::{flags, DocumentRecord};
use corvid_types::{format_date, id_key};
use serde_json::json;

use super::{io_error, ExportRun};
use crate::document_json::DocumentJson;
use crate::smuggler::format::counter_group;
use crate::smuggler::format::sections::{self, ATTACHMENT_EXPORT_TYPE, EXPORT_TYPE};
use crate::smuggler::transform::Transformed;
use crate::EngineError;

/// Attachment contents are copied through a buffer this large.
const COPY_BUFFER: usize = 64 * 1024;

/// Whether the export takes this document (its collection, `Artificial`).
pub(super) fn wanted<W: Write>(run: &ExportRun<'_, '_, W>, doc: &DocumentRecord) -> bool {
    run.options.takes_collection(&doc.collection) && (run.options.include_artificial || doc.flags & flags::ARTIFICIAL == 0)
}

/// Walks the documents with an etag above `after` in etag order, stopping at the first error.
pub(super) fn each_document<W: Write>(
    run: &mut ExportRun<'_, '_, W>,
    mut after: u64,
    mut visit: impl FnMut(&mut ExportRun<'_, '_, W>, DocumentRecord) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    // The visitor needs the run mutably while the snapshot is borrowed: walk in pages of etags.
    loop {
        let mut page = Vec::with_capacity(256);
        run.txn.documents_after_etag(after, |doc| {
            page.push(doc);
            page.len() < 256
        })?;
        let Some(last) = page.last() else { return Ok(()) };
        after = last.etag;
        for doc in page {
            visit(run, doc)?;
        }
    }
}

pub(super) fn documents<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::DOCS).map_err(io_error)?;
    run.result.documents.processed = true;
    let mut streamed: HashSet<String> = HashSet::new();
    let after = run.options.after_etag;
    each_document(run, after, |run, doc| {
        if !wanted(run, &doc) {
            run.result.documents.skipped += 1;
            return Ok(());
        }
        let mut json = doc.to_json_string(false);
        if let Some(transform) = &run.transform {
            match transform.apply(&doc.id, &json)? {
                Transformed::Document(text) => json = text,
                Transformed::Skipped => {
                    run.result.documents.skipped += 1;
                    return Ok(());
                }
            }
        }
        if doc.flags & flags::HAS_ATTACHMENTS != 0 && run.options.attachments() {
            write_attachments(run, &doc, &mut streamed)?;
        }
        run.out.item(&json).map_err(io_error)?;
        run.result.documents.read += 1;
        run.advance()
    })?;
    run.out.end_section().map_err(io_error)
}

/// Writes the contents of the document's attachments not written yet in this section: a header item, then
/// the bytes.
fn write_attachments<W: Write>(
    run: &mut ExportRun<'_, '_, W>,
    doc: &DocumentRecord,
    streamed: &mut HashSet<String>,
) -> Result<(), EngineError> {
    let key = id_key(&doc.id);
    for attachment in run.txn.attachments_of(&key)? {
        if streamed.contains(&attachment.hash) {
            continue;
        }
        let path = run.db.store.blobs().path_of(&attachment.hash);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) => {
                run.result
                    .note(format!("Attachment '{}' of '{}' was not exported: its content cannot be read ({e})", attachment.name, doc.id));
                continue;
            }
        };
        let tag = format!("{key}|d|{}|{}|{}", attachment.name, attachment.hash, attachment.content_type);
        let header = json!({
            "@metadata": {EXPORT_TYPE: ATTACHMENT_EXPORT_TYPE}, "Hash": attachment.hash, "Size": attachment.size, "Tag": tag
        });
        run.out.item(&header.to_string()).map_err(io_error)?;
        copy_exactly(run, &mut file, attachment.size)?;
        streamed.insert(attachment.hash);
        run.result.documents.attachments += 1;
    }
    Ok(())
}

/// Copies `size` bytes of the content; a file shorter than its recorded size would break the dump's framing.
fn copy_exactly<W: Write>(run: &mut ExportRun<'_, '_, W>, file: &mut File, size: u64) -> Result<(), EngineError> {
    let mut buffer = vec![0u8; COPY_BUFFER];
    let mut left = size;
    while left > 0 {
        let want = buffer.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = file.read(&mut buffer[..want]).map_err(io_error)?;
        if n == 0 {
            return Err(EngineError::Internal(format!("an attachment content is shorter than its recorded size of {size} bytes")));
        }
        run.out.raw(&buffer[..n]).map_err(io_error)?;
        left -= n as u64;
    }
    Ok(())
}

pub(super) fn revisions<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::REVISION_DOCUMENTS).map_err(io_error)?;
    run.result.revision_documents.processed = true;
    let mut failure = None;
    let txn = &run.txn;
    let out = &mut run.out;
    let options = run.options;
    let result = &mut run.result;
    txn.all_revisions(|revision| {
        if revision.etag <= options.after_etag {
            return true;
        }
        if !options.takes_collection(&revision.collection) {
            result.revision_documents.skipped += 1;
            return true;
        }
        if let Err(e) = out.item(&revision.to_json_string(false)) {
            failure = Some(e);
            return false;
        }
        result.revision_documents.read += 1;
        true
    })?;
    if let Some(e) = failure {
        return Err(io_error(e));
    }
    run.out.end_section().map_err(io_error)
}

pub(super) fn tombstones<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::TOMBSTONES).map_err(io_error)?;
    run.result.tombstones.processed = true;
    let mut failure = None;
    let txn = &run.txn;
    let out = &mut run.out;
    let result = &mut run.result;
    let mut lookup_failure = None;
    txn.tombstones_after_etag(run.options.after_etag, |tombstone| {
        // A document deleted and written again: its current version is in `Docs`, and replaying the
        // delete after it would lose it.
        match txn.document(&id_key(&tombstone.id)) {
            Ok(Some(_)) => return true,
            Ok(None) => {}
            Err(e) => {
                lookup_failure = Some(e);
                return false;
            }
        }
        let item = json!({
            "Key": id_key(&tombstone.id), "Type": "Document", "Collection": tombstone.collection, "Flags": "None",
            "ChangeVector": tombstone.change_vector, "DeletedEtag": tombstone.etag, "Etag": tombstone.etag,
            "LastModified": format_date(tombstone.deleted_at)
        });
        if let Err(e) = out.item(&item.to_string()) {
            failure = Some(e);
            return false;
        }
        result.tombstones.read += 1;
        true
    })?;
    if let Some(e) = lookup_failure {
        return Err(e.into());
    }
    if let Some(e) = failure {
        return Err(io_error(e));
    }
    run.out.end_section().map_err(io_error)
}

pub(super) fn counter_groups<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::COUNTER_GROUPS).map_err(io_error)?;
    run.result.counters.processed = true;
    let database_id = run.db.database_id().to_owned();
    // Every document's counters, also in an incremental backup: a counter's change does not move its
    // document's etag, so the section is written whole (the record marks it complete).
    each_document(run, 0, |run, doc| {
        if doc.flags & flags::HAS_COUNTERS == 0 || !wanted(run, &doc) {
            return Ok(());
        }
        let counters: Vec<(String, i64)> = run.txn.counters_of(&id_key(&doc.id))?.into_iter().map(|c| (c.name, c.value)).collect();
        if counters.is_empty() {
            return Ok(());
        }
        let item = counter_group::render(&doc.id, &doc.change_vector, &database_id, doc.etag, &counters);
        run.out.item(&item.to_string()).map_err(io_error)?;
        run.result.counters.read += counters.len() as u64;
        run.advance()
    })?;
    run.out.end_section().map_err(io_error)
}
