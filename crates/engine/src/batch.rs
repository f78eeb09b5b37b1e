//! Batches (`bulk_docs`) and single-document writes, with optimistic concurrency. A batch runs as one job of
//! the merger: all of its commands commit together or none does.

use corvid_storage::{DocumentRecord, WriteTxn};
use corvid_types::{id_key, now_nanos, validate_id, NODE_TAG};

use crate::patch::{patch_document, patch_in_txn, PatchCommand, PatchOutcome};
use crate::{AttachmentCommand, AttachmentReply, CountersReply, Database, DocumentCounters, EngineError, IncomingDocument};
use corvid_storage::flags::{HAS_ATTACHMENTS, HAS_COUNTERS};

/// What the client said the document's current change vector must be.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedChangeVector {
    /// No check (`null` or absent).
    Any,
    /// The document must not exist (`""`).
    MustNotExist,
    /// The document must exist with exactly this change vector.
    Exactly(String),
}

impl ExpectedChangeVector {
    pub fn from_wire(value: Option<&str>) -> Self {
        match value {
            None => ExpectedChangeVector::Any,
            Some("") => ExpectedChangeVector::MustNotExist,
            Some(cv) => ExpectedChangeVector::Exactly(cv.to_owned()),
        }
    }

    pub(crate) fn check(&self, id: &str, current: Option<&DocumentRecord>, operation: &str) -> Result<(), EngineError> {
        let violation = |detail: String| EngineError::Concurrency {
            message: format!("{detail}. Optimistic concurrency violation, transaction will be aborted."),
        };
        match (self, current) {
            (ExpectedChangeVector::Any, _) | (ExpectedChangeVector::MustNotExist, None) => Ok(()),
            (ExpectedChangeVector::MustNotExist, Some(doc)) => Err(violation(format!(
                "Document {id} has change vector {}, but {operation} was called expecting the document not to exist",
                doc.change_vector
            ))),
            (ExpectedChangeVector::Exactly(cv), None) => {
                Err(violation(format!("Document {id} does not exist, but {operation} was called with change vector {cv}")))
            }
            (ExpectedChangeVector::Exactly(cv), Some(doc)) if &doc.change_vector != cv => Err(violation(format!(
                "Document {id} has change vector {}, but {operation} was called with change vector {cv}",
                doc.change_vector
            ))),
            (ExpectedChangeVector::Exactly(_), Some(_)) => Ok(()),
        }
    }
}

#[derive(Debug, Clone)]
pub enum BatchCommand {
    Put {
        id: String,
        expected: ExpectedChangeVector,
        document: IncomingDocument,
    },
    Delete {
        id: String,
        expected: ExpectedChangeVector,
    },
    /// `DELETE` with an id ending in `*`: every document whose id starts with the prefix.
    DeletePrefix {
        prefix: String,
    },
    Patch(Box<PatchCommand>),
    /// `JsonPatch`: RFC 6902 operations on the document's body.
    JsonPatch {
        id: String,
        ops: Vec<crate::JsonPatchOp>,
        return_document: bool,
    },
    /// `BatchPATCH`: one script over many documents (each with its own expected change vector).
    BatchPatch {
        ids: Vec<(String, ExpectedChangeVector)>,
        patch: Box<PatchCommand>,
    },
    Attachment(AttachmentCommand),
    Counters(DocumentCounters),
}

#[derive(Debug, Clone, PartialEq)]
pub enum BatchReply {
    Put { id: String, collection: String, change_vector: String, last_modified: i64, flags: u32 },
    Delete { id: String, deleted: bool, change_vector: Option<String> },
    Patch(Box<PatchOutcome>),
    JsonPatch(Box<PatchOutcome>),
    BatchPatch(Vec<PatchOutcome>),
    Attachment(AttachmentReply),
    Counters(CountersReply),
}

/// Checks ids and names up front so a batch with a bad one is refused before it reaches the writer (and
/// before a multipart batch's attachments are staged).
pub fn validate_command(command: &BatchCommand) -> Result<(), EngineError> {
    match command {
        BatchCommand::Put { id, .. } => {
            if id.is_empty() {
                // the server generates one
            } else if !(id.ends_with('/') || id.ends_with('|')) || id.len() <= 1 {
                validate_id(id)?;
            } else {
                validate_id(&id[..id.len() - 1])?;
            }
        }
        BatchCommand::Delete { id, .. } => {
            validate_id(id)?;
        }
        BatchCommand::DeletePrefix { .. } => {}
        BatchCommand::Attachment(command) => crate::attachments::validate(command)?,
        BatchCommand::Counters(command) => crate::counters::validate(command)?,
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

pub(crate) fn put_in_txn(
    txn: &mut WriteTxn<'_>,
    id: &str,
    expected: &ExpectedChangeVector,
    document: IncomingDocument,
    now: i64,
) -> Result<BatchReply, EngineError> {
    let id = resolve_id(txn, id)?;
    validate_id(&id)?;
    let current = txn.document(&id_key(&id))?;
    expected.check(&id, current.as_ref(), "PUT")?;
    // Keep the id's original spelling from the first write, like RavenDB does on overwrite.
    let stored_id = current.as_ref().map(|c| c.id.clone()).unwrap_or(id);
    let flags = current.as_ref().map(|c| c.flags).unwrap_or(0);
    let (client_metadata, extra_flags) = crate::attachments::with_extras(txn, &id_key(&stored_id), &document.client_metadata)?;
    let flags = (flags & !(HAS_ATTACHMENTS | HAS_COUNTERS)) | extra_flags;
    let out = txn.put_document(&stored_id, &document.collection, document.body, client_metadata, flags, now)?;
    Ok(BatchReply::Put {
        id: stored_id,
        collection: out.collection,
        change_vector: out.change_vector,
        last_modified: out.last_modified,
        flags: out.flags,
    })
}

pub(crate) fn delete_in_txn(
    txn: &mut WriteTxn<'_>,
    id: &str,
    expected: &ExpectedChangeVector,
    now: i64,
) -> Result<BatchReply, EngineError> {
    let key = id_key(id);
    let current = txn.document(&key)?;
    expected.check(id, current.as_ref(), "DELETE")?;
    let outcome = txn.delete_document(&key, now)?;
    Ok(BatchReply::Delete { id: id.to_owned(), deleted: outcome.is_some(), change_vector: outcome.map(|o| o.change_vector) })
}

fn run_command(txn: &mut WriteTxn<'_>, command: BatchCommand, now: i64, replies: &mut Vec<BatchReply>) -> Result<(), EngineError> {
    match command {
        BatchCommand::Put { id, expected, document } => replies.push(put_in_txn(txn, &id, &expected, document, now)?),
        BatchCommand::Delete { id, expected } => replies.push(delete_in_txn(txn, &id, &expected, now)?),
        BatchCommand::DeletePrefix { prefix } => {
            let keys = txn.document_keys_with_prefix(&id_key(&prefix))?;
            for key in &keys {
                txn.delete_document(key, now)?;
            }
            replies.push(BatchReply::Delete { id: format!("{prefix}*"), deleted: !keys.is_empty(), change_vector: None });
        }
        BatchCommand::Patch(patch) => replies.push(BatchReply::Patch(Box::new(patch_in_txn(txn, &patch, now)?))),
        BatchCommand::JsonPatch { id, ops, return_document } => {
            replies.push(BatchReply::JsonPatch(Box::new(crate::json_patch::json_patch_in_txn(txn, &id, &ops, return_document, now)?)))
        }
        BatchCommand::BatchPatch { ids, mut patch } => {
            let mut outcomes = Vec::with_capacity(ids.len());
            for (id, expected) in ids {
                patch.expected = expected;
                outcomes.push(patch_document(txn, &id, &patch, None, now)?);
            }
            replies.push(BatchReply::BatchPatch(outcomes));
        }
        BatchCommand::Attachment(command) => replies.push(BatchReply::Attachment(crate::attachments::run(txn, command, now)?)),
        BatchCommand::Counters(command) => replies.push(BatchReply::Counters(crate::counters::run(txn, command, now)?)),
    }
    Ok(())
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
                let mut replies = Vec::with_capacity(commands.len());
                for command in commands {
                    run_command(txn, command, now, &mut replies)?;
                }
                Ok(replies)
            },
            reply,
        )
    }

    pub fn batch_blocking(&self, commands: Vec<BatchCommand>) -> Result<Vec<BatchReply>, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.submit_batch(commands, move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().unwrap_or_else(|_| Err(EngineError::ShuttingDown { database: self.name().to_owned() }))
    }
}

impl Database {
    /// Applies a JSON patch (`PATCH /json-patch`) once it is durable.
    pub fn submit_json_patch(
        &self,
        id: String,
        ops: Vec<crate::JsonPatchOp>,
        reply: impl FnOnce(Result<PatchOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_id(&id)?;
        self.write(move |txn| crate::json_patch::json_patch_in_txn(txn, &id, &ops, true, now_nanos()), reply)
    }

    /// Runs one patch in the writer's transaction and rolls it back (`PATCH /docs?test=true`): the outcome
    /// says what the patch would do, with debug output; nothing is written. Call on a blocking thread.
    pub fn test_patch_blocking(&self, mut command: PatchCommand) -> Result<PatchOutcome, EngineError> {
        validate_id(&command.id)?;
        command.debug = true;
        command.return_document = true;
        self.merger.dry_run_blocking(move |txn| patch_in_txn(txn, &command, now_nanos())).map_err(|e| self.name_error(e))
    }

    /// Applies one patch (`PATCH /docs`) once it is durable.
    pub fn submit_patch(
        &self,
        command: PatchCommand,
        reply: impl FnOnce(Result<PatchOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_id(&command.id)?;
        self.write(move |txn| patch_in_txn(txn, &command, now_nanos()), reply)
    }
}
