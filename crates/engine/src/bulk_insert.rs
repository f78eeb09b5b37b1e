//! Bulk insert: a streamed array of PUT commands written through large merged transactions. Parsing runs on
//! the caller's thread while the writer commits the previous batch, so both cores work; at most two batches
//! are in flight, so memory stays flat however long the stream is. A failure or an abort leaves every batch
//! committed before it intact.

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::mpsc;

use corvid_types::{id_key, now_nanos};
use serde_json::value::RawValue;

use crate::batch::{put_in_txn, ExpectedChangeVector};
use crate::json_stream::JsonArrayReader;
use crate::operations::Operation;
use crate::{Database, EngineError, IncomingDocument};

/// A batch is committed when it holds this many documents...
const BATCH_DOCUMENTS: usize = 8192;
/// ...or this many bytes of JSON.
const BATCH_BYTES: usize = 8 << 20;
/// Batches handed to the writer and not yet durable.
const IN_FLIGHT: usize = 2;

#[derive(Debug, Clone, Copy, Default)]
pub struct BulkInsertOptions {
    /// A document identical to the stored one is not written again (no new etag, no re-indexing).
    pub skip_overwrite_if_unchanged: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BulkInsertSummary {
    pub documents: u64,
    pub skipped_unchanged: u64,
    pub bytes: u64,
    pub batches: u64,
}

struct Pending {
    documents: Vec<(String, IncomingDocument)>,
    bytes: usize,
}

type BatchAnswer = mpsc::Receiver<Result<(u64, u64), EngineError>>;

/// One command of the stream; the document stays unparsed (only its `@metadata` is read).
#[derive(serde::Deserialize)]
struct Command<'a> {
    #[serde(rename = "Id", default, borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "Type", default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "Document", default, borrow)]
    document: Option<&'a RawValue>,
}

fn parse_command(element: &[u8], index: u64) -> Result<(String, IncomingDocument), EngineError> {
    let text = std::str::from_utf8(element)
        .map_err(|e| EngineError::bad_request(format!("Bulk insert command #{index} is not valid UTF-8: {e}")))?;
    let command: Command<'_> =
        serde_json::from_str(text).map_err(|e| EngineError::bad_request(format!("Bulk insert command #{index} is not valid JSON: {e}")))?;
    let kind = command.kind.as_deref().unwrap_or("PUT");
    if kind != "PUT" {
        return Err(EngineError::bad_request(format!(
            "Bulk insert command #{index}: type '{kind}' is not supported by this server yet (only PUT)"
        )));
    }
    let id = match command.id {
        Some(id) if !id.is_empty() => id.into_owned(),
        _ => return Err(EngineError::bad_request(format!("Bulk insert command #{index} needs a non-empty 'Id'"))),
    };
    corvid_types::validate_id(&id)?;
    let document = match command.document {
        Some(raw) if raw.get().trim_start().starts_with('{') => IncomingDocument::from_raw(raw)?,
        _ => return Err(EngineError::bad_request(format!("Bulk insert command #{index} ({id}) needs a 'Document' object"))),
    };
    Ok((id, document))
}

impl Database {
    /// Reads the whole stream and writes its documents; `operation` shows progress and can cancel.
    pub fn bulk_insert(
        &self,
        input: impl BufRead,
        options: BulkInsertOptions,
        operation: &Operation,
    ) -> Result<BulkInsertSummary, EngineError> {
        let mut reader = JsonArrayReader::new(input);
        let mut summary = BulkInsertSummary::default();
        let mut in_flight: VecDeque<BatchAnswer> = VecDeque::new();
        let mut pending = Pending { documents: Vec::new(), bytes: 0 };
        let mut element = Vec::with_capacity(4096);
        let mut index = 0u64;
        let settle = |answer: BatchAnswer, summary: &mut BulkInsertSummary| -> Result<(), EngineError> {
            let (written, skipped) =
                answer.recv().unwrap_or_else(|_| Err(EngineError::ShuttingDown { database: self.name().to_owned() }))?;
            summary.documents += written;
            summary.skipped_unchanged += skipped;
            summary.batches += 1;
            operation.add_processed(written + skipped);
            Ok(())
        };
        loop {
            let more = reader.next_element(&mut element)?;
            if more {
                pending.bytes += element.len();
                pending.documents.push(parse_command(&element, index)?);
                index += 1;
            }
            let full = pending.documents.len() >= BATCH_DOCUMENTS || pending.bytes >= BATCH_BYTES;
            if (full || !more) && !pending.documents.is_empty() {
                if operation.is_canceled() {
                    return Err(EngineError::bad_request("The bulk insert was aborted (its operation was killed)"));
                }
                let batch = std::mem::replace(&mut pending, Pending { documents: Vec::new(), bytes: 0 });
                in_flight.push_back(self.submit_bulk_batch(batch.documents, options)?);
                while in_flight.len() >= IN_FLIGHT {
                    settle(in_flight.pop_front().expect("non-empty"), &mut summary)?;
                }
            }
            if !more {
                break;
            }
        }
        while let Some(answer) = in_flight.pop_front() {
            settle(answer, &mut summary)?;
        }
        summary.bytes = reader.offset();
        Ok(summary)
    }

    fn submit_bulk_batch(
        &self,
        documents: Vec<(String, IncomingDocument)>,
        options: BulkInsertOptions,
    ) -> Result<BatchAnswer, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.write(
            move |txn| {
                let now = now_nanos();
                let (mut written, mut skipped) = (0u64, 0u64);
                for (id, document) in documents {
                    if options.skip_overwrite_if_unchanged {
                        if let Some(current) = txn.document(&id_key(&id))? {
                            if current.body == document.body
                                && current.client_metadata == document.client_metadata
                                && current.collection.eq_ignore_ascii_case(&document.collection)
                            {
                                skipped += 1;
                                continue;
                            }
                        }
                    }
                    put_in_txn(txn, &id, &ExpectedChangeVector::Any, document, now)?;
                    written += 1;
                }
                Ok((written, skipped))
            },
            move |result| {
                let _ = tx.send(result);
            },
        )?;
        Ok(rx)
    }
}
