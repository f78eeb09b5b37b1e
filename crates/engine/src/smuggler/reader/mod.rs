//! Import: a dump read as a stream, section by section, its items written in large merged batches.
//! Attachment contents are staged in the attachment store as they stream past; indexes are created once
//! the documents before them are durable. A malformed or truncated dump stops the import with an error
//! naming the byte, the section and the item; what was written before it stays, and the error says how
//! much that was.

mod batch_writer;
mod definitions;
mod documents;
mod dump_reader;
mod replay;
mod time_series;
mod time_series_writes;

use std::collections::HashMap;
use std::io::{BufRead, Read};

use corvid_storage::StagedBlob;
use serde_json::Value;

use super::format::counter_group;
use super::format::sections::{self, Section, BLOB_SIZE, COMPLETE_SECTIONS};
use super::format::threaded::decompress_on_thread;
use super::item_types::ItemType;
use super::options::ImportOptions;
use super::record_config;
use super::smuggler_result::SmugglerResult;
use super::transform::Transformer;
use super::writer::Progress;
use crate::{Database, EngineError};
use batch_writer::{BatchWriter, ImportItem};
use documents::DocumentsItem;
use dump_reader::{DumpReader, SectionValue};

/// A document item split as `documents::classify` splits it: its body without `@metadata`, and that.
type SplitDocument = (String, serde_json::Map<String, Value>);

/// Progress is reported after this many items.
const PROGRESS_EVERY: u64 = 1024;

struct ImportRun<'a, 'p, R: BufRead> {
    db: &'a Database,
    options: &'a ImportOptions,
    reader: DumpReader<R>,
    writer: BatchWriter<'a>,
    result: SmugglerResult,
    progress: Progress<'p>,
    since_progress: u64,
    /// Where the reader is, for error messages.
    section: String,
    item_index: u64,
    /// Attachment contents of the current section by the dump's hash; pinned until the section is durable.
    staged: HashMap<String, StagedBlob>,
    /// Sections the dump's record says were written whole (Corvid's `CorvidCompleteSections`).
    complete: Vec<String>,
    /// The record's revisions configuration, set once the documents are in.
    revisions_config: Option<crate::revisions::RevisionsConfig>,
    /// The compiled `TransformScript`, run on every current document.
    transform: Option<Transformer>,
}

/// Reads the dump in `input` (gzip, zstd or plain JSON, decompressed on a thread of its own) into the
/// database.
pub fn import(
    db: &Database,
    options: &ImportOptions,
    input: impl Read + Send,
    progress: Progress<'_>,
) -> Result<SmugglerResult, EngineError> {
    std::thread::scope(|scope| import_plain(db, options, decompress_on_thread(scope, input), progress))
}

/// Reads the dump's plain JSON in `stream` into the database.
fn import_plain(
    db: &Database,
    options: &ImportOptions,
    stream: impl BufRead,
    progress: Progress<'_>,
) -> Result<SmugglerResult, EngineError> {
    // Compiled first: a script that does not compile fails the import before anything is written.
    let transform = options.transform.as_ref().map(Transformer::new).transpose()?;
    let mut run = ImportRun {
        db,
        options,
        reader: DumpReader::new(stream),
        writer: BatchWriter::new(db),
        result: SmugglerResult::default(),
        progress,
        since_progress: 0,
        section: String::new(),
        item_index: 0,
        staged: HashMap::new(),
        complete: Vec::new(),
        revisions_config: None,
        transform,
    };
    let outcome = run.sections();
    if outcome.is_err() {
        run.writer.abandon();
    }
    run.release_staged();
    match outcome {
        Ok(()) => {
            run.result.bytes = run.reader.offset();
            Ok(run.result)
        }
        Err(e) => Err(run.stopped(e)),
    }
}

impl<R: BufRead> ImportRun<'_, '_, R> {
    /// The error the import stops with: where in the dump, and what it wrote before.
    fn stopped(&self, e: EngineError) -> EngineError {
        let place = if self.section.is_empty() {
            format!("at byte {}", self.reader.offset())
        } else {
            format!("at byte {} of the dump, section '{}', item #{}", self.reader.offset(), self.section, self.item_index)
        };
        match e {
            EngineError::BadRequest(message) => {
                EngineError::bad_request(format!("The import stopped {place}: {message}. Imported before it: {}", self.result.summary()))
            }
            other => other,
        }
    }

    fn release_staged(&mut self) {
        let blobs: Vec<StagedBlob> = self.staged.drain().map(|(_, blob)| blob).collect();
        if !blobs.is_empty() {
            self.db.release_attachments(&blobs);
        }
    }

    fn advance(&mut self) -> Result<(), EngineError> {
        self.since_progress += 1;
        if self.since_progress >= PROGRESS_EVERY {
            self.report()?;
        }
        Ok(())
    }

    fn report(&mut self) -> Result<(), EngineError> {
        self.since_progress = 0;
        self.result.bytes = self.reader.offset();
        if (self.progress)(&self.result) {
            Ok(())
        } else {
            Err(EngineError::Cancelled)
        }
    }

    fn wants(&self, t: ItemType) -> bool {
        self.options.types.contains(t)
    }

    /// Whether the section replaces the database's state of it (a replayed backup's complete section).
    fn replays(&self, section: &str) -> bool {
        self.options.replay && self.complete.iter().any(|name| name.eq_ignore_ascii_case(section))
    }

    fn sections(&mut self) -> Result<(), EngineError> {
        let mut item = Vec::with_capacity(64 * 1024);
        while let Some((name, value)) = self.reader.next_section()? {
            self.section = name.clone();
            self.item_index = 0;
            let section = Section::of(&name);
            match value {
                SectionValue::Scalar(text) => self.scalar(section, &name, &text)?,
                SectionValue::Object(object) => self.object(section, &name, &object)?,
                SectionValue::Array => self.array(section, &name, &mut item)?,
            }
            self.report()?;
        }
        self.section.clear();
        self.writer.flush(&mut self.result)?;
        if let Some(config) = self.revisions_config.take() {
            self.db.set_revisions_config(Some(config))?;
        }
        self.report()
    }

    fn scalar(&mut self, section: Section, name: &str, text: &[u8]) -> Result<(), EngineError> {
        if section == Section::BuildVersion {
            let build: u64 = std::str::from_utf8(text).ok().and_then(|t| t.trim_matches('"').parse().ok()).unwrap_or(0);
            if (build != 0 && build < 40) || (100..40_000).contains(&build) {
                self.result.note(format!("BuildVersion {build} is a RavenDB 3.x dump; it is read with the 4.x rules"));
            }
        } else {
            self.result.note(format!("Section '{name}' was skipped: Corvid does not know it"));
        }
        Ok(())
    }

    fn object(&mut self, section: Section, name: &str, object: &[u8]) -> Result<(), EngineError> {
        if section == Section::DatabaseRecord {
            let record: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
            self.complete = record
                .get(COMPLETE_SECTIONS)
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
        }
        if section == Section::DatabaseRecord && self.wants(ItemType::DatabaseRecord) {
            // Before the documents: revisions of imported documents follow the imported configuration.
            let record: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
            self.revisions_config = record_config::apply(self.db, &record, &self.options.record_types, &mut self.result)?;
        } else if section != Section::DatabaseRecord {
            self.result.note(format!("Section '{name}' was skipped: Corvid does not know it"));
        }
        Ok(())
    }

    fn array(&mut self, section: Section, name: &str, item: &mut Vec<u8>) -> Result<(), EngineError> {
        match section {
            Section::Docs if self.wants(ItemType::Documents) => self.documents(false, item),
            Section::RevisionDocuments if self.wants(ItemType::RevisionDocuments) => self.documents(true, item),
            Section::Tombstones if self.wants(ItemType::Tombstones) => self.each_json(item, |run, value| {
                run.result.tombstones.processed = true;
                match (value.get("Key").and_then(Value::as_str), value.get("Type").and_then(Value::as_str)) {
                    (Some(key), Some("Document")) => {
                        let may_create_revision = !run.options.skip_revision_creation;
                        run.writer.push(ImportItem::Tombstone { id: key.to_owned(), may_create_revision }, 64, &mut run.result)?;
                        run.result.tombstones.read += 1;
                    }
                    _ => run.result.tombstones.skipped += 1,
                }
                Ok(())
            }),
            Section::Indexes if self.wants(ItemType::Indexes) => {
                // Indexes come after the documents: those must be in before an index starts on them.
                self.writer.flush(&mut self.result)?;
                self.result.indexes.processed = true;
                self.each_json(item, |run, value| definitions::import_index(run.db, &value, &mut run.result))
            }
            Section::Identities if self.wants(ItemType::Identities) => self.each_json(item, |run, value| {
                run.result.identities.processed = true;
                let key = value.get("Key").and_then(Value::as_str);
                let number = match value.get("Value") {
                    Some(Value::String(text)) => text.parse::<u64>().ok(),
                    Some(other) => other.as_u64(),
                    None => None,
                };
                match (key, number) {
                    (Some(key), Some(number)) => {
                        run.writer.push(ImportItem::Identity { name: key.to_owned(), value: number }, 64, &mut run.result)?;
                        run.result.identities.read += 1;
                        Ok(())
                    }
                    _ => Err(EngineError::bad_request("an identity needs a 'Key' and a numeric 'Value'")),
                }
            }),
            Section::CompareExchange if self.wants(ItemType::CompareExchange) => {
                let mut seen = replay::KeySet::new(self.replays(sections::COMPARE_EXCHANGE));
                self.each_json(item, |run, value| {
                    run.result.compare_exchange.processed = true;
                    let key = value
                        .get("Key")
                        .and_then(Value::as_str)
                        .ok_or_else(|| EngineError::bad_request("a compare exchange item needs a 'Key'"))?;
                    let stored = match value.get("Value") {
                        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
                        Some(other) => Some(other.clone()),
                        None => None,
                    };
                    match stored.filter(Value::is_object) {
                        Some(object) => {
                            let text = crate::validate_compare_exchange_value(&object)?;
                            seen.insert(key);
                            run.writer.push(ImportItem::CompareExchange { key: key.to_owned(), value: text }, 128, &mut run.result)?;
                            run.result.compare_exchange.read += 1;
                        }
                        None => {
                            run.result.compare_exchange.errored += 1;
                            run.result.note(format!("Compare exchange '{key}' was skipped: its value is not a JSON object"));
                        }
                    }
                    Ok(())
                })?;
                replay::delete_other_compare_exchange(self.db, &mut self.writer, &seen, &mut self.result)
            }
            Section::CounterGroups | Section::LegacyCounters if self.wants(ItemType::CounterGroups) => {
                let legacy = section == Section::LegacyCounters;
                let exact = !legacy && self.replays(sections::COUNTER_GROUPS);
                let mut seen = replay::KeySet::new(exact);
                self.each_json(item, |run, value| {
                    run.result.counters.processed = true;
                    let parsed = if legacy { counter_group::parse_legacy(&value) } else { counter_group::parse(&value) };
                    let (id, counters) = parsed.map_err(EngineError::bad_request)?;
                    run.result.counters.read += counters.len() as u64;
                    seen.insert(&id);
                    run.writer.push(ImportItem::Counters { id, counters, exact }, 128, &mut run.result)
                })?;
                replay::delete_other_counters(self.db, &mut self.writer, &seen, &mut self.result)
            }
            Section::TimeSeries if self.wants(ItemType::TimeSeries) => self.time_series(item),
            Section::TimeSeriesDeletedRanges if self.wants(ItemType::TimeSeries) => self.time_series_deleted_ranges(item),
            Section::Subscriptions if self.wants(ItemType::Subscriptions) => self.each_json(item, |run, value| {
                run.result.subscriptions.processed = true;
                definitions::import_subscription(run.db, &value, &mut run.result)
            }),
            _ => self.skip_section(section, name, item),
        }
    }

    /// Reads every item of the section as JSON and hands it to `on_item`.
    fn each_json(
        &mut self,
        item: &mut Vec<u8>,
        mut on_item: impl FnMut(&mut Self, Value) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        while self.reader.next_item(item)? {
            self.item_index += 1;
            let value: Value =
                serde_json::from_slice(item).map_err(|e| EngineError::bad_request(format!("the item is not valid JSON: {e}")))?;
            on_item(self, value)?;
            self.advance()?;
        }
        Ok(())
    }

    /// Reads past a section not imported, with the raw bytes some of its items announce.
    fn skip_section(&mut self, section: Section, name: &str, item: &mut Vec<u8>) -> Result<(), EngineError> {
        let mut skipped = 0u64;
        while self.reader.next_item(item)? {
            self.item_index += 1;
            let value: Value =
                serde_json::from_slice(item).map_err(|e| EngineError::bad_request(format!("the item is not valid JSON: {e}")))?;
            let attachment = value.pointer("/@metadata/@export-type").is_some();
            let blob = if attachment { value.get("Size") } else { value.get(BLOB_SIZE) };
            if let Some(size) = blob {
                let size = size.as_u64().ok_or_else(|| EngineError::bad_request("a blob size is not a number"))?;
                self.reader.read_raw(size, |_| Ok(()))?;
            }
            if !attachment {
                skipped += 1;
            }
        }
        let counts = match section {
            Section::Docs => Some(&mut self.result.documents),
            Section::RevisionDocuments => Some(&mut self.result.revision_documents),
            Section::Tombstones => Some(&mut self.result.tombstones),
            Section::Conflicts => Some(&mut self.result.conflicts),
            Section::Indexes => Some(&mut self.result.indexes),
            Section::Identities => Some(&mut self.result.identities),
            Section::CompareExchange => Some(&mut self.result.compare_exchange),
            Section::CounterGroups | Section::LegacyCounters => Some(&mut self.result.counters),
            Section::Subscriptions => Some(&mut self.result.subscriptions),
            Section::TimeSeries => Some(&mut self.result.time_series),
            _ => None,
        };
        match counts {
            Some(counts) => {
                counts.skipped += skipped;
            }
            None if skipped > 0 => self.result.note(format!("Section '{name}' ({skipped} items) was skipped: Corvid does not import it")),
            None => {}
        }
        Ok(())
    }

    /// A current document as the `TransformScript` leaves it (`item` rewritten, split again), None when the
    /// script skips it; revisions and imports without a script pass through.
    fn transformed(
        &self,
        revisions: bool,
        item: &mut Vec<u8>,
        body: String,
        metadata: serde_json::Map<String, Value>,
    ) -> Result<Option<SplitDocument>, EngineError> {
        let Some(transformer) = self.transform.as_ref().filter(|_| !revisions) else { return Ok(Some((body, metadata))) };
        let id = metadata.get(corvid_types::metadata::ID).and_then(Value::as_str).unwrap_or("").to_owned();
        if !transformer.apply_in_place(&id, item)? {
            return Ok(None);
        }
        match documents::classify(item) {
            Ok(DocumentsItem::Document { body, metadata }) => Ok(Some((body, metadata))),
            _ => Err(EngineError::bad_request(format!("the transform script did not leave '{id}' a document"))),
        }
    }

    /// `Docs` or `RevisionDocuments`: attachment contents are staged, documents written with them.
    fn documents(&mut self, revisions: bool, item: &mut Vec<u8>) -> Result<(), EngineError> {
        let keep_attachments = !revisions && self.wants(ItemType::Attachments);
        let may_create_revision = !self.options.skip_revision_creation;
        let exact_attachments = keep_attachments && self.options.replay;
        let mut missing = Vec::new();
        if revisions {
            self.result.revision_documents.processed = true;
        } else {
            self.result.documents.processed = true;
        }
        while self.reader.next_item(item)? {
            self.item_index += 1;
            match documents::classify(item).map_err(|e| EngineError::bad_request(format!("the item cannot be read: {e}")))? {
                DocumentsItem::Attachment { hash, size } => {
                    if let Some(blob) = documents::stage_attachment(&mut self.reader, size, keep_attachments, &mut self.writer)? {
                        if let Some(earlier) = self.staged.insert(hash, blob) {
                            // The same content twice: the store pins it once per staging.
                            self.db.release_attachments(&[earlier]);
                        }
                        self.result.documents.attachments += 1;
                    }
                }
                DocumentsItem::Document { body, metadata } => {
                    let Some((body, metadata)) = self.transformed(revisions, item, body, metadata)? else {
                        self.result.documents.skipped += 1;
                        continue;
                    };
                    let parsed = match documents::parse_document(item, body, metadata) {
                        Ok(parsed) => parsed,
                        Err(e) => {
                            let counts = if revisions { &mut self.result.revision_documents } else { &mut self.result.documents };
                            counts.errored += 1;
                            self.result.note(format!("{} #{} was skipped: {e}", self.section, self.item_index));
                            continue;
                        }
                    };
                    if !self.options.takes_collection(&parsed.document.collection) {
                        let counts = if revisions { &mut self.result.revision_documents } else { &mut self.result.documents };
                        counts.skipped += 1;
                        continue;
                    }
                    let write = if revisions {
                        self.result.revision_documents.read += 1;
                        documents::revision_item(parsed)
                    } else {
                        self.result.documents.read += 1;
                        documents::document_item(parsed, &self.staged, may_create_revision, exact_attachments, &mut missing)
                    };
                    self.writer.push(write, item.len(), &mut self.result)?;
                    for note in missing.drain(..) {
                        self.result.documents.errored += 1;
                        self.result.note(note);
                    }
                }
            }
            self.advance()?;
        }
        // The staged contents stay pinned until the documents referencing them are durable.
        self.writer.flush(&mut self.result)?;
        self.release_staged();
        Ok(())
    }
}
