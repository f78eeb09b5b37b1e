//! Items of the `Docs` and `RevisionDocuments` sections: attachment headers (their content follows them
//! raw and is staged in the attachment store) and documents (their `@metadata` lifted into what storage
//! keeps, their attachments taken from the staged contents).

use std::collections::HashMap;
use std::io::BufRead;

use corvid_storage::{flags, NewRevision, StagedBlob};
use corvid_types::{metadata as meta, now_nanos, parse_date_ms};
use serde_json::Value;

use super::batch_writer::{BatchWriter, ImportItem, ImportedDocument};
use super::dump_reader::DumpReader;
use crate::document::split_raw;
use crate::document_json::flags_from_text;
use crate::smuggler::format::sections::{ATTACHMENT_EXPORT_TYPE, EXPORT_TYPE};
use crate::{EngineError, IncomingDocument};

/// What an item of a documents section is.
pub(crate) enum DocumentsItem {
    /// An attachment header; its content follows in the stream.
    Attachment { hash: String, size: u64 },
    /// A document or revision: its fields but `@metadata` (as written) and its `@metadata`, parsed.
    Document { body: String, metadata: serde_json::Map<String, Value> },
}

/// Reads an item once: its fields are split without parsing their values, only `@metadata` is parsed
/// (the document's body is then stored as split here; nothing parses it again).
pub(crate) fn classify(item: &[u8]) -> Result<DocumentsItem, String> {
    let text = std::str::from_utf8(item).map_err(|e| format!("not UTF-8: {e}"))?;
    let (body, metadata) = split_raw(text).map_err(|e| format!("not a JSON object: {e}"))?;
    let metadata: serde_json::Map<String, Value> = match metadata {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("@metadata is not an object: {e}"))?,
        None => serde_json::Map::new(),
    };
    if let Some(kind) = metadata.get(EXPORT_TYPE).and_then(Value::as_str) {
        if kind != ATTACHMENT_EXPORT_TYPE {
            return Err(format!("unknown @export-type '{kind}'"));
        }
        let header: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let hash = header.get("Hash").and_then(Value::as_str).ok_or("an attachment header needs a 'Hash'")?;
        let size = header.get("Size").and_then(Value::as_u64).ok_or("an attachment header needs a 'Size'")?;
        return Ok(DocumentsItem::Attachment { hash: hash.to_owned(), size });
    }
    Ok(DocumentsItem::Document { body, metadata })
}

/// `@last-modified` to unix nanoseconds, keeping RavenDB's 100 ns digits (`parse_date_ms` stops at ms).
pub(crate) fn parse_last_modified(text: &str) -> Option<i64> {
    let ms = parse_date_ms(text)?;
    let fraction = text.get(20..).filter(|_| text.as_bytes().get(19) == Some(&b'.')).unwrap_or("");
    let digits: Vec<u8> = fraction.bytes().take_while(u8::is_ascii_digit).collect();
    let mut ticks = 0i64;
    for i in 3..7 {
        ticks = ticks * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
    }
    Some(ms * 1_000_000 + ticks * 100)
}

/// Streams an attachment's content into the attachment store (or past it when `keep` is false); the
/// batch writer makes it durable with the next batch's other contents.
pub(crate) fn stage_attachment<R: BufRead>(
    reader: &mut DumpReader<R>,
    size: u64,
    keep: bool,
    batches: &mut BatchWriter<'_>,
) -> Result<Option<StagedBlob>, EngineError> {
    if !keep {
        reader.read_raw(size, |_| Ok(()))?;
        return Ok(None);
    }
    let mut writer = batches.attachment_writer()?;
    reader.read_raw(size, |chunk| Ok(writer.write(chunk)?))?;
    let unsynced = writer.finish_unsynced()?;
    let blob = unsynced.blob().clone();
    batches.hold_unsynced(unsynced);
    Ok(Some(blob))
}

/// The parts of a document item every section needs.
pub(crate) struct ParsedDocument {
    pub id: String,
    pub document: IncomingDocument,
    pub flags: u32,
    pub change_vector: Option<String>,
    pub last_modified: i64,
    /// `@attachments`: (name, hash, content type).
    pub attachments: Vec<(String, String, String)>,
}

/// A document item `classify` split into `body` and `metadata`; `item` is its whole text (checked against
/// the limits of stored documents).
pub(crate) fn parse_document(item: &[u8], body: String, metadata: serde_json::Map<String, Value>) -> Result<ParsedDocument, String> {
    let id = metadata.get(meta::ID).and_then(Value::as_str).filter(|id| !id.is_empty()).ok_or("a document needs '@metadata.@id'")?;
    let id = id.to_owned();
    let text = std::str::from_utf8(item).map_err(|e| e.to_string())?;
    let flags = metadata.get(meta::FLAGS).and_then(Value::as_str).map(flags_from_text).unwrap_or(0);
    let last_modified = metadata.get(meta::LAST_MODIFIED).and_then(Value::as_str).and_then(parse_last_modified).unwrap_or_else(now_nanos);
    let attachments = metadata
        .get("@attachments")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    let name = a.get("Name")?.as_str()?;
                    let hash = a.get("Hash")?.as_str()?;
                    let content_type = a.get("ContentType").and_then(Value::as_str).unwrap_or("");
                    Some((name.to_owned(), hash.to_owned(), content_type.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    let change_vector = metadata.get(meta::CHANGE_VECTOR).and_then(Value::as_str).map(str::to_owned);
    let document = IncomingDocument::from_split(text, body, Value::Object(metadata)).map_err(|e| e.to_string())?;
    Ok(ParsedDocument { id, document, flags, change_vector, last_modified, attachments })
}

/// The write of a current document; attachments whose content the dump did not carry are reported.
pub(crate) fn document_item(
    parsed: ParsedDocument,
    staged: &HashMap<String, StagedBlob>,
    may_create_revision: bool,
    exact_attachments: bool,
    missing: &mut Vec<String>,
) -> ImportItem {
    let mut attachments = Vec::with_capacity(parsed.attachments.len());
    for (name, hash, content_type) in parsed.attachments {
        match staged.get(&hash) {
            Some(blob) => attachments.push((name, content_type, blob.clone())),
            None => missing.push(format!("Attachment '{name}' of '{}' was skipped: the dump has no content with hash {hash}", parsed.id)),
        }
    }
    ImportItem::Document(Box::new(ImportedDocument {
        id: parsed.id,
        document: parsed.document,
        last_modified: parsed.last_modified,
        has_revisions: parsed.flags & flags::HAS_REVISIONS != 0,
        may_create_revision,
        exact_attachments,
        attachments,
    }))
}

/// The write of a revision (a revision without a change vector gets one made from the import's time, so
/// it is still unique).
pub(crate) fn revision_item(parsed: ParsedDocument) -> ImportItem {
    let change_vector = parsed.change_vector.unwrap_or_else(|| format!("RV:{}-imported", now_nanos()));
    // A delete revision is stored without `Revision`, as the delete that made it stores it.
    let kind = if parsed.flags & flags::DELETE_REVISION != 0 { 0 } else { flags::REVISION };
    let revision_flags = parsed.flags | kind | flags::HAS_REVISIONS;
    ImportItem::Revision(NewRevision {
        id: parsed.id,
        collection: parsed.document.collection,
        change_vector,
        last_modified: parsed.last_modified,
        flags: revision_flags,
        body: parsed.document.body,
        client_metadata: parsed.document.client_metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_modified_keeps_ravendb_ticks() {
        assert_eq!(parse_last_modified("2023-11-14T22:13:20.1234567Z"), Some(1_700_000_000_123_456_700));
        assert_eq!(parse_last_modified("2023-11-14T22:13:20Z"), Some(1_700_000_000_000_000_000));
        assert_eq!(parse_last_modified("garbage"), None);
    }

    #[test]
    fn classifies_attachment_headers_and_documents() {
        let header = br#"{"@metadata":{"@export-type":"Attachment"},"Hash":"abc","Size":3,"Tag":"x"}"#;
        assert!(matches!(classify(header).unwrap(), DocumentsItem::Attachment { size: 3, .. }));
        let doc = br#"{"Name":"a","@metadata":{"@id":"users/1","@collection":"Users","@flags":"HasRevisions"}}"#;
        let DocumentsItem::Document { body, metadata } = classify(doc).unwrap() else { panic!("a document") };
        let parsed = parse_document(doc, body, metadata).unwrap();
        assert_eq!((parsed.id.as_str(), parsed.document.collection.as_str()), ("users/1", "Users"));
        assert_eq!(parsed.flags, flags::HAS_REVISIONS);
        assert!(parse_document(br#"{"a":1}"#, r#"{"a":1}"#.to_owned(), serde_json::Map::new()).is_err());
    }

    #[test]
    fn a_document_is_split_once_as_bulk_insert_splits_it() {
        let doc = br#"{"Name": "a \"b\"", "Tags": [1, {"x": 2}], "@metadata": {"@id": "users/1", "@collection": "Users",
            "@change-vector": "A:1-x", "@last-modified": "2023-11-14T22:13:20.1234567Z", "Raven-Python-Type": "m.U",
            "@attachments": [{"Name": "photo", "Hash": "h", "ContentType": "image/png"}]}, "N": 1.50}"#;
        let DocumentsItem::Document { body, metadata } = classify(doc).unwrap() else { panic!("a document") };
        let parsed = parse_document(doc, body, metadata).unwrap();
        let raw: &serde_json::value::RawValue = serde_json::from_slice(doc).unwrap();
        assert_eq!(parsed.document, IncomingDocument::from_raw(raw).unwrap());
        assert_eq!(parsed.change_vector.as_deref(), Some("A:1-x"));
        assert_eq!(parsed.last_modified, 1_700_000_000_123_456_700);
        assert_eq!(parsed.attachments, vec![("photo".to_owned(), "h".to_owned(), "image/png".to_owned())]);
        for bad in [&b"[1]"[..], br#"{"@metadata": 3}"#, br#"{"a": }"#, br#"{"@metadata":{"@export-type":"Attachment"},"Size":3}"#] {
            assert!(classify(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
