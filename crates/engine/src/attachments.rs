//! Attachments: staging uploads, the commands that reference them (put, delete, copy, move) and reading
//! them back. Each change rewrites the document's `@attachments` metadata (`write::metadata`).

use std::fs::File;

use corvid_storage::{AttachmentRecord, StagedBlob, WriteTxn};
use corvid_types::{id_key, now_nanos, validate_name, NameKind};

use crate::write::metadata::refresh_document;
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError};

/// A change to one document's attachments, as a batch command or an attachment endpoint asks it.
#[derive(Debug, Clone)]
pub enum AttachmentCommand {
    /// `blob` was staged with `Database::stage_attachment` and stays pinned until the batch is answered.
    Put {
        /// The document, which must exist.
        id: String,
        /// The attachment's name (a put under an existing name replaces it).
        name: String,
        /// The MIME type stored with it.
        content_type: String,
        /// The document's change vector the client expects.
        expected: ExpectedChangeVector,
        /// The uploaded content.
        blob: StagedBlob,
    },
    /// Removes an attachment; a missing document or attachment is not an error.
    Delete {
        /// The document.
        id: String,
        /// The attachment's name.
        name: String,
        /// The document's change vector the client expects.
        expected: ExpectedChangeVector,
    },
    /// Copy (or, with `remove_source`, move) an attachment to another document and/or name.
    Copy {
        /// The source document.
        id: String,
        /// The source attachment's name.
        name: String,
        /// The destination document, which must exist.
        destination_id: String,
        /// The name the attachment gets there.
        destination_name: String,
        /// Whether the source is removed (a move).
        remove_source: bool,
    },
}

/// An attachment as stored, and the change vector its document has now.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentDetails {
    /// The document, with its id as stored.
    pub document_id: String,
    /// The attachment's name.
    pub name: String,
    /// The content's hash, which names its blob.
    pub hash: String,
    /// The MIME type given at upload.
    pub content_type: String,
    /// The content's length in bytes.
    pub size: u64,
    /// The attachment's own change vector.
    pub change_vector: String,
    /// The document's change vector after the change.
    pub document_change_vector: String,
}

/// What an attachment command did.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachmentReply {
    /// The attachment that was stored.
    Put(AttachmentDetails),
    /// An attachment removed (or already absent).
    Delete {
        /// The document, as the command named it.
        id: String,
        /// The attachment's name, as the command named it.
        name: String,
        /// The document's new change vector; `None` when nothing was removed.
        document_change_vector: Option<String>,
    },
    /// An attachment copied or moved.
    Copy {
        /// The source document, as the command named it.
        source_id: String,
        /// The source attachment's name, as the command named it.
        source_name: String,
        /// Whether the source was removed.
        moved: bool,
        /// The attachment at its destination.
        details: AttachmentDetails,
    },
}

fn missing_document(id: &str) -> EngineError {
    EngineError::DocumentDoesNotExist(id.to_owned())
}

fn details(id: &str, record: AttachmentRecord, document_change_vector: String) -> AttachmentDetails {
    AttachmentDetails {
        document_id: id.to_owned(),
        name: record.name,
        hash: record.hash,
        content_type: record.content_type,
        size: record.size,
        change_vector: record.change_vector,
        document_change_vector,
    }
}

fn checked_document(txn: &WriteTxn<'_>, id: &str, expected: &ExpectedChangeVector) -> Result<String, EngineError> {
    let key = id_key(id);
    let current = txn.document(&key)?;
    if current.is_none() {
        return Err(missing_document(id));
    }
    expected.check(id, current.as_ref(), "attachment change")?;
    Ok(current.map(|d| d.id).unwrap_or_default())
}

/// Checks the attachment names of a command before anything is written (or staged).
pub(crate) fn validate(command: &AttachmentCommand) -> Result<(), EngineError> {
    match command {
        AttachmentCommand::Put { name, .. } | AttachmentCommand::Delete { name, .. } => validate_name(NameKind::Attachment, name)?,
        AttachmentCommand::Copy { name, destination_name, .. } => {
            validate_name(NameKind::Attachment, name)?;
            validate_name(NameKind::Attachment, destination_name)?;
        }
    }
    Ok(())
}

pub(crate) fn run(txn: &mut WriteTxn<'_>, command: AttachmentCommand, now: i64) -> Result<AttachmentReply, EngineError> {
    validate(&command)?;
    match command {
        AttachmentCommand::Put { id, name, content_type, expected, blob } => {
            let stored_id = checked_document(txn, &id, &expected)?;
            let key = id_key(&id);
            let record = txn.put_attachment(&key, &name, &blob.hash, &content_type, blob.size)?;
            let cv = refresh_document(txn, &key, now)?;
            Ok(AttachmentReply::Put(details(&stored_id, record, cv)))
        }
        AttachmentCommand::Delete { id, name, expected } => {
            let key = id_key(&id);
            let Some(doc) = txn.document(&key)? else {
                return Ok(AttachmentReply::Delete { id, name, document_change_vector: None });
            };
            expected.check(&id, Some(&doc), "attachment delete")?;
            let cv = match txn.delete_attachment(&key, &name)? {
                Some(_) => Some(refresh_document(txn, &key, now)?),
                None => None,
            };
            Ok(AttachmentReply::Delete { id, name, document_change_vector: cv })
        }
        AttachmentCommand::Copy { id, name, destination_id, destination_name, remove_source } => {
            let key = id_key(&id);
            let source = txn.attachment(&key, &name)?.ok_or_else(|| {
                EngineError::AttachmentDoesNotExist(format!("There is no attachment with '{name}' name for document '{id}'"))
            })?;
            let destination_key = id_key(&destination_id);
            let stored_destination = checked_document(txn, &destination_id, &ExpectedChangeVector::Any)?;
            let same_attachment = key == destination_key && id_key(&name) == id_key(&destination_name);
            if remove_source && !same_attachment && txn.attachment(&destination_key, &destination_name)?.is_some() {
                return Err(EngineError::Concurrency {
                    message: format!(
                        "Cannot move attachment '{name}' of '{id}' to '{destination_name}' of '{destination_id}': an attachment with that name already exists"
                    ),
                });
            }
            let record = txn.put_attachment(&destination_key, &destination_name, &source.hash, &source.content_type, source.size)?;
            // Onto itself (a rename that only changes case): the row was just replaced, nothing to remove.
            if remove_source && !same_attachment {
                txn.delete_attachment(&key, &name)?;
                if key != destination_key {
                    refresh_document(txn, &key, now)?;
                }
            }
            let cv = refresh_document(txn, &destination_key, now)?;
            Ok(AttachmentReply::Copy {
                source_id: id,
                source_name: name,
                moved: remove_source,
                details: details(&stored_destination, record, cv),
            })
        }
    }
}

impl Database {
    /// Streams an upload into the attachment store (call on a blocking thread). `next_chunk` yields the body
    /// piece by piece and `None` at the end. The result is pinned until `release_attachments`.
    pub fn stage_attachment<C: AsRef<[u8]>>(
        &self,
        mut next_chunk: impl FnMut() -> Option<Result<C, EngineError>>,
    ) -> Result<StagedBlob, EngineError> {
        let mut writer = self.store.blobs().writer()?;
        while let Some(chunk) = next_chunk() {
            writer.write(chunk?.as_ref())?;
        }
        Ok(writer.finish()?)
    }

    /// Unpins staged uploads once the write that referenced them was answered, and removes those that
    /// ended up unreferenced (the write failed).
    pub fn release_attachments(&self, staged: &[StagedBlob]) {
        for blob in staged {
            self.store.blobs().unpin(&blob.hash);
        }
        let hashes: Vec<String> = staged.iter().map(|b| b.hash.clone()).collect();
        self.store.collect_blobs(&hashes);
    }

    /// An attachment and its content, opened for streaming (call on a blocking thread).
    pub fn attachment(&self, id: &str, name: &str) -> Result<Option<(AttachmentDetails, File)>, EngineError> {
        validate_name(NameKind::Attachment, name)?;
        let read = self.store.read()?;
        let key = id_key(id);
        let Some(doc) = read.document(&key)? else { return Ok(None) };
        let Some(record) = read.attachment(&key, name)? else { return Ok(None) };
        let path = self.store.blobs().path_of(&record.hash);
        // Opened while the snapshot still references it; an unlinked file stays readable once open.
        let file = File::open(&path).map_err(|e| EngineError::Internal(format!("attachment content {}: {e}", path.display())))?;
        Ok(Some((details(&doc.id, record, doc.change_vector), file)))
    }

    /// Runs one attachment command as its own batch.
    pub fn attachment_blocking(&self, command: AttachmentCommand) -> Result<AttachmentReply, EngineError> {
        self.write_blocking(move |txn| run(txn, command, now_nanos()))
    }
}
