//! Writes imported items in large merged transactions, as bulk insert does: a batch is submitted when it
//! holds enough items or bytes, at most two are in flight (one filling, one committing), and every write
//! is idempotent (a put replaces, a counter is set to its value, a revision already kept is skipped), so
//! an import repeated after a crash converges on the same data.

use std::collections::VecDeque;
use std::sync::mpsc;

use corvid_storage::{flags, BlobWriter, NewRevision, StagedBlob, TempFileSupply, TimeSeriesEntry, UnsyncedBlob, WriteTxn};
use corvid_types::{id_key, now_nanos};

use crate::attachments::AttachmentCommand;
use crate::counters::{CounterOperation, DocumentCounters};
use crate::smuggler::format::counter_group::DumpCounter;
use crate::smuggler::smuggler_result::SmugglerResult;
use crate::write::document::{delete_document, identity_name, put_document};
use crate::write::metadata::{with_server_metadata, KEPT_BY_SERVER};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// A batch is submitted when it holds this many items...
const BATCH_ITEMS: usize = 8192;
/// ...or this many bytes of JSON.
const BATCH_BYTES: usize = 8 << 20;
/// Batches submitted and not yet durable.
const IN_FLIGHT: usize = 2;
/// Temporary files for attachment contents kept created ahead of the stream.
const TEMP_FILES_AHEAD: usize = 64;

/// A document with its attachments (contents staged and pinned already).
pub(crate) struct ImportedDocument {
    pub id: String,
    pub document: IncomingDocument,
    /// Its `@last-modified`, kept.
    pub last_modified: i64,
    /// Its revisions come with the dump (`HasRevisions`): the put makes none, and keeps the flag.
    pub has_revisions: bool,
    /// The configuration may make a revision of the put (not with `SkipRevisionCreation`).
    pub may_create_revision: bool,
    /// The document keeps exactly `attachments` (a replayed backup: others were deleted since).
    pub exact_attachments: bool,
    pub attachments: Vec<(String, String, StagedBlob)>,
}

/// One write of an import.
pub(crate) enum ImportItem {
    Document(Box<ImportedDocument>),
    Revision(NewRevision),
    /// `exact`: the document's other counters are deleted (a replayed backup's complete section).
    Counters {
        id: String,
        counters: Vec<DumpCounter>,
        exact: bool,
    },
    CompareExchange {
        key: String,
        value: String,
    },
    /// A value the replayed backup no longer has.
    DeleteCompareExchange {
        key: String,
    },
    Identity {
        name: String,
        value: u64,
    },
    /// A segment's live entries.
    TimeSeries {
        id: String,
        name: String,
        entries: Vec<TimeSeriesEntry>,
    },
    /// A range of a series removed (bounds inclusive, unix milliseconds).
    DeleteTimeSeries {
        id: String,
        name: String,
        from: i64,
        to: i64,
    },
    /// `may_create_revision`: the delete may make a delete revision (not with `SkipRevisionCreation`:
    /// the dump's revisions have it already).
    Tombstone {
        id: String,
        may_create_revision: bool,
    },
}

/// What a batch could not write (not failures of the batch).
#[derive(Default)]
struct BatchOutcome {
    counters_of_missing_documents: u64,
    time_series_of_missing_documents: u64,
    notes: Vec<String>,
}

type Answer = mpsc::Receiver<Result<BatchOutcome, EngineError>>;

pub(crate) struct BatchWriter<'a> {
    db: &'a Database,
    pending: Vec<ImportItem>,
    pending_bytes: usize,
    in_flight: VecDeque<Answer>,
    /// Attachment contents staged since the last batch, made durable together before it is submitted.
    unsynced: Vec<UnsyncedBlob>,
    /// Files for attachment contents, created on a thread of their own (started at the first attachment).
    temp_files: Option<TempFileSupply>,
}

impl<'a> BatchWriter<'a> {
    pub fn new(db: &'a Database) -> BatchWriter<'a> {
        BatchWriter { db, pending: Vec::new(), pending_bytes: 0, in_flight: VecDeque::new(), unsynced: Vec::new(), temp_files: None }
    }

    /// Starts staging an attachment content, in a file created ahead of time.
    pub fn attachment_writer(&mut self) -> Result<BlobWriter<'a>, EngineError> {
        let blobs = self.db.store.blobs();
        let supply = match &mut self.temp_files {
            Some(supply) => supply,
            none => none.insert(blobs.temp_file_supply(TEMP_FILES_AHEAD)?),
        };
        Ok(blobs.writer_from(supply)?)
    }

    /// Keeps an attachment content until the next batch, which syncs it with the others before it commits.
    pub fn hold_unsynced(&mut self, blob: UnsyncedBlob) {
        self.unsynced.push(blob);
    }

    /// Queues an item of `bytes` JSON bytes; submits the batch once it is full.
    pub fn push(&mut self, item: ImportItem, bytes: usize, result: &mut SmugglerResult) -> Result<(), EngineError> {
        self.pending.push(item);
        self.pending_bytes += bytes;
        if self.pending.len() >= BATCH_ITEMS || self.pending_bytes >= BATCH_BYTES {
            self.submit(result)?;
        }
        Ok(())
    }

    /// Submits what is pending and waits until every batch is durable.
    pub fn flush(&mut self, result: &mut SmugglerResult) -> Result<(), EngineError> {
        self.submit(result)?;
        while !self.in_flight.is_empty() {
            self.settle(result)?;
        }
        Ok(())
    }

    /// Waits for every batch in flight, ignoring their outcome (the import failed already).
    pub fn abandon(&mut self) {
        self.pending.clear();
        self.unsynced.clear();
        while let Some(answer) = self.in_flight.pop_front() {
            let _ = answer.recv();
        }
    }

    fn submit(&mut self, result: &mut SmugglerResult) -> Result<(), EngineError> {
        // Contents first: the batch may reference any of them.
        self.db.store.blobs().settle(std::mem::take(&mut self.unsynced))?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let items = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let (tx, rx) = mpsc::channel();
        self.db.write(
            move |txn| {
                let mut outcome = BatchOutcome::default();
                for item in items {
                    write_item(txn, item, &mut outcome)?;
                }
                Ok(outcome)
            },
            move |answer| {
                let _ = tx.send(answer);
            },
        )?;
        self.in_flight.push_back(rx);
        while self.in_flight.len() >= IN_FLIGHT {
            self.settle(result)?;
        }
        Ok(())
    }

    fn settle(&mut self, result: &mut SmugglerResult) -> Result<(), EngineError> {
        let Some(answer) = self.in_flight.pop_front() else { return Ok(()) };
        let outcome = answer.recv().unwrap_or_else(|_| Err(EngineError::ShuttingDown { database: self.db.name().to_owned() }))?;
        result.counters.skipped += outcome.counters_of_missing_documents;
        result.time_series.skipped += outcome.time_series_of_missing_documents;
        for note in outcome.notes {
            result.note(note);
        }
        Ok(())
    }
}

fn write_item(txn: &mut WriteTxn<'_>, item: ImportItem, outcome: &mut BatchOutcome) -> Result<(), EngineError> {
    match item {
        ImportItem::Document(doc) => write_document(txn, *doc),
        ImportItem::Revision(revision) => {
            // None: a revision with this change vector is kept already (a repeated import).
            txn.put_revision(revision)?;
            Ok(())
        }
        ImportItem::Counters { id, counters, exact } => write_counters(txn, id, counters, exact, outcome),
        ImportItem::TimeSeries { id, name, entries } => {
            if !super::time_series_writes::write_entries(txn, &id, &name, &entries)? {
                outcome.time_series_of_missing_documents += entries.len() as u64;
                if outcome.notes.len() < 10 {
                    outcome.notes.push(format!("Time series '{name}' of '{id}' was skipped: the document is not in the database"));
                }
            }
            Ok(())
        }
        ImportItem::DeleteTimeSeries { id, name, from, to } => super::time_series_writes::delete_range(txn, &id, &name, from, to),
        ImportItem::DeleteCompareExchange { key } => {
            txn.delete_compare_exchange(&key)?;
            Ok(())
        }
        ImportItem::CompareExchange { key, value } => {
            let index = txn.next_compare_exchange_index()?;
            txn.put_compare_exchange(&key, index, value)?;
            Ok(())
        }
        ImportItem::Identity { name, value } => {
            txn.set_identity(&identity_name(&name), value)?;
            Ok(())
        }
        ImportItem::Tombstone { id, may_create_revision: true } => {
            delete_document(txn, &id, &ExpectedChangeVector::Any, now_nanos())?;
            Ok(())
        }
        ImportItem::Tombstone { id, may_create_revision: false } => {
            txn.delete_document(&id_key(&id), now_nanos())?;
            Ok(())
        }
    }
}

fn write_document(txn: &mut WriteTxn<'_>, doc: ImportedDocument) -> Result<(), EngineError> {
    let ImportedDocument { id, document, last_modified, has_revisions, may_create_revision, exact_attachments, attachments } = doc;
    if may_create_revision && !has_revisions {
        put_document(txn, &id, &ExpectedChangeVector::Any, document, last_modified)?;
    } else {
        let key = id_key(&id);
        let current = txn.document(&key)?;
        let stored_id = current.as_ref().map(|c| c.id.clone()).unwrap_or_else(|| id.clone());
        let (client_metadata, server_flags) = with_server_metadata(txn, &key, &document.client_metadata)?;
        let kept = current.as_ref().map(|c| c.flags).unwrap_or(0) & !(KEPT_BY_SERVER | flags::REVERTED);
        let revision_flag = if has_revisions { flags::HAS_REVISIONS } else { 0 };
        txn.put_document(
            &stored_id,
            &document.collection,
            document.body,
            client_metadata,
            kept | server_flags | revision_flag,
            last_modified,
        )?;
    }
    if exact_attachments {
        let key = id_key(&id);
        let kept: Vec<String> = attachments.iter().map(|(name, _, _)| name.to_lowercase()).collect();
        for existing in txn.attachments_of(&key)? {
            if !kept.contains(&existing.name.to_lowercase()) {
                let command = AttachmentCommand::Delete { id: id.clone(), name: existing.name, expected: ExpectedChangeVector::Any };
                crate::attachments::run(txn, command, last_modified)?;
            }
        }
    }
    for (name, content_type, blob) in attachments {
        let command = AttachmentCommand::Put { id: id.clone(), name, content_type, expected: ExpectedChangeVector::Any, blob };
        crate::attachments::run(txn, command, last_modified)?;
    }
    Ok(())
}

/// Sets each counter to its value from the dump (an increment by the difference), so a repeated import
/// does not add it twice; `exact` deletes the document's counters the dump does not have.
fn write_counters(
    txn: &mut WriteTxn<'_>,
    id: String,
    counters: Vec<DumpCounter>,
    exact: bool,
    outcome: &mut BatchOutcome,
) -> Result<(), EngineError> {
    let key = id_key(&id);
    let Some(document) = txn.document(&key)? else {
        outcome.counters_of_missing_documents += counters.len() as u64;
        if outcome.notes.len() < 10 {
            outcome.notes.push(format!("Counters of '{id}' were skipped: the document is not in the database"));
        }
        return Ok(());
    };
    let mut operations = Vec::with_capacity(counters.len());
    if exact {
        let kept: Vec<String> = counters.iter().map(|c| c.name.to_lowercase()).collect();
        for existing in txn.counters_of(&key)? {
            if !kept.contains(&existing.name.to_lowercase()) {
                operations.push(CounterOperation::Delete { name: existing.name });
            }
        }
    }
    for counter in counters {
        let delta = match txn.counter(&key, &counter.name)? {
            Some(current) if current.value == counter.value => continue,
            Some(current) => counter.value.wrapping_sub(current.value),
            None => counter.value,
        };
        operations.push(CounterOperation::Increment { name: counter.name, delta });
    }
    if !operations.is_empty() {
        // The document keeps its `@last-modified` from the dump.
        crate::counters::run(txn, DocumentCounters { id, operations }, document.last_modified)?;
    }
    Ok(())
}
