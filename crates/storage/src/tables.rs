//! Every table of a database environment, in one place: names, key layouts and the open handles. Byte layouts
//! are described in docs/storage-format.md; change FORMAT_VERSION when any of them changes.

use heed::types::Bytes;
use heed::{Database, Env, RoTxn, RwTxn, WithoutTls};

use crate::StorageError;

/// LMDB's data file inside an environment's directory.
pub(crate) const DATA_FILE: &str = "data.mdb";

/// Version of the on-disk layout described in docs/storage-format.md.
pub const FORMAT_VERSION: u32 = 6;

/// lower-cased id -> DocumentRecord
pub const DOCS: &str = "docs";
/// etag (u64 BE) -> lower-cased id
pub const DOCS_BY_ETAG: &str = "docs_by_etag";
/// u16 BE length + lower-cased collection + etag (u64 BE) -> lower-cased id
pub const COLLECTION_ETAGS: &str = "collection_etags";
/// etag (u64 BE) of the delete -> Tombstone
pub const TOMBSTONES: &str = "tombstones";
/// lower-cased identity name -> u64 BE last value
pub const IDENTITIES: &str = "identities";
/// reserved keys below -> values
pub const META: &str = "meta";
/// lower-cased document id + 0x1E + lower-cased attachment name -> AttachmentRecord
pub const ATTACHMENTS: &str = "attachments";
/// attachment hash (base64 text) -> u64 BE number of attachment rows referencing it
pub const ATTACHMENT_REFS: &str = "attachment_refs";
/// lower-cased document id + 0x1E + lower-cased counter name -> i64 BE total + u16-length name as first written
pub const COUNTERS: &str = "counters";
/// lower-cased compare-exchange key -> CompareExchangeRecord (u64 BE index, u16-length key as written, u32-length JSON)
pub const COMPARE_EXCHANGE: &str = "compare_exchange";
/// lower-cased document id + 0x1E + etag (u64 BE) of the revision -> DocumentRecord of the revision
pub const REVISIONS: &str = "revisions";
/// change vector (UTF-8) of a revision -> its `revisions` key
pub const REVISIONS_BY_CHANGE_VECTOR: &str = "revisions_by_change_vector";
/// etag (u64 BE) of a delete revision -> its `revisions` key (the revisions bin, before the live-document check)
pub const REVISIONS_BIN: &str = "revisions_bin";
/// Not written since format 6 (a document's count is its number of `revisions` rows) and emptied at open:
/// kept so a database of an older format opens with it and loses its pages.
pub const REVISION_COUNTS: &str = "revision_counts";
/// u16 BE length + lower-cased collection + etag (u64 BE) of a revision -> its `revisions` key (revisions
/// subscriptions read a collection's revisions in etag order)
pub const REVISIONS_BY_COLLECTION: &str = "revisions_by_collection";
/// lower-cased document id + 0x1E + lower-cased series name + 0x1E + segment start (i64 BE, sign bit flipped)
/// -> compressed segment (`time_series::segment`)
pub const TIME_SERIES: &str = "time_series";
/// lower-cased document id + 0x1E + lower-cased series name -> count u64 + start i64 + end i64 + u16-length name
pub const TIME_SERIES_STATS: &str = "time_series_stats";
/// kind (`E` expire, `R` refresh, `C` compare-exchange expire) + due time (i64 BE unix nanoseconds, sign bit
/// flipped) + lower-cased document id or compare-exchange key -> empty (`expiration.rs`)
pub const EXPIRATION: &str = "expiration";
/// etag (u64 BE) of the latest change of a counter or time-series segment -> kind (`C` counter, `T` segment) +
/// its `counters` or `time_series` key (the row may be gone: the change removed it) (`item_changes.rs`)
pub const ITEM_CHANGES: &str = "item_changes";
/// kind + `counters` or `time_series` key -> etag (u64 BE) of its `item_changes` row
pub const ITEM_CHANGE_ETAGS: &str = "item_change_etags";

/// Number of tables in a database environment.
pub const TABLE_COUNT: u32 = 20;

/// Every table name, in the order of the fields of [`Tables`].
const NAMES: [&str; TABLE_COUNT as usize] = [
    DOCS,
    DOCS_BY_ETAG,
    COLLECTION_ETAGS,
    TOMBSTONES,
    IDENTITIES,
    META,
    ATTACHMENTS,
    ATTACHMENT_REFS,
    COUNTERS,
    COMPARE_EXCHANGE,
    REVISIONS,
    REVISIONS_BY_CHANGE_VECTOR,
    REVISIONS_BIN,
    REVISION_COUNTS,
    TIME_SERIES,
    TIME_SERIES_STATS,
    REVISIONS_BY_COLLECTION,
    EXPIRATION,
    ITEM_CHANGES,
    ITEM_CHANGE_ETAGS,
];

/// One LMDB table (keys and values are raw bytes laid out as described above) with its name, which the
/// journal records with every write. Reads use the handle through `Deref`; writes need a `&mut RwTxn`, which
/// only `journaled_txn.rs` (every write of the merger, recorded) and recovery hold.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    pub name: &'static str,
    db: Database<Bytes, Bytes>,
}

impl std::ops::Deref for Table {
    type Target = Database<Bytes, Bytes>;
    fn deref(&self) -> &Self::Target {
        &self.db
    }
}

/// The open handles of every table of a database environment. Handles are plain numbers, so this is `Copy`
/// and each transaction keeps its own.
#[derive(Clone, Copy)]
pub(crate) struct Tables {
    pub docs: Table,
    pub docs_by_etag: Table,
    pub collection_etags: Table,
    pub tombstones: Table,
    pub identities: Table,
    pub meta: Table,
    pub attachments: Table,
    pub attachment_refs: Table,
    pub counters: Table,
    pub compare_exchange: Table,
    pub revisions: Table,
    pub revisions_by_change_vector: Table,
    pub revisions_bin: Table,
    pub revision_counts: Table,
    pub time_series: Table,
    pub time_series_stats: Table,
    pub revisions_by_collection: Table,
    pub expiration: Table,
    pub item_changes: Table,
    pub item_change_etags: Table,
}

impl Tables {
    /// Opens every table, creating the missing ones.
    pub(crate) fn create(env: &Env<WithoutTls>, wtxn: &mut RwTxn<'_>) -> Result<Tables, StorageError> {
        let mut handles = Vec::with_capacity(NAMES.len());
        for name in NAMES {
            handles.push(Table { name, db: env.create_database(wtxn, Some(name))? });
        }
        Ok(Tables::from_handles(&handles))
    }

    /// Opens every table without writing; the names of the missing ones when any is.
    pub(crate) fn open_existing<T>(env: &Env<T>, rtxn: &RoTxn<'_>) -> Result<Result<Tables, Vec<&'static str>>, StorageError> {
        let mut handles = Vec::with_capacity(NAMES.len());
        let mut missing = Vec::new();
        for name in NAMES {
            match env.open_database(rtxn, Some(name))? {
                Some(db) => handles.push(Table { name, db }),
                None => missing.push(name),
            }
        }
        Ok(if missing.is_empty() { Ok(Tables::from_handles(&handles)) } else { Err(missing) })
    }

    fn from_handles(h: &[Table]) -> Tables {
        Tables {
            docs: h[0],
            docs_by_etag: h[1],
            collection_etags: h[2],
            tombstones: h[3],
            identities: h[4],
            meta: h[5],
            attachments: h[6],
            attachment_refs: h[7],
            counters: h[8],
            compare_exchange: h[9],
            revisions: h[10],
            revisions_by_change_vector: h[11],
            revisions_bin: h[12],
            revision_counts: h[13],
            time_series: h[14],
            time_series_stats: h[15],
            revisions_by_collection: h[16],
            expiration: h[17],
            item_changes: h[18],
            item_change_etags: h[19],
        }
    }

    /// Every table with its name.
    pub(crate) fn all(&self) -> [(&'static str, Table); TABLE_COUNT as usize] {
        let t = self;
        let handles = [
            t.docs,
            t.docs_by_etag,
            t.collection_etags,
            t.tombstones,
            t.identities,
            t.meta,
            t.attachments,
            t.attachment_refs,
            t.counters,
            t.compare_exchange,
            t.revisions,
            t.revisions_by_change_vector,
            t.revisions_bin,
            t.revision_counts,
            t.time_series,
            t.time_series_stats,
            t.revisions_by_collection,
            t.expiration,
            t.item_changes,
            t.item_change_etags,
        ];
        std::array::from_fn(|i| (NAMES[i], handles[i]))
    }

    /// The table called `name` (journal replay).
    pub(crate) fn by_name(&self, name: &str) -> Option<Table> {
        self.all().into_iter().find(|(n, _)| *n == name).map(|(_, table)| table)
    }
}

/// Separates the document id from the attachment or counter name in keys (ids cannot contain it).
pub const NAME_SEPARATOR: u8 = 0x1E;

/// Splits the key of an attachment or counter row into the document key and the lower-cased name.
pub fn split_named_key(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = key.iter().position(|b| *b == NAME_SEPARATOR)?;
    Some((&key[..at], &key[at + 1..]))
}

/// Key of an attachment or counter row; with an empty name, the prefix of all rows of a document.
pub fn named_key(doc_key: &str, name_lower: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(doc_key.len() + 1 + name_lower.len());
    key.extend_from_slice(doc_key.as_bytes());
    key.push(NAME_SEPARATOR);
    key.extend_from_slice(name_lower.as_bytes());
    key
}

pub mod meta_keys {
    /// u32 BE
    pub const FORMAT_VERSION: &[u8] = b"format_version";
    /// UTF-8 database id used in change vectors
    pub const DATABASE_ID: &[u8] = b"database_id";
    /// u64 BE: the highest etag ever handed out (documents and tombstones)
    pub const LAST_ETAG: &[u8] = b"last_etag";
    /// u64 BE: the highest compare-exchange index handed out
    pub const COMPARE_EXCHANGE_LAST_INDEX: &[u8] = b"compare_exchange_last_index";
    /// The revisions configuration the engine applies, as the engine encodes it (opaque to storage)
    pub const REVISIONS_CONFIG: &[u8] = b"revisions_config";
    /// The expiration configuration the engine applies, as the engine encodes it (opaque to storage)
    pub const EXPIRATION_CONFIG: &[u8] = b"expiration_config";
    /// The refresh configuration the engine applies, as the engine encodes it (opaque to storage)
    pub const REFRESH_CONFIG: &[u8] = b"refresh_config";
    /// Present once the documents written before the expiration queue existed (format < 4) were queued
    pub const EXPIRATION_BACKFILLED: &[u8] = b"expiration_backfilled";
}

pub fn etag_key(etag: u64) -> [u8; 8] {
    etag.to_be_bytes()
}

pub fn decode_etag(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

/// Prefix of every `collection_etags` key of one collection.
pub fn collection_prefix(collection_lower: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + collection_lower.len() + 8);
    key.extend_from_slice(&(collection_lower.len() as u16).to_be_bytes());
    key.extend_from_slice(collection_lower.as_bytes());
    key
}

/// Splits a `collection_etags` key into the lower-cased collection and the etag.
pub fn split_collection_etag_key(key: &[u8]) -> Option<(&[u8], u64)> {
    let len = u16::from_be_bytes(key.get(..2)?.try_into().ok()?) as usize;
    if key.len() != 2 + len + 8 {
        return None;
    }
    Some((&key[2..2 + len], decode_etag(&key[2 + len..])?))
}

pub fn collection_etag_key(collection_lower: &str, etag: u64) -> Vec<u8> {
    let mut key = collection_prefix(collection_lower);
    key.extend_from_slice(&etag.to_be_bytes());
    key
}
