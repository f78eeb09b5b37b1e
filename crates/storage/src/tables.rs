//! Every table name and key layout of a database environment, in one place. Byte layouts are described in
//! docs/storage-format.md; change FORMAT_VERSION when any of them changes.

/// Version of the on-disk layout described in docs/storage-format.md.
pub const FORMAT_VERSION: u32 = 2;

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

pub const TABLE_COUNT: u32 = 9;

/// Separates the document id from the attachment or counter name in keys (ids cannot contain it).
pub const NAME_SEPARATOR: u8 = 0x1E;

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

pub fn collection_etag_key(collection_lower: &str, etag: u64) -> Vec<u8> {
    let mut key = collection_prefix(collection_lower);
    key.extend_from_slice(&etag.to_be_bytes());
    key
}
