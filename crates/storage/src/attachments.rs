//! Attachment rows (name, hash, content type, size per document) and the reference count of each content
//! hash. The contents themselves live in the BlobStore.

use crate::codec::{Reader, Writer};
use crate::tables::{self, named_key};
use crate::{ReadTxn, StorageError, WriteTxn};
use corvid_types::{format_change_vector, id_key};

const ATTACHMENT_VERSION: u8 = 1;

/// An attachment row: one named content of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentRecord {
    /// As first written.
    pub name: String,
    /// Base64 of the content's BLAKE2b-256 digest (RavenDB's `Attachment-Hash`).
    pub hash: String,
    /// MIME type as the client sent it.
    pub content_type: String,
    /// Length of the content in bytes.
    pub size: u64,
    /// Taken from the database's etag sequence when the attachment was written.
    pub etag: u64,
    /// Change vector of that etag.
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

    /// Reads the layout `encode` writes.
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
    /// The attachment `name` (any case) of the document whose lower-cased id is `doc_key`.
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
        self.refuse_growth_when_low_space()?;
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
        self.txn.put(self.tables.attachments, &named_key(doc_key, &id_key(name)), &record.encode())?;
        let refs = match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes)?,
            None => 0,
        };
        self.txn.put(self.tables.attachment_refs, hash.as_bytes(), &(refs + 1).to_be_bytes())?;
        Ok(record)
    }

    /// Removes an attachment row; its content is removed after the commit when nothing references it.
    pub fn delete_attachment(&mut self, doc_key: &str, name: &str) -> Result<Option<AttachmentRecord>, StorageError> {
        let key = named_key(doc_key, &id_key(name));
        let Some(old) = self.tables.attachments.get(&self.txn, &key)?.map(AttachmentRecord::decode).transpose()? else {
            return Ok(None);
        };
        self.txn.delete(self.tables.attachments, &key)?;
        self.dereference(&old.hash)?;
        Ok(Some(old))
    }

    fn dereference(&mut self, hash: &str) -> Result<(), StorageError> {
        let refs = match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes)?,
            None => return Err(StorageError::corrupted(tables::ATTACHMENT_REFS, format!("no reference count for {hash}"))),
        };
        if refs <= 1 {
            self.txn.delete(self.tables.attachment_refs, hash.as_bytes())?;
            self.released.push(hash.to_owned());
        } else {
            self.txn.put(self.tables.attachment_refs, hash.as_bytes(), &(refs - 1).to_be_bytes())?;
        }
        Ok(())
    }

    /// Removes every attachment, counter and time-series row of a document (it is being deleted).
    pub(crate) fn delete_document_extras(&mut self, doc_key: &str) -> Result<(), StorageError> {
        for old in self.attachments_of(doc_key)? {
            self.delete_attachment(doc_key, &old.name)?;
        }
        let prefix = named_key(doc_key, "");
        let keys: Vec<Vec<u8>> =
            self.tables.counters.prefix_iter(&self.txn, &prefix)?.map(|e| e.map(|(k, _)| k.to_vec())).collect::<Result<_, _>>()?;
        for key in keys {
            self.txn.delete(self.tables.counters, &key)?;
            self.record_item_change(crate::item_changes::ItemKind::Counter, &key)?;
        }
        self.delete_document_time_series(doc_key)?;
        Ok(())
    }
}

impl ReadTxn<'_> {
    /// The attachment `name` (any case) of the document whose lower-cased id is `doc_key`.
    pub fn attachment(&self, doc_key: &str, name: &str) -> Result<Option<AttachmentRecord>, StorageError> {
        // Keys LMDB could not hold cannot have been written.
        if doc_key.is_empty() || doc_key.len() > 1024 || name.len() > corvid_types::MAX_NAME_BYTES {
            return Ok(None);
        }
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

    /// Attachment rows and distinct contents: two table sizes, no scan (monitoring scrapes).
    pub fn attachment_counts(&self) -> Result<(u64, u64), StorageError> {
        Ok((self.tables.attachments.len(&self.txn)?, self.tables.attachment_refs.len(&self.txn)?))
    }

    /// Attachment rows, distinct contents, and documents with counters (RavenDB's `CountOfAttachments`,
    /// `CountOfUniqueAttachments`, `CountOfCounterEntries`).
    pub fn attachment_and_counter_counts(&self) -> Result<(u64, u64, u64), StorageError> {
        let attachments = self.tables.attachments.len(&self.txn)?;
        let unique = self.tables.attachment_refs.len(&self.txn)?;
        let mut documents = 0;
        let mut last: Vec<u8> = Vec::new();
        for entry in self.tables.counters.iter(&self.txn)? {
            let (key, _) = entry?;
            let doc = key.split(|b| *b == tables::NAME_SEPARATOR).next().unwrap_or(key);
            if doc != last.as_slice() {
                documents += 1;
                last = doc.to_vec();
            }
        }
        Ok((attachments, unique, documents))
    }

    /// Number of attachment rows referencing a content hash.
    pub fn attachment_refs(&self, hash: &str) -> Result<u64, StorageError> {
        match self.tables.attachment_refs.get(&self.txn, hash.as_bytes())? {
            Some(bytes) => decode_refs(bytes),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{hash_of, StagedBlob, StorageError, Store, StoreOptions, TransactionMerger};

    fn options() -> StoreOptions {
        StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() }
    }

    fn stage(store: &Store, bytes: &[u8]) -> StagedBlob {
        let mut writer = store.blobs().writer().unwrap();
        for chunk in bytes.chunks(7) {
            writer.write(chunk).unwrap();
        }
        writer.finish().unwrap()
    }

    fn put_doc(merger: &TransactionMerger, id: &'static str) {
        merger.write_blocking(move |txn| txn.put_document(id, "Users", "{}".into(), "{}".into(), 0, 1).map(|_| ())).unwrap();
    }

    fn refs(store: &Store, hash: &str) -> u64 {
        store.read().unwrap().attachment_refs(hash).unwrap()
    }

    #[test]
    fn content_is_stored_once_and_removed_with_its_last_reference() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        put_doc(&merger, "users/1");
        put_doc(&merger, "users/2");
        let data = b"hello attachments".repeat(100);
        let blob = stage(&store, &data);
        assert_eq!(blob.hash, hash_of(&data));
        assert_eq!(blob.size, data.len() as u64);
        let again = stage(&store, &data);
        assert_eq!(again, blob);
        for id in ["users/1", "users/2"] {
            let hash = blob.hash.clone();
            merger.write_blocking(move |txn| txn.put_attachment(id, "a.bin", &hash, "application/octet-stream", 1700).map(|_| ())).unwrap();
        }
        store.blobs().unpin(&blob.hash);
        store.blobs().unpin(&blob.hash);
        let path = store.blobs().path_of(&blob.hash);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        assert_eq!(refs(&store, &blob.hash), 2);

        // Deleting a document deletes its attachments.
        merger.write_blocking(|txn| txn.delete_document("users/1", 2).map(|_| ())).unwrap();
        assert_eq!(refs(&store, &blob.hash), 1);
        assert!(store.read().unwrap().attachments_of("users/1").unwrap().is_empty());
        assert!(path.exists());

        let removed = merger.write_blocking(|txn| txn.delete_attachment("users/2", "A.BIN")).unwrap();
        assert_eq!(removed.map(|r| r.name), Some("a.bin".to_owned()));
        assert_eq!(refs(&store, &blob.hash), 0);
        assert!(!path.exists(), "the last reference removes the content");
    }

    #[test]
    fn a_failed_write_leaves_no_reference_and_no_file_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let blob = stage(&store, b"never committed");
        let hash = blob.hash.clone();
        let result: Result<(), StorageError> = merger.write_blocking(move |txn| {
            txn.put_attachment("users/9", "x", &hash, "", 15)?;
            Err(StorageError::WriterFailed("refused".into()))
        });
        assert!(result.is_err());
        assert_eq!(refs(&store, &blob.hash), 0);
        let path = store.blobs().path_of(&blob.hash);
        assert!(path.exists(), "pinned content stays until released");
        store.blobs().unpin(&blob.hash);
        store.collect_blobs(std::slice::from_ref(&blob.hash));
        assert!(!path.exists());
    }

    #[test]
    fn reopen_keeps_committed_attachments_and_drops_orphans() {
        let dir = tempfile::tempdir().unwrap();
        let kept;
        let orphan;
        {
            let store = Arc::new(Store::open(dir.path(), &options()).unwrap());
            let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
            put_doc(&merger, "users/1");
            kept = stage(&store, b"kept content");
            let hash = kept.hash.clone();
            merger.write_blocking(move |txn| txn.put_attachment("users/1", "k", &hash, "text/plain", 12).map(|_| ())).unwrap();
            // Staged but never committed, as if the process died before its transaction.
            orphan = stage(&store, b"orphan content");
            merger.stop();
        }
        let store = Store::open(dir.path(), &options()).unwrap();
        let read = store.read().unwrap();
        let record = read.attachment("users/1", "K").unwrap().unwrap();
        assert_eq!((record.name.as_str(), record.hash.as_str(), record.size), ("k", kept.hash.as_str(), 12));
        assert_eq!(std::fs::read(store.blobs().path_of(&kept.hash)).unwrap(), b"kept content");
        assert!(!store.blobs().path_of(&orphan.hash).exists());
    }

    #[test]
    fn counters_are_case_insensitive_and_go_with_the_document() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        put_doc(&merger, "users/1");
        let (first, created) = merger.write_blocking(|txn| txn.increment_counter("users/1", "Likes", 5)).unwrap();
        assert!(created && first.value == 5);
        let (second, created) = merger.write_blocking(|txn| txn.increment_counter("users/1", "LIKES", -2)).unwrap();
        assert!(!created);
        assert_eq!((second.name.as_str(), second.value), ("Likes", 3));
        merger.write_blocking(|txn| txn.delete_document("users/1", 2).map(|_| ())).unwrap();
        assert!(store.read().unwrap().counters_of("users/1").unwrap().is_empty());
    }
}
