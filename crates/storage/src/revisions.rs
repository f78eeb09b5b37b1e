//! Revision rows: immutable copies of a document, each under (lower-cased id, etag of the revision), with a
//! lookup by change vector, the bin of delete revisions by etag and a collection index. A document's count of
//! revisions is the number of rows under its prefix: they share its B-tree pages, which a stored count did
//! not (format 6 stopped writing `revision_counts`, one more page dirtied per revision write). A revision is a
//! `DocumentRecord` whose change vector is the one of the document write it copies (its own etag is newer).
//! Which writes keep a revision, and how many are kept, is the engine's business.

use crate::record::{flags, DocumentRecord};
use crate::tables::{self, collection_etag_key, decode_etag, etag_key, meta_keys, NAME_SEPARATOR};
use crate::{ReadTxn, StorageError, WriteTxn};

/// Key of a revision row: lower-cased document id, 0x1E, etag (u64 BE).
pub fn revision_key(doc_key: &str, etag: u64) -> Vec<u8> {
    let mut key = revisions_prefix(doc_key);
    key.extend_from_slice(&etag.to_be_bytes());
    key
}

/// Prefix of every revision row of one document.
pub fn revisions_prefix(doc_key: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(doc_key.len() + 9);
    key.extend_from_slice(doc_key.as_bytes());
    key.push(NAME_SEPARATOR);
    key
}

/// Splits a revision row's key into the lower-cased document id and the revision's etag.
pub fn split_revision_key(key: &[u8]) -> Option<(&[u8], u64)> {
    if key.len() < 10 || key[key.len() - 9] != NAME_SEPARATOR {
        return None;
    }
    let (doc, etag) = key.split_at(key.len() - 9);
    Some((doc, decode_etag(&etag[1..])?))
}

/// A revision to store; its etag is given by `put_revision`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRevision {
    /// The document's id as written.
    pub id: String,
    /// The document's collection.
    pub collection: String,
    /// The change vector of the document write (or delete) it copies: unique per revision.
    pub change_vector: String,
    /// When that write happened, unix nanoseconds.
    pub last_modified: i64,
    /// The revision's flags (`flags::REVISION` or `flags::DELETE_REVISION` among them).
    pub flags: u32,
    /// The body (`{}` for a delete revision).
    pub body: String,
    /// The metadata kept with it (counters as a snapshot of their values).
    pub client_metadata: String,
}

fn decode(bytes: &[u8]) -> Result<DocumentRecord, StorageError> {
    DocumentRecord::decode(bytes).map_err(|e| match e {
        StorageError::Corrupted { context, .. } => StorageError::corrupted(tables::REVISIONS, context),
        other => other,
    })
}

/// Keys LMDB could not hold cannot have been written.
fn storable(doc_key: &str) -> bool {
    !doc_key.is_empty() && doc_key.len() <= 1024
}

/// How many revision rows the document whose lower-cased id is `doc_key` has.
fn count_rows(table: &tables::Table, txn: &heed::RoTxn<'_, heed::WithoutTls>, doc_key: &str) -> Result<u64, StorageError> {
    if !storable(doc_key) {
        return Ok(0);
    }
    let mut count = 0;
    for entry in table.prefix_iter(txn, &revisions_prefix(doc_key))? {
        entry?;
        count += 1;
    }
    Ok(count)
}

/// Format 6 stopped writing `revision_counts`: a database written before it has one, emptied here once at
/// open (after the journal's replay, which may have written to it).
pub(crate) fn drop_revision_counts(env: &heed::Env<heed::WithoutTls>, tables: &tables::Tables) -> Result<(), StorageError> {
    let mut wtxn = env.write_txn()?;
    if tables.revision_counts.is_empty(&wtxn)? {
        return Ok(());
    }
    tables.revision_counts.clear(&mut wtxn)?;
    wtxn.commit()?;
    Ok(())
}

/// Format 4 added `revisions_by_collection`: a database written before it has revisions and an empty index,
/// filled here once at open (after the journal's replay, before the open's flush makes it durable).
pub(crate) fn index_revisions_by_collection(env: &heed::Env<heed::WithoutTls>, tables: &tables::Tables) -> Result<(), StorageError> {
    let mut wtxn = env.write_txn()?;
    if !tables.revisions_by_collection.is_empty(&wtxn)? || tables.revisions.is_empty(&wtxn)? {
        return Ok(());
    }
    let mut entries = Vec::new();
    for entry in tables.revisions.iter(&wtxn)? {
        let (key, value) = entry?;
        let revision = decode(value)?;
        entries.push((collection_etag_key(&corvid_types::id_key(&revision.collection), revision.etag), key.to_vec()));
    }
    for (index_key, revision_key) in entries {
        tables.revisions_by_collection.put(&mut wtxn, &index_key, &revision_key)?;
    }
    wtxn.commit()?;
    Ok(())
}

impl WriteTxn<'_> {
    /// Stores a revision with the next etag; None (nothing written) when a revision with its change vector
    /// exists already (revisions are immutable).
    pub fn put_revision(&mut self, revision: NewRevision) -> Result<Option<u64>, StorageError> {
        self.refuse_growth_when_low_space()?;
        if self.tables.revisions_by_change_vector.get(&self.txn, revision.change_vector.as_bytes())?.is_some() {
            return Ok(None);
        }
        let etag = self.next_etag()?;
        let doc_key = corvid_types::id_key(&revision.id);
        let key = revision_key(&doc_key, etag);
        let record = DocumentRecord {
            id: revision.id,
            etag,
            last_modified: revision.last_modified,
            flags: revision.flags,
            collection: revision.collection,
            change_vector: revision.change_vector,
            body: revision.body,
            client_metadata: revision.client_metadata,
        };
        self.txn.put(self.tables.revisions, &key, &record.encode())?;
        self.txn.put(self.tables.revisions_by_change_vector, record.change_vector.as_bytes(), &key)?;
        if record.flags & flags::DELETE_REVISION != 0 {
            self.txn.put(self.tables.revisions_bin, &etag_key(etag), &key)?;
        }
        let by_collection = collection_etag_key(&corvid_types::id_key(&record.collection), etag);
        self.txn.put(self.tables.revisions_by_collection, &by_collection, &key)?;
        Ok(Some(etag))
    }

    /// Removes one revision with its lookup entries; false when there was none.
    pub fn delete_revision(&mut self, doc_key: &str, etag: u64) -> Result<bool, StorageError> {
        let Some(bytes) = self.tables.revisions.get(&self.txn, &revision_key(doc_key, etag))? else {
            return Ok(false);
        };
        let record = decode(bytes)?;
        self.delete_revision_record(doc_key, &record)?;
        Ok(true)
    }

    /// Removes a revision just read (`record`, of the document whose lower-cased id is `doc_key`) with its
    /// lookup entries, without reading it again.
    pub fn delete_revision_record(&mut self, doc_key: &str, record: &DocumentRecord) -> Result<(), StorageError> {
        let etag = record.etag;
        self.txn.delete(self.tables.revisions, &revision_key(doc_key, etag))?;
        self.txn.delete(self.tables.revisions_by_change_vector, record.change_vector.as_bytes())?;
        if record.flags & flags::DELETE_REVISION != 0 {
            self.txn.delete(self.tables.revisions_bin, &etag_key(etag))?;
        }
        self.txn.delete(self.tables.revisions_by_collection, &collection_etag_key(&corvid_types::id_key(&record.collection), etag))?;
        Ok(())
    }

    /// How many revisions the document whose lower-cased id is `doc_key` has.
    pub fn revision_count(&self, doc_key: &str) -> Result<u64, StorageError> {
        count_rows(&self.tables.revisions, &self.txn, doc_key)
    }

    /// The document's revisions, oldest first, at most `limit`.
    pub fn revisions_oldest_first(&self, doc_key: &str, limit: usize) -> Result<Vec<DocumentRecord>, StorageError> {
        let mut out = Vec::new();
        if !storable(doc_key) {
            return Ok(out);
        }
        for entry in self.tables.revisions.prefix_iter(&self.txn, &revisions_prefix(doc_key))? {
            if out.len() >= limit {
                break;
            }
            out.push(decode(entry?.1)?);
        }
        Ok(out)
    }

    /// The document's newest revision.
    pub fn newest_revision(&self, doc_key: &str) -> Result<Option<DocumentRecord>, StorageError> {
        if !storable(doc_key) {
            return Ok(None);
        }
        match self.tables.revisions.rev_prefix_iter(&self.txn, &revisions_prefix(doc_key))?.next() {
            Some(entry) => Ok(Some(decode(entry?.1)?)),
            None => Ok(None),
        }
    }

    /// The revision with this change vector.
    pub fn revision_by_change_vector(&self, change_vector: &str) -> Result<Option<DocumentRecord>, StorageError> {
        if change_vector.is_empty() || change_vector.len() > 511 {
            return Ok(None);
        }
        let Some(key) = self.tables.revisions_by_change_vector.get(&self.txn, change_vector.as_bytes())? else {
            return Ok(None);
        };
        self.tables.revisions.get(&self.txn, key)?.map(decode).transpose()
    }

    /// The engine's revisions configuration, as it stored it.
    pub fn revisions_config(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables.meta.get(&self.txn, meta_keys::REVISIONS_CONFIG)?.map(<[u8]>::to_vec))
    }

    /// Replaces (or with None removes) the engine's revisions configuration.
    pub fn set_revisions_config(&mut self, config: Option<&[u8]>) -> Result<(), StorageError> {
        match config {
            Some(bytes) => self.txn.put(self.tables.meta, meta_keys::REVISIONS_CONFIG, bytes)?,
            None => {
                self.txn.delete(self.tables.meta, meta_keys::REVISIONS_CONFIG)?;
            }
        }
        Ok(())
    }
}

impl ReadTxn<'_> {
    /// How many revisions the document whose lower-cased id is `doc_key` has.
    pub fn revision_count(&self, doc_key: &str) -> Result<u64, StorageError> {
        count_rows(&self.tables.revisions, &self.txn, doc_key)
    }

    /// Revisions of every document.
    pub fn count_revisions(&self) -> Result<u64, StorageError> {
        Ok(self.tables.revisions.len(&self.txn)?)
    }

    /// The document's revisions, newest first, skipping `start`, at most `take`.
    pub fn revisions_newest_first(&self, doc_key: &str, start: usize, take: usize) -> Result<Vec<DocumentRecord>, StorageError> {
        let mut out = Vec::new();
        if !storable(doc_key) || take == 0 {
            return Ok(out);
        }
        for entry in self.tables.revisions.rev_prefix_iter(&self.txn, &revisions_prefix(doc_key))?.skip(start) {
            out.push(decode(entry?.1)?);
            if out.len() >= take {
                break;
            }
        }
        Ok(out)
    }

    /// The newest revision of the document written at or before `at` (unix nanoseconds).
    pub fn revision_before(&self, doc_key: &str, at: i64) -> Result<Option<DocumentRecord>, StorageError> {
        if !storable(doc_key) {
            return Ok(None);
        }
        for entry in self.tables.revisions.rev_prefix_iter(&self.txn, &revisions_prefix(doc_key))? {
            let revision = decode(entry?.1)?;
            if revision.last_modified <= at {
                return Ok(Some(revision));
            }
        }
        Ok(None)
    }

    /// A collection's revisions (lower-cased name) with an etag above `after`, in etag order, until `visit`
    /// returns false.
    pub fn collection_revisions_after_etag(
        &self,
        collection_lower: &str,
        after: u64,
        mut visit: impl FnMut(DocumentRecord) -> bool,
    ) -> Result<(), StorageError> {
        let start = collection_etag_key(collection_lower, after.saturating_add(1));
        let end = collection_etag_key(collection_lower, u64::MAX);
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Included(&end[..]));
        for entry in self.tables.revisions_by_collection.range(&self.txn, &range)? {
            let (_, key) = entry?;
            let bytes = self.tables.revisions.get(&self.txn, key)?.ok_or_else(|| {
                StorageError::corrupted(
                    tables::REVISIONS_BY_COLLECTION,
                    format!("entry points to a missing revision {}", String::from_utf8_lossy(key)),
                )
            })?;
            if !visit(decode(bytes)?) {
                break;
            }
        }
        Ok(())
    }

    /// The document's revision just before the one with etag `etag` (what a revisions subscription sends as
    /// `Previous`).
    pub fn revision_preceding(&self, doc_key: &str, etag: u64) -> Result<Option<DocumentRecord>, StorageError> {
        if !storable(doc_key) || etag == 0 {
            return Ok(None);
        }
        let start = revision_key(doc_key, 0);
        let end = revision_key(doc_key, etag - 1);
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Included(&end[..]));
        match self.tables.revisions.rev_range(&self.txn, &range)?.next() {
            Some(entry) => Ok(Some(decode(entry?.1)?)),
            None => Ok(None),
        }
    }

    /// The revision with this change vector.
    pub fn revision_by_change_vector(&self, change_vector: &str) -> Result<Option<DocumentRecord>, StorageError> {
        if change_vector.is_empty() || change_vector.len() > 511 {
            return Ok(None);
        }
        let Some(key) = self.tables.revisions_by_change_vector.get(&self.txn, change_vector.as_bytes())? else {
            return Ok(None);
        };
        self.tables.revisions.get(&self.txn, key)?.map(decode).transpose()
    }

    /// The revisions bin, newest first: delete revisions that are their document's newest revision while the
    /// document is still deleted. Skips `start` such entries, returns at most `take`.
    pub fn revisions_bin(&self, start: usize, take: usize) -> Result<Vec<DocumentRecord>, StorageError> {
        let mut out = Vec::new();
        let mut skipped = 0;
        for entry in self.tables.revisions_bin.rev_iter(&self.txn)? {
            if out.len() >= take {
                break;
            }
            let (_, key) = entry?;
            let Some((doc_key, etag)) = split_revision_key(key) else { continue };
            let doc_key = String::from_utf8_lossy(doc_key);
            if self.document(&doc_key)?.is_some() {
                continue;
            }
            let newest = self.tables.revisions.rev_prefix_iter(&self.txn, &revisions_prefix(&doc_key))?.next().transpose()?;
            if newest.map(|(k, _)| k) != Some(key) {
                continue;
            }
            if skipped < start {
                skipped += 1;
                continue;
            }
            let Some(bytes) = self.tables.revisions.get(&self.txn, key)? else { continue };
            let revision = decode(bytes)?;
            debug_assert_eq!(revision.etag, etag);
            out.push(revision);
        }
        Ok(out)
    }

    /// Every revision written after `at` (unix nanoseconds): (lower-cased document id), distinct, in key
    /// order. A full scan: reverting is rare and touches every document changed since.
    pub fn documents_with_revisions_after(&self, at: i64) -> Result<Vec<String>, StorageError> {
        let mut out: Vec<String> = Vec::new();
        for entry in self.tables.revisions.iter(&self.txn)? {
            let (key, value) = entry?;
            let Some((doc_key, _)) = split_revision_key(key) else { continue };
            let doc_key = String::from_utf8_lossy(doc_key);
            if out.last().is_some_and(|last| *last == doc_key) {
                continue;
            }
            if decode(value)?.last_modified > at {
                out.push(doc_key.into_owned());
            }
        }
        Ok(out)
    }

    /// Every revision, by document and then oldest first (an export walks them so); `visit` returns false to
    /// stop.
    pub fn all_revisions(&self, mut visit: impl FnMut(DocumentRecord) -> bool) -> Result<(), StorageError> {
        for entry in self.tables.revisions.iter(&self.txn)? {
            if !visit(decode(entry?.1)?) {
                break;
            }
        }
        Ok(())
    }

    /// The engine's revisions configuration, as it stored it.
    pub fn revisions_config(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables.meta.get(&self.txn, meta_keys::REVISIONS_CONFIG)?.map(<[u8]>::to_vec))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Store, StoreOptions, TransactionMerger};

    fn revision(id: &str, cv: &str, at: i64, flags: u32) -> NewRevision {
        NewRevision {
            id: id.into(),
            collection: "Users".into(),
            change_vector: cv.into(),
            last_modified: at,
            flags,
            body: "{}".into(),
            client_metadata: "{}".into(),
        }
    }

    #[test]
    fn revisions_are_kept_per_document_by_change_vector_and_in_the_bin() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            Store::open(dir.path(), &StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() })
                .unwrap(),
        );
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let etags = merger
            .write_blocking(|txn| -> Result<Vec<Option<u64>>, StorageError> {
                Ok(vec![
                    txn.put_revision(revision("Users/1", "A:1-x", 10, flags::REVISION))?,
                    txn.put_revision(revision("Users/1", "A:1-x", 10, flags::REVISION))?,
                    txn.put_revision(revision("Users/1", "A:3-x", 20, flags::REVISION))?,
                    txn.put_revision(revision("Users/1", "A:5-x", 30, flags::DELETE_REVISION))?,
                ])
            })
            .unwrap();
        assert_eq!(etags[1], None, "a change vector is stored once");
        let read = store.read().unwrap();
        assert_eq!(read.revision_count("users/1").unwrap(), 3);
        assert_eq!(read.count_revisions().unwrap(), 3);
        let newest: Vec<String> = read.revisions_newest_first("users/1", 0, 10).unwrap().into_iter().map(|r| r.change_vector).collect();
        assert_eq!(newest, ["A:5-x", "A:3-x", "A:1-x"]);
        assert_eq!(read.revision_before("users/1", 25).unwrap().unwrap().change_vector, "A:3-x");
        assert!(read.revision_before("users/1", 5).unwrap().is_none());
        assert_eq!(read.revision_by_change_vector("A:3-x").unwrap().unwrap().etag, etags[2].unwrap());
        assert_eq!(read.revisions_bin(0, 10).unwrap().len(), 1);
        drop(read);
        let second = etags[2].unwrap();
        merger.write_blocking(move |txn| txn.delete_revision("users/1", second)).unwrap();
        let read = store.read().unwrap();
        assert_eq!(read.revision_count("users/1").unwrap(), 2);
        assert!(read.revision_by_change_vector("A:3-x").unwrap().is_none());
        assert!(read.check_invariants().unwrap().is_sound(), "{:?}", read.check_invariants().unwrap());
        drop(read);
        merger.stop();
    }

    #[test]
    fn a_collection_s_revisions_are_read_in_etag_order_with_their_predecessor_and_indexed_at_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() };
        let store = Arc::new(Store::open(dir.path(), &options).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let etags = merger
            .write_blocking(|txn| -> Result<Vec<u64>, StorageError> {
                let mut other = revision("orders/1", "A:2-x", 15, flags::REVISION);
                other.collection = "Orders".into();
                Ok(vec![
                    txn.put_revision(revision("Users/1", "A:1-x", 10, flags::REVISION))?.unwrap(),
                    txn.put_revision(other)?.unwrap(),
                    txn.put_revision(revision("Users/2", "A:3-x", 20, flags::REVISION))?.unwrap(),
                    txn.put_revision(revision("Users/1", "A:4-x", 30, flags::REVISION))?.unwrap(),
                ])
            })
            .unwrap();
        let in_order = |store: &Store, after: u64| -> Vec<String> {
            let read = store.read().unwrap();
            let mut out = Vec::new();
            read.collection_revisions_after_etag("users", after, |r| {
                out.push(r.change_vector);
                true
            })
            .unwrap();
            out
        };
        assert_eq!(in_order(&store, 0), ["A:1-x", "A:3-x", "A:4-x"]);
        assert_eq!(in_order(&store, etags[2]), ["A:4-x"]);
        let read = store.read().unwrap();
        assert_eq!(read.revision_preceding("users/1", etags[3]).unwrap().unwrap().change_vector, "A:1-x");
        assert!(read.revision_preceding("users/1", etags[0]).unwrap().is_none());
        drop(read);
        merger.stop();
        drop(store);

        // A database of format 3 has revisions and no index: what opening runs after the replay fills it.
        let store = Store::open(dir.path(), &options).unwrap();
        let mut wtxn = store.env.write_txn().unwrap();
        store.tables.revisions_by_collection.clear(&mut wtxn).unwrap();
        wtxn.commit().unwrap();
        assert!(in_order(&store, 0).is_empty());
        index_revisions_by_collection(&store.env, &store.tables).unwrap();
        assert_eq!(in_order(&store, 0), ["A:1-x", "A:3-x", "A:4-x"]);
        assert!(store.read().unwrap().check_invariants().unwrap().is_sound());
    }

    #[test]
    fn counts_are_the_rows_and_a_format_5_count_table_is_emptied_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() };
        let store = Arc::new(Store::open(dir.path(), &options).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        merger
            .write_blocking(|txn| -> Result<(), StorageError> {
                for (i, id) in ["Users/1", "Users/1", "Users/10", "Users/1"].into_iter().enumerate() {
                    txn.put_revision(revision(id, &format!("A:{i}-x"), 10, flags::REVISION))?;
                }
                assert_eq!((txn.revision_count("users/1")?, txn.revision_count("users/10")?), (3, 1));
                Ok(())
            })
            .unwrap();
        merger.stop();
        drop(merger);
        let store = Arc::into_inner(store).unwrap();
        // What a format 5 build left: a stored count per document.
        let mut wtxn = store.env.write_txn().unwrap();
        store.tables.revision_counts.put(&mut wtxn, b"users/1", &3u64.to_be_bytes()).unwrap();
        wtxn.commit().unwrap();
        assert!(!store.read().unwrap().check_invariants().unwrap().is_sound());
        drop(store);

        let store = Store::open(dir.path(), &options).unwrap();
        let read = store.read().unwrap();
        assert!(read.check_invariants().unwrap().is_sound(), "{:?}", read.check_invariants().unwrap());
        assert_eq!((read.revision_count("users/1").unwrap(), read.revision_count("users/10").unwrap()), (3, 1));
        assert_eq!(read.revision_count("users/2").unwrap(), 0);
    }

    #[test]
    fn revision_keys_split_back() {
        let key = revision_key("users/1", 42);
        assert_eq!(split_revision_key(&key), Some((&b"users/1"[..], 42)));
        assert_eq!(split_revision_key(b"short"), None);
    }
}
