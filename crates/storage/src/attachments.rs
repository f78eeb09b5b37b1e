//! Attachment rows (name, hash, content type, size per document) and the reference count of each content
//! hash. The contents themselves live in the BlobStore.

use crate::record::{Reader, Writer};
use crate::tables::{self, named_key};
use crate::{ReadTxn, StorageError, WriteTxn};
use corvid_types::{format_change_vector, id_key};

const ATTACHMENT_VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentRecord {
    /// As first written.
    pub name: String,
    pub hash: String,
    pub content_type: String,
    pub size: u64,
    pub etag: u64,
    pub change_vector: String,
}

impl AttachmentRecord {
    /// Layout: version u8, size u64, etag u64, name/hash/content type/change vector as u16-length strings.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64 + self.name.len() + self.content_type.len()));
        w.0.push(ATTACHMENT_VERSION);
        w.0.extend_from_slice(&self.size.to_be_bytes());
        w.0.extend_from_slice(&self.etag.to_be_bytes());
        w.str16(&self.name);
        w.str16(&self.hash);
        w.str16(&self.content_type);
        w.str16(&self.change_vector);
        w.0
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader { bytes, table: tables::ATTACHMENTS };
        let version = r.u8()?;
        if version != ATTACHMENT_VERSION {
            return Err(StorageError::corrupted(tables::ATTACHMENTS, format!("unknown record version {version}")));
        }
        Ok(AttachmentRecord {
            size: r.u64()?,
            etag: r.u64()?,
            name: r.str16()?,
            hash: r.str16()?,
            content_type: r.str16()?,
            change_vector: r.str16()?,
        })
    }
}

fn decode_refs(bytes: &[u8]) -> Result<u64, StorageError> {
    tables::decode_etag(bytes).ok_or_else(|| StorageError::corrupted(tables::ATTACHMENT_REFS, "value is not 8 bytes"))
}

impl WriteTxn<'_> {
    pub fn attachment(&self, doc_key: &str, name: &str) -> Result<Option<AttachmentRecord>, StorageError> {
        match self.tables.attachments.get(&self.txn, &named_key(doc_key, &id_key(name)))? {
            Some(bytes) => Ok(Some(AttachmentRecord::decode(bytes)?)),
            None => Ok(None),
        }
    }

    /// Attachments of a document, by lower-cased name.
    pub fn attachments_of(&self, doc_key: &str) -> Result<Vec<AttachmentRecord>, StorageError> {
        let mut out = Vec::new();
        for entry in self.tables.attachments.prefix_iter(&self.txn, &named_key(doc_key, ""))? {
            out.push(AttachmentRecord::decode(entry?.1)?);
        }
        Ok(out)
    }

    /// Stores (or replaces) an attachment row and references its content. The content must be pinned in
    /// the BlobStore by the caller until this transaction is answered.
    pub fn put_attachment(
        &mut self,
        doc_key: &str,
        name: &str,
        hash: &str,
        content_type: &str,
        size: u64,
    ) -> Result<AttachmentRecord, StorageError> {
        self.delete_attachment(doc_key, name)?;
        let etag = self.next_etag()?;
        let record = AttachmentRecord {
            name: name.to_owned(),
            hash: hash.to_owned(),
            content_type: content_type.to_owned(),
            size,
            etag,
            change_vector: format_change_vector(etag, self.database_id),
        };
        self.tables.attachments.put(&mut self.txn, &named_key(doc_key, &id_key(name)), &record.encode())?;
        let refs = match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes)?,
            None => 0,
        };
        self.tables.attachment_refs.put(&mut self.txn, hash.as_bytes(), &(refs + 1).to_be_bytes())?;
        Ok(record)
    }

    /// Removes an attachment row; its content is removed after the commit when nothing references it.
    pub fn delete_attachment(&mut self, doc_key: &str, name: &str) -> Result<Option<AttachmentRecord>, StorageError> {
        let key = named_key(doc_key, &id_key(name));
        let Some(old) = self.tables.attachments.get(&self.txn, &key)?.map(AttachmentRecord::decode).transpose()? else {
            return Ok(None);
        };
        self.tables.attachments.delete(&mut self.txn, &key)?;
        self.dereference(&old.hash)?;
        Ok(Some(old))
    }

    fn dereference(&mut self, hash: &str) -> Result<(), StorageError> {
        let refs = match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes)?,
            None => return Err(StorageError::corrupted(tables::ATTACHMENT_REFS, format!("no reference count for {hash}"))),
        };
        if refs <= 1 {
            self.tables.attachment_refs.delete(&mut self.txn, hash.as_bytes())?;
            self.released.push(hash.to_owned());
        } else {
            self.tables.attachment_refs.put(&mut self.txn, hash.as_bytes(), &(refs - 1).to_be_bytes())?;
        }
        Ok(())
    }

    /// Removes every attachment and counter row of a document (it is being deleted).
    pub(crate) fn delete_document_extras(&mut self, doc_key: &str) -> Result<(), StorageError> {
        for old in self.attachments_of(doc_key)? {
            self.delete_attachment(doc_key, &old.name)?;
        }
        let prefix = named_key(doc_key, "");
        let keys: Vec<Vec<u8>> =
            self.tables.counters.prefix_iter(&self.txn, &prefix)?.map(|e| e.map(|(k, _)| k.to_vec())).collect::<Result<_, _>>()?;
        for key in keys {
            self.tables.counters.delete(&mut self.txn, &key)?;
        }
        Ok(())
    }
}

impl ReadTxn<'_> {
    pub fn attachment(&self, doc_key: &str, name: &str) -> Result<Option<AttachmentRecord>, StorageError> {
        if doc_key.is_empty() || doc_key.len() > 1024 {
            return Ok(None);
        }
        match self.tables.attachments.get(&self.txn, &named_key(doc_key, &id_key(name)))? {
            Some(bytes) => Ok(Some(AttachmentRecord::decode(bytes)?)),
            None => Ok(None),
        }
    }

    pub fn attachments_of(&self, doc_key: &str) -> Result<Vec<AttachmentRecord>, StorageError> {
        let mut out = Vec::new();
        for entry in self.tables.attachments.prefix_iter(&self.txn, &named_key(doc_key, ""))? {
            out.push(AttachmentRecord::decode(entry?.1)?);
        }
        Ok(out)
    }

    /// Number of attachment rows referencing a content hash.
    pub fn attachment_refs(&self, hash: &str) -> Result<u64, StorageError> {
        match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes),
            None => Ok(0),
        }
    }
}
