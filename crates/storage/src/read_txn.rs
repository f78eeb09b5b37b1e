//! Reads on a snapshot.

use heed::{RoTxn, WithoutTls};

use crate::reader_gate::ReaderPass;
use crate::record::{DocumentRecord, Tombstone};
use crate::tables::{self, decode_etag, Tables};
use crate::StorageError;

/// A consistent snapshot of one database; reads never wait for the writer.
pub struct ReadTxn<'e> {
    pub(crate) txn: RoTxn<'e, WithoutTls>,
    pub(crate) tables: Tables,
    /// Declared after `txn`, so the transaction ends before the pass (see `reader_gate.rs`).
    pub(crate) _pass: ReaderPass<'e>,
}

impl ReadTxn<'_> {
    pub(crate) fn page_size(&self) -> Result<u32, StorageError> {
        Ok(self.tables.meta.stat(&self.txn)?.page_size)
    }

    /// Bytes of the pages the tables use (free pages and LMDB's own bookkeeping not counted).
    pub(crate) fn table_page_bytes(&self) -> Result<u64, StorageError> {
        let mut bytes = 0u64;
        for (_, table) in self.tables.all() {
            let stat = table.stat(&self.txn)?;
            bytes += (stat.leaf_pages + stat.branch_pages + stat.overflow_pages) as u64 * u64::from(stat.page_size);
        }
        Ok(bytes)
    }

    /// The document whose lower-cased id is `key`.
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

    /// Documents whose lower-cased id starts with `prefix`, in id order, after `start_after` (a lower-cased
    /// id) if given. `visit` returns false to stop.
    pub fn documents_with_prefix(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        mut visit: impl FnMut(DocumentRecord) -> bool,
    ) -> Result<(), StorageError> {
        for entry in self.tables.docs.prefix_iter(&self.txn, prefix.as_bytes())? {
            let (key, value) = entry?;
            if let Some(after) = start_after {
                if key <= after.as_bytes() {
                    continue;
                }
            }
            if !visit(DocumentRecord::decode(value)?) {
                break;
            }
        }
        Ok(())
    }

    /// All documents, newest first.
    pub fn documents_newest_first(&self, mut visit: impl FnMut(DocumentRecord) -> bool) -> Result<(), StorageError> {
        for entry in self.tables.docs_by_etag.rev_iter(&self.txn)? {
            let (_, key) = entry?;
            let bytes = self.tables.docs.get(&self.txn, key)?.ok_or_else(|| {
                StorageError::corrupted(
                    tables::DOCS_BY_ETAG,
                    format!("etag entry points to missing document {}", String::from_utf8_lossy(key)),
                )
            })?;
            if !visit(DocumentRecord::decode(bytes)?) {
                break;
            }
        }
        Ok(())
    }

    /// Documents with an etag greater than `after`, oldest first.
    pub fn documents_after_etag(&self, after: u64, mut visit: impl FnMut(DocumentRecord) -> bool) -> Result<(), StorageError> {
        let start = (after.saturating_add(1)).to_be_bytes();
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Unbounded);
        for entry in self.tables.docs_by_etag.range(&self.txn, &range)? {
            let (_, key) = entry?;
            let bytes = self.tables.docs.get(&self.txn, key)?.ok_or_else(|| {
                StorageError::corrupted(
                    tables::DOCS_BY_ETAG,
                    format!("etag entry points to missing document {}", String::from_utf8_lossy(key)),
                )
            })?;
            if !visit(DocumentRecord::decode(bytes)?) {
                break;
            }
        }
        Ok(())
    }

    /// Tombstones with an etag greater than `after`, oldest first.
    pub fn tombstones_after_etag(&self, after: u64, mut visit: impl FnMut(Tombstone) -> bool) -> Result<(), StorageError> {
        let start = (after.saturating_add(1)).to_be_bytes();
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Unbounded);
        for entry in self.tables.tombstones.range(&self.txn, &range)? {
            let (key, value) = entry?;
            let etag = decode_etag(key).ok_or_else(|| StorageError::corrupted(tables::TOMBSTONES, "key is not 8 bytes"))?;
            if !visit(Tombstone::decode(etag, value)?) {
                break;
            }
        }
        Ok(())
    }

    /// Documents of one collection (lower-cased name) with an etag greater than `after`, oldest first.
    pub fn collection_documents_after_etag(
        &self,
        collection_lower: &str,
        after: u64,
        mut visit: impl FnMut(DocumentRecord) -> bool,
    ) -> Result<(), StorageError> {
        let start = tables::collection_etag_key(collection_lower, after.saturating_add(1));
        let end = tables::collection_etag_key(collection_lower, u64::MAX);
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Included(&end[..]));
        for entry in self.tables.collection_etags.range(&self.txn, &range)? {
            let (_, key) = entry?;
            let bytes = self.tables.docs.get(&self.txn, key)?.ok_or_else(|| {
                StorageError::corrupted(
                    tables::COLLECTION_ETAGS,
                    format!("entry points to missing document {}", String::from_utf8_lossy(key)),
                )
            })?;
            if !visit(DocumentRecord::decode(bytes)?) {
                break;
            }
        }
        Ok(())
    }

    /// The highest etag of a live document in one collection (lower-cased name), or 0.
    pub fn last_collection_etag(&self, collection_lower: &str) -> Result<u64, StorageError> {
        let prefix = tables::collection_prefix(collection_lower);
        match self.tables.collection_etags.rev_prefix_iter(&self.txn, &prefix)?.next() {
            Some(entry) => {
                let (key, _) = entry?;
                Ok(decode_etag(&key[key.len() - 8..]).unwrap_or(0))
            }
            None => Ok(0),
        }
    }

    /// Number of documents in one collection (lower-cased name).
    pub fn count_collection(&self, collection_lower: &str) -> Result<u64, StorageError> {
        let prefix = tables::collection_prefix(collection_lower);
        let mut n = 0;
        for entry in self.tables.collection_etags.prefix_iter(&self.txn, &prefix)? {
            entry?;
            n += 1;
        }
        Ok(n)
    }

    /// The highest tombstone etag, or 0.
    pub fn last_tombstone_etag(&self) -> Result<u64, StorageError> {
        Ok(self.tables.tombstones.last(&self.txn)?.and_then(|(k, _)| decode_etag(k)).unwrap_or(0))
    }

    /// Number of live documents.
    pub fn count_documents(&self) -> Result<u64, StorageError> {
        Ok(self.tables.docs.len(&self.txn)?)
    }

    /// Number of tombstones.
    pub fn count_tombstones(&self) -> Result<u64, StorageError> {
        Ok(self.tables.tombstones.len(&self.txn)?)
    }

    /// The highest etag handed out so far (`meta/last_etag`: documents, tombstones and attachments).
    pub fn last_etag(&self) -> Result<u64, StorageError> {
        let stored = self.tables.meta.get(&self.txn, tables::meta_keys::LAST_ETAG)?.and_then(decode_etag).unwrap_or(0);
        Ok(stored)
    }

    /// Highest etag of a live document.
    pub fn last_document_etag(&self) -> Result<u64, StorageError> {
        Ok(self.tables.docs_by_etag.last(&self.txn)?.and_then(|(k, _)| decode_etag(k)).unwrap_or(0))
    }

    /// Document count per collection (as the collection was first written), from the collection index.
    pub fn collection_counts(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let mut counts: Vec<(String, String, u64)> = Vec::new();
        for entry in self.tables.collection_etags.iter(&self.txn)? {
            let (key, doc_key) = entry?;
            let len = u16::from_be_bytes([key[0], key[1]]) as usize;
            let lower = &key[2..2 + len];
            match counts.last_mut() {
                Some((l, _, n)) if l.as_bytes() == lower => *n += 1,
                _ => {
                    // Name the collection as its first document spells it.
                    let display = match self.tables.docs.get(&self.txn, doc_key)? {
                        Some(bytes) => DocumentRecord::decode(bytes)?.collection,
                        None => String::from_utf8_lossy(lower).into_owned(),
                    };
                    counts.push((String::from_utf8_lossy(lower).into_owned(), display, 1));
                }
            }
        }
        Ok(counts.into_iter().map(|(_, name, n)| (name, n)).collect())
    }

    /// Current identity values, by lower-cased name.
    pub fn identities(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let mut out = Vec::new();
        for entry in self.tables.identities.iter(&self.txn)? {
            let (k, v) = entry?;
            let value = decode_etag(v).ok_or_else(|| StorageError::corrupted(tables::IDENTITIES, "value is not 8 bytes"))?;
            out.push((String::from_utf8_lossy(k).into_owned(), value));
        }
        Ok(out)
    }
}
