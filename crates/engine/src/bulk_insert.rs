//! Bulk insert: a streamed array of commands (document PUTs, counter increments, attachments) written through
//! large merged transactions. Parsing runs on the caller's thread while the writer commits the previous batch,
//! so both cores work; at most two batches are in flight, so memory stays flat however long the stream is.
//! An attachment's content follows its command raw in the stream; it is streamed into the attachment store
//! (synced, pinned) before the batch that references it is submitted. A failure or an abort leaves every batch
//! committed before it intact.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::mpsc;

use corvid_storage::{StagedBlob, UnsyncedBlob};
use corvid_types::{id_key, now_nanos};
use serde_json::value::RawValue;

use crate::attachments::AttachmentCommand;
use crate::counters::{CounterOperation, DocumentCounters};
use crate::json_stream::JsonArrayReader;
use crate::operation_result::BulkInsertSummary;
use crate::operations::Operation;
use crate::time_series::{parse_bulk_command, TimeSeriesBulkBody, TimeSeriesOperation};
use crate::write::document::put_document;
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// A batch is committed when it holds this many commands...
const BATCH_DOCUMENTS: usize = 8192;
/// ...or this many bytes of JSON.
const BATCH_BYTES: usize = 8 << 20;
/// Batches handed to the writer and not yet durable.
const IN_FLIGHT: usize = 2;

/// How a bulk insert writes (the request's query string options).
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkInsertOptions {
    /// A document identical to the stored one is not written again (no new etag, no re-indexing).
    pub skip_overwrite_if_unchanged: bool,
    /// Attachments larger than this are refused (None: no limit).
    pub max_attachment_bytes: Option<u64>,
}

/// One command of the stream, ready for the writer.
enum Item {
    Put(String, IncomingDocument),
    Counters(DocumentCounters),
    /// The content is staged (and pinned) already.
    Attachment(AttachmentCommand),
    TimeSeries(TimeSeriesOperation),
}

#[derive(Default)]
struct Pending {
    items: Vec<Item>,
    /// Staged contents the items reference; unpinned once the batch is answered.
    blobs: Vec<StagedBlob>,
    /// The same contents, made durable together before the batch is submitted (one sync each as they
    /// arrive cost two journal commits per attachment).
    unsynced: Vec<UnsyncedBlob>,
    bytes: usize,
}

#[derive(Default)]
struct BatchCounts {
    written: u64,
    skipped: u64,
    counters: u64,
    attachments: u64,
    time_series: u64,
}

type BatchAnswer = mpsc::Receiver<Result<BatchCounts, EngineError>>;

/// One command of the stream; the document stays unparsed (only its `@metadata` is read).
#[derive(serde::Deserialize)]
struct Command<'a> {
    #[serde(rename = "Id", default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "Type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "Document", default, borrow)]
    document: Option<&'a RawValue>,
    #[serde(rename = "Counters", default)]
    counters: Option<CountersBody>,
    #[serde(rename = "TimeSeries", default)]
    time_series: Option<TimeSeriesBulkBody>,
    #[serde(rename = "Name", default)]
    name: Option<String>,
    #[serde(rename = "ContentType", default)]
    content_type: Option<String>,
    #[serde(rename = "ContentLength", default)]
    content_length: Option<u64>,
}

#[derive(serde::Deserialize)]
struct CountersBody {
    #[serde(rename = "DocumentId", default)]
    document_id: Option<String>,
    #[serde(rename = "Operations", default)]
    operations: Vec<CounterOp>,
}

#[derive(serde::Deserialize)]
struct CounterOp {
    #[serde(rename = "Type", default)]
    kind: Option<String>,
    #[serde(rename = "CounterName", default)]
    name: Option<String>,
    #[serde(rename = "Delta", default)]
    delta: Option<i64>,
}

/// A parsed command; an attachment's content is still in the stream.
enum Parsed {
    Item(Item),
    Attachment { id: String, name: String, content_type: String, length: u64 },
}

fn parse_command(element: &[u8], index: u64) -> Result<Parsed, EngineError> {
    let text = std::str::from_utf8(element)
        .map_err(|e| EngineError::bad_request(format!("Bulk insert command #{index} is not valid UTF-8: {e}")))?;
    let command: Command<'_> =
        serde_json::from_str(text).map_err(|e| EngineError::bad_request(format!("Bulk insert command #{index} is not valid JSON: {e}")))?;
    let id = match command.id {
        Some(id) if !id.is_empty() => id.into_owned(),
        _ => return Err(EngineError::bad_request(format!("Bulk insert command #{index} needs a non-empty 'Id'"))),
    };
    corvid_types::validate_id(&id)?;
    match command.kind.as_deref().unwrap_or("PUT") {
        "PUT" => {
            let document = match command.document {
                Some(raw) if raw.get().trim_start().starts_with('{') => IncomingDocument::from_raw(raw)?,
                _ => return Err(EngineError::bad_request(format!("Bulk insert command #{index} ({id}) needs a 'Document' object"))),
            };
            Ok(Parsed::Item(Item::Put(id, document)))
        }
        "Counters" => {
            let body = command
                .counters
                .ok_or_else(|| EngineError::bad_request(format!("Bulk insert command #{index} ({id}) needs a 'Counters' object")))?;
            let mut operations = Vec::with_capacity(body.operations.len());
            for op in body.operations {
                let name = match op.name {
                    Some(name) if !name.is_empty() => name,
                    _ => {
                        return Err(EngineError::bad_request(format!(
                            "Bulk insert command #{index} ({id}): a counter needs a 'CounterName'"
                        )))
                    }
                };
                operations.push(match op.kind.as_deref().unwrap_or("Increment") {
                    "Increment" => CounterOperation::Increment { name, delta: op.delta.unwrap_or(1) },
                    "Delete" => CounterOperation::Delete { name },
                    other => {
                        return Err(EngineError::bad_request(format!(
                            "Bulk insert command #{index} ({id}): counter operation '{other}' is not allowed (Increment or Delete)"
                        )))
                    }
                });
            }
            let command = DocumentCounters { id: body.document_id.unwrap_or(id), operations };
            crate::counters::validate(&command)?;
            Ok(Parsed::Item(Item::Counters(command)))
        }
        "AttachmentPUT" => {
            let name = match command.name {
                Some(name) if !name.trim().is_empty() => name,
                _ => return Err(EngineError::bad_request(format!("Bulk insert command #{index} ({id}): an attachment needs a 'Name'"))),
            };
            corvid_types::validate_name(corvid_types::NameKind::Attachment, &name)?;
            let length = command.content_length.ok_or_else(|| {
                EngineError::bad_request(format!("Bulk insert command #{index} ({id}): attachment '{name}' needs a 'ContentLength'"))
            })?;
            Ok(Parsed::Attachment { id, name, content_type: command.content_type.unwrap_or_default(), length })
        }
        "TimeSeriesBulkInsert" => {
            let context = format!("Bulk insert command #{index} ({id})");
            let body = command.time_series.ok_or_else(|| EngineError::bad_request(format!("{context} needs a 'TimeSeries' object")))?;
            let op = parse_bulk_command(id, body, &context)?;
            crate::time_series::validate(&op)?;
            Ok(Parsed::Item(Item::TimeSeries(op)))
        }
        other => Err(EngineError::bad_request(format!(
            "Bulk insert command #{index} ({id}): unknown type '{other}' (expected PUT, Counters, AttachmentPUT or TimeSeriesBulkInsert)"
        ))),
    }
}

/// Batches handed to the writer, each with the contents it pins.
struct Stream {
    in_flight: VecDeque<(BatchAnswer, Vec<StagedBlob>)>,
    pending: Pending,
    summary: BulkInsertSummary,
}

impl Database {
    /// Reads the whole stream and writes its commands; `operation` shows progress and can cancel.
    pub fn bulk_insert(
        &self,
        input: impl BufRead,
        options: BulkInsertOptions,
        operation: &Operation,
    ) -> Result<BulkInsertSummary, EngineError> {
        let mut reader = JsonArrayReader::new(input);
        let mut stream = Stream { in_flight: VecDeque::new(), pending: Pending::default(), summary: BulkInsertSummary::default() };
        let result = self.run_stream(&mut reader, &mut stream, options, operation);
        // Contents stay pinned until the batches referencing them are answered, even after a failure.
        let mut unanswered = std::mem::take(&mut stream.pending.blobs);
        while let Some((answer, blobs)) = stream.in_flight.pop_front() {
            let _ = answer.recv();
            unanswered.extend(blobs);
        }
        self.release_attachments(&unanswered);
        result?;
        stream.summary.bytes = reader.offset();
        Ok(stream.summary)
    }

    fn run_stream(
        &self,
        reader: &mut JsonArrayReader<impl BufRead>,
        stream: &mut Stream,
        options: BulkInsertOptions,
        operation: &Operation,
    ) -> Result<(), EngineError> {
        let mut element = Vec::with_capacity(4096);
        let mut index = 0u64;
        loop {
            let more = reader.next_element(&mut element)?;
            if more {
                stream.pending.bytes += element.len();
                let item = match parse_command(&element, index)? {
                    Parsed::Item(item) => item,
                    Parsed::Attachment { id, name, content_type, length } => {
                        if let Some(limit) = options.max_attachment_bytes.filter(|limit| length > *limit) {
                            return Err(EngineError::bad_request(format!(
                                "Bulk insert command #{index} ({id}): attachment '{name}' has {length} bytes, more than the limit of {limit}"
                            )));
                        }
                        let mut writer = self.store.blobs().writer()?;
                        reader.read_raw(length, |chunk| Ok(writer.write(chunk)?))?;
                        let unsynced = writer.finish_unsynced()?;
                        let blob = unsynced.blob().clone();
                        stream.pending.unsynced.push(unsynced);
                        stream.pending.blobs.push(blob.clone());
                        Item::Attachment(AttachmentCommand::Put { id, name, content_type, expected: ExpectedChangeVector::Any, blob })
                    }
                };
                stream.pending.items.push(item);
                index += 1;
            }
            let full = stream.pending.items.len() >= BATCH_DOCUMENTS || stream.pending.bytes >= BATCH_BYTES;
            if (full || !more) && !stream.pending.items.is_empty() {
                if operation.is_canceled() {
                    return Err(EngineError::bad_request("The bulk insert was aborted (its operation was killed)"));
                }
                self.store.blobs().settle(std::mem::take(&mut stream.pending.unsynced))?;
                let batch = std::mem::take(&mut stream.pending);
                stream.in_flight.push_back((self.submit_bulk_batch(batch.items, options)?, batch.blobs));
                while stream.in_flight.len() >= IN_FLIGHT {
                    self.settle(stream, operation)?;
                }
            }
            if !more {
                break;
            }
        }
        while !stream.in_flight.is_empty() {
            self.settle(stream, operation)?;
        }
        Ok(())
    }

    /// Waits for the oldest batch in flight and unpins its contents.
    fn settle(&self, stream: &mut Stream, operation: &Operation) -> Result<(), EngineError> {
        let (answer, blobs) = stream.in_flight.pop_front().expect("a batch in flight");
        let result = answer.recv().unwrap_or_else(|_| Err(EngineError::ShuttingDown { database: self.name().to_owned() }));
        self.release_attachments(&blobs);
        let counts = result?;
        let summary = &mut stream.summary;
        summary.documents += counts.written;
        summary.skipped_unchanged += counts.skipped;
        summary.counters += counts.counters;
        summary.attachments += counts.attachments;
        summary.time_series += counts.time_series;
        summary.batches += 1;
        operation.add_processed(counts.written + counts.skipped + counts.counters + counts.attachments + counts.time_series);
        Ok(())
    }

    fn submit_bulk_batch(&self, items: Vec<Item>, options: BulkInsertOptions) -> Result<BatchAnswer, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.write(
            move |txn| {
                let now = now_nanos();
                let mut counts = BatchCounts::default();
                for item in items {
                    match item {
                        Item::Put(id, document) => {
                            if options.skip_overwrite_if_unchanged {
                                if let Some(current) = txn.document(&id_key(&id))? {
                                    if current.body == document.body
                                        && current.client_metadata == document.client_metadata
                                        && current.collection.eq_ignore_ascii_case(&document.collection)
                                    {
                                        counts.skipped += 1;
                                        continue;
                                    }
                                }
                            }
                            put_document(txn, &id, &ExpectedChangeVector::Any, document, now)?;
                            counts.written += 1;
                        }
                        Item::Counters(command) => {
                            counts.counters += command.operations.len() as u64;
                            crate::counters::run(txn, command, now)?;
                        }
                        Item::Attachment(command) => {
                            crate::attachments::run(txn, command, now)?;
                            counts.attachments += 1;
                        }
                        Item::TimeSeries(op) => {
                            counts.time_series += op.appends.len() as u64;
                            crate::time_series::run(txn, op, now)?;
                        }
                    }
                }
                Ok(counts)
            },
            move |result| {
                let _ = tx.send(result);
            },
        )?;
        Ok(rx)
    }
}
