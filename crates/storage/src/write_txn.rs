//! Writes inside the merger's transaction. Every document write takes the next etag and keeps the three
//! document tables consistent.

use crate::journaled_txn::JournaledTxn;
use crate::record::{DocumentRecord, Tombstone};
use crate::tables::{self, collection_etag_key, decode_etag, etag_key, meta_keys, Tables};
use crate::StorageError;
use corvid_types::{format_change_vector, id_key};

/// One write inside the merger's transaction (nested: a failed write rolls back alone).
pub struct WriteTxn<'t> {
    /// Every write goes through it and is recorded for the journal.
    pub(crate) txn: JournaledTxn<'t>,
    pub(crate) tables: Tables,
    pub(crate) last_etag: u64,
    pub(crate) database_id: &'t str,
    /// Content hashes whose last reference this transaction removed; their files go after the commit.
    pub(crate) released: Vec<String>,
    /// Set in low-space mode (`disk_space.rs`): the database directory, and writes that add data are refused.
    pub(crate) low_space: Option<&'t std::path::Path>,
}

/// What a stored document got.
#[derive(Debug, Clone, PartialEq)]
pub struct PutOutcome {
    /// Its new etag.
    pub etag: u64,
    /// The change vector of that etag.
    pub change_vector: String,
    /// When it was written, unix nanoseconds.
    pub last_modified: i64,
    /// Its collection, as written.
    pub collection: String,
    /// Its flags (`flags`).
    pub flags: u32,
}

/// What a delete left: the tombstone's etag and change vector.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteOutcome {
    /// The tombstone's etag.
    pub etag: u64,
    /// The change vector of that etag.
    pub change_vector: String,
    /// The deleted document's collection.
    pub collection: String,
}

impl WriteTxn<'_> {
    /// The database id of its change vectors.
    pub fn database_id(&self) -> &str {
        self.database_id
    }

    /// The etag the next write in this transaction will get.
    pub fn peek_next_etag(&self) -> u64 {
        self.last_etag + 1
    }

    /// Refuses a write that adds data while the disk is full; deletes never call this.
    pub(crate) fn refuse_growth_when_low_space(&self) -> Result<(), StorageError> {
        match self.low_space {
            None => Ok(()),
            Some(dir) => {
                Err(StorageError::DiskFull { path: dir.to_owned(), available_bytes: crate::disk_space::available_bytes(dir).unwrap_or(0) })
            }
        }
    }

    pub(crate) fn next_etag(&mut self) -> Result<u64, StorageError> {
        self.last_etag += 1;
        let etag = self.last_etag;
        self.txn.put(self.tables.meta, meta_keys::LAST_ETAG, &etag_key(etag))?;
        Ok(etag)
    }

    /// The current version of the document whose lower-cased id is `key`.
    pub fn document(&self, key: &str) -> Result<Option<DocumentRecord>, StorageError> {
        // LMDB refuses empty and oversized keys; no document can have one.
        if key.is_empty() || key.len() > 1024 {
            return Ok(None);
        }
        match self.tables.docs.get(&self.txn, key.as_bytes())? {
            Some(bytes) => Ok(Some(DocumentRecord::decode(bytes)?)),
            None => Ok(None),
        }
    }

    /// Stores a document (new or replacing), giving it a new etag and change vector. `key` must be
    /// `id_key(id)`; `body` and `client_metadata` compact JSON objects.
    pub fn put_document(
        &mut self,
        id: &str,
        collection: &str,
        body: String,
        client_metadata: String,
        flags: u32,
        now: i64,
    ) -> Result<PutOutcome, StorageError> {
        self.refuse_growth_when_low_space()?;
        let key = id_key(id);
        if let Some(old) = self.document(&key)? {
            self.unlink(&key, &old)?;
        }
        let etag = self.next_etag()?;
        let change_vector = format_change_vector(etag, self.database_id);
        let record = DocumentRecord {
            id: id.to_owned(),
            etag,
            last_modified: now,
            flags,
            collection: collection.to_owned(),
            change_vector: change_vector.clone(),
            body,
            client_metadata,
        };
        self.txn.put(self.tables.docs, key.as_bytes(), &record.encode())?;
        self.txn.put(self.tables.docs_by_etag, &etag_key(etag), key.as_bytes())?;
        self.txn.put(self.tables.collection_etags, &collection_etag_key(&id_key(collection), etag), key.as_bytes())?;
        Ok(PutOutcome { etag, change_vector, last_modified: now, collection: collection.to_owned(), flags })
    }

    /// Deletes a document and leaves a tombstone; None when it did not exist.
    pub fn delete_document(&mut self, key: &str, now: i64) -> Result<Option<DeleteOutcome>, StorageError> {
        let Some(old) = self.document(key)? else {
            return Ok(None);
        };
        self.unlink(key, &old)?;
        self.txn.delete(self.tables.docs, key.as_bytes())?;
        self.delete_document_extras(key)?;
        let etag = self.next_etag()?;
        let change_vector = format_change_vector(etag, self.database_id);
        let tombstone =
            Tombstone { etag, id: old.id, collection: old.collection.clone(), change_vector: change_vector.clone(), deleted_at: now };
        self.txn.put(self.tables.tombstones, &etag_key(etag), &tombstone.encode())?;
        Ok(Some(DeleteOutcome { etag, change_vector, collection: old.collection }))
    }

    /// Lower-cased ids of documents whose id starts with `prefix` (lower-cased).
    pub fn document_keys_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let mut keys = Vec::new();
        for entry in self.tables.docs.prefix_iter(&self.txn, prefix.as_bytes())? {
            let (key, _) = entry?;
            keys.push(String::from_utf8_lossy(key).into_owned());
        }
        Ok(keys)
    }

    fn unlink(&mut self, key: &str, old: &DocumentRecord) -> Result<(), StorageError> {
        let removed = self.txn.delete(self.tables.docs_by_etag, &etag_key(old.etag))?;
        let removed_coll = self.txn.delete(self.tables.collection_etags, &collection_etag_key(&id_key(&old.collection), old.etag))?;
        if !removed || !removed_coll {
            return Err(StorageError::corrupted(
                tables::DOCS_BY_ETAG,
                format!("index entries of document {key} (etag {}) are missing", old.etag),
            ));
        }
        Ok(())
    }

    /// The current value of the identity `name` (any case); 0 when never used.
    pub fn identity(&self, name: &str) -> Result<u64, StorageError> {
        Ok(self.tables.identities.get(&self.txn, id_key(name).as_bytes())?.and_then(decode_etag).unwrap_or(0))
    }

    /// Sets the identity `name` (any case) to `value`.
    pub fn set_identity(&mut self, name: &str, value: u64) -> Result<(), StorageError> {
        self.txn.put(self.tables.identities, id_key(name).as_bytes(), &value.to_be_bytes())?;
        Ok(())
    }

    /// Increments and returns the identity `name`.
    pub fn next_identity(&mut self, name: &str) -> Result<u64, StorageError> {
        let next = self.identity(name)? + 1;
        self.set_identity(name, next)?;
        Ok(next)
    }
}
