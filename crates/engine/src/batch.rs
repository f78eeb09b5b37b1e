//! Batches (`bulk_docs`): each command is handed to the write it names (a document put or delete, a patch,
//! a JSON patch, an attachment, counter or time-series change) and its outcome becomes the command's reply. A batch runs
//! as one job of the merger: all of its commands commit together or none does.

use corvid_storage::WriteTxn;
use corvid_types::{now_nanos, validate_id};

use crate::attachments::{AttachmentCommand, AttachmentReply};
use crate::counters::{CountersReply, DocumentCounters};
use crate::json_patch::{json_patch_in_txn, JsonPatchOp};
use crate::patch::{patch_document, patch_in_txn, PatchCommand, PatchOutcome};
use crate::revisions::writes::{force_revision, ForcedRevision};
use crate::time_series::TimeSeriesOperation;
use crate::write::document::{delete_document, delete_documents_with_prefix, put_document, put_document_with, DeleteOutcome, PutOutcome};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// One command of a batch, as the client sent it.
#[derive(Debug, Clone)]
pub enum BatchCommand {
    /// `PUT`: stores a document, replacing any with the same id.
    Put {
        /// The id; empty or ending in `/` asks for a generated one, ending in `|` for the next identity.
        id: String,
        /// The change vector the client expects the current document to have.
        expected: ExpectedChangeVector,
        /// The new document.
        document: IncomingDocument,
    },
    /// `DELETE`: removes a document, leaving a tombstone; a missing one is not an error.
    Delete {
        /// The document.
        id: String,
        /// The change vector the client expects the current document to have.
        expected: ExpectedChangeVector,
    },
    /// `DELETE` with an id ending in `*`: every document whose id starts with the prefix.
    DeletePrefix {
        /// The id without its `*`.
        prefix: String,
    },
    /// `PATCH`: a JavaScript patch of one document.
    Patch(Box<PatchCommand>),
    /// `JsonPatch`: RFC 6902 operations on the document's body.
    JsonPatch {
        /// The document.
        id: String,
        /// The operations, applied in order.
        ops: Vec<JsonPatchOp>,
        /// Whether the reply carries the patched document.
        return_document: bool,
    },
    /// `BatchPATCH`: one script over many documents (each with its own expected change vector).
    BatchPatch {
        /// Each document with the change vector the client expects it to have.
        ids: Vec<(String, ExpectedChangeVector)>,
        /// The script and its arguments (its own `expected` is replaced per document).
        patch: Box<PatchCommand>,
    },
    /// `AttachmentPUT`, `AttachmentDELETE`, `AttachmentCOPY` or `AttachmentMOVE`.
    Attachment(AttachmentCommand),
    /// `Counters`: counter operations on one document.
    Counters(DocumentCounters),
    /// `PUT` with `ForceRevisionCreationStrategy: Before`: a revision of the version it replaces is kept
    /// first, whatever the revisions configuration says.
    PutForcingRevision {
        /// The id, as for `Put`.
        id: String,
        /// The change vector the client expects the current document to have.
        expected: ExpectedChangeVector,
        /// The new document.
        document: IncomingDocument,
    },
    /// `ForceRevisionCreation`: a revision of the document's current version, whatever the configuration.
    ForceRevisionCreation {
        /// The document.
        id: String,
    },
    /// `TimeSeries` / `TimeSeriesWithIncrements`: appends, deletes and increments of one series.
    TimeSeries(TimeSeriesOperation),
}

/// The answer to one command of a batch, in the order of the commands.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchReply {
    /// A document stored.
    Put {
        /// The id as stored (the spelling of the first write, or the generated id).
        id: String,
        /// The document's collection.
        collection: String,
        /// Its new change vector.
        change_vector: String,
        /// When it was written, in unix nanoseconds.
        last_modified: i64,
        /// Its document flags (attachments, counters, ...).
        flags: u32,
    },
    /// A document (or, for a prefix delete, `prefix*`) deleted or already absent.
    Delete {
        /// The id as the command named it.
        id: String,
        /// False when there was nothing to delete.
        deleted: bool,
        /// The tombstone's change vector (`None` for a prefix delete or a missing document).
        change_vector: Option<String>,
    },
    /// What a JavaScript patch did.
    Patch(Box<PatchOutcome>),
    /// What a JSON patch did.
    JsonPatch(Box<PatchOutcome>),
    /// What the script did to each document, in the order of the ids.
    BatchPatch(Vec<PatchOutcome>),
    /// What an attachment command did.
    Attachment(AttachmentReply),
    /// What a counters command did.
    Counters(CountersReply),
    /// A compare-exchange value put or deleted by a cluster-wide transaction.
    CompareExchange {
        /// The key as the command named it.
        key: String,
        /// The index of the transaction's write.
        index: u64,
        /// Whether it was a delete (`CompareExchangeDELETE`).
        deleted: bool,
    },
    /// What a `ForceRevisionCreation` command did.
    ForceRevisionCreation(ForcedRevision),
    /// A time-series command applied.
    TimeSeries {
        /// The document.
        id: String,
        /// The document's new change vector when a series was created or removed.
        document_change_vector: Option<String>,
    },
}

/// Checks ids and names up front so a batch with a bad one is refused before it reaches the writer (and
/// before a multipart batch's attachments are staged).
pub fn validate_command(command: &BatchCommand) -> Result<(), EngineError> {
    match command {
        BatchCommand::Put { id, .. } | BatchCommand::PutForcingRevision { id, .. } => {
            if id.is_empty() {
                // the server generates one
            } else if !(id.ends_with('/') || id.ends_with('|')) || id.len() <= 1 {
                validate_id(id)?;
            } else {
                validate_id(&id[..id.len() - 1])?;
            }
        }
        BatchCommand::Delete { id, .. } | BatchCommand::ForceRevisionCreation { id } => {
            validate_id(id)?;
        }
        BatchCommand::DeletePrefix { .. } => {}
        BatchCommand::Attachment(command) => crate::attachments::validate(command)?,
        BatchCommand::Counters(command) => crate::counters::validate(command)?,
        BatchCommand::TimeSeries(op) => {
            validate_id(&op.document_id)?;
            crate::time_series::validate(op)?;
        }
        BatchCommand::Patch(patch) => {
            validate_id(&patch.id)?;
        }
        BatchCommand::JsonPatch { id, .. } => {
            validate_id(id)?;
        }
        BatchCommand::BatchPatch { ids, .. } => {
            for (id, _) in ids {
                validate_id(id)?;
            }
        }
    }
    Ok(())
}

impl From<PutOutcome> for BatchReply {
    fn from(put: PutOutcome) -> Self {
        BatchReply::Put {
            id: put.id,
            collection: put.collection,
            change_vector: put.change_vector,
            last_modified: put.last_modified,
            flags: put.flags,
        }
    }
}

impl From<DeleteOutcome> for BatchReply {
    fn from(delete: DeleteOutcome) -> Self {
        BatchReply::Delete { id: delete.id, deleted: delete.deleted, change_vector: delete.change_vector }
    }
}

/// Runs one command of a batch and answers with its reply.
fn run_command(txn: &mut WriteTxn<'_>, command: BatchCommand, now: i64) -> Result<BatchReply, EngineError> {
    Ok(match command {
        BatchCommand::Put { id, expected, document } => put_document(txn, &id, &expected, document, now)?.into(),
        BatchCommand::Delete { id, expected } => delete_document(txn, &id, &expected, now)?.into(),
        BatchCommand::DeletePrefix { prefix } => {
            let deleted = delete_documents_with_prefix(txn, &prefix, now)?;
            BatchReply::Delete { id: format!("{prefix}*"), deleted, change_vector: None }
        }
        BatchCommand::Patch(patch) => BatchReply::Patch(Box::new(patch_in_txn(txn, &patch, now)?)),
        BatchCommand::JsonPatch { id, ops, return_document } => {
            BatchReply::JsonPatch(Box::new(json_patch_in_txn(txn, &id, &ops, return_document, now)?))
        }
        BatchCommand::BatchPatch { ids, mut patch } => {
            let mut outcomes = Vec::with_capacity(ids.len());
            for (id, expected) in ids {
                patch.expected = expected;
                outcomes.push(patch_document(txn, &id, &patch, None, now)?);
            }
            BatchReply::BatchPatch(outcomes)
        }
        BatchCommand::Attachment(command) => BatchReply::Attachment(crate::attachments::run(txn, command, now)?),
        BatchCommand::Counters(command) => BatchReply::Counters(crate::counters::run(txn, command, now)?),
        BatchCommand::PutForcingRevision { id, expected, document } => put_document_with(txn, &id, &expected, document, true, now)?.into(),
        BatchCommand::ForceRevisionCreation { id } => BatchReply::ForceRevisionCreation(force_revision(txn, &id, now)?),
        BatchCommand::TimeSeries(op) => {
            let id = op.document_id.clone();
            BatchReply::TimeSeries { id, document_change_vector: crate::time_series::run(txn, op, now)? }
        }
    })
}

impl Database {
    /// Queues a batch; `reply` gets one reply per command once the batch is durable, or the first error
    /// (then nothing of the batch was written).
    pub fn submit_batch(
        &self,
        commands: Vec<BatchCommand>,
        reply: impl FnOnce(Result<Vec<BatchReply>, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        for command in &commands {
            validate_command(command)?;
        }
        self.write(
            move |txn| {
                let now = now_nanos();
                commands.into_iter().map(|command| run_command(txn, command, now)).collect()
            },
            reply,
        )
    }

    /// `POST /timeseries`: one operation in its own transaction, waited for (call on a blocking thread).
    pub fn time_series_blocking(&self, op: TimeSeriesOperation) -> Result<(), EngineError> {
        self.batch_blocking(vec![BatchCommand::TimeSeries(op)]).map(|_| ())
    }

    /// Runs a batch and waits until it is durable (call on a blocking thread).
    pub fn batch_blocking(&self, commands: Vec<BatchCommand>) -> Result<Vec<BatchReply>, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.submit_batch(commands, move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().unwrap_or_else(|_| Err(EngineError::ShuttingDown { database: self.name().to_owned() }))
    }
}
