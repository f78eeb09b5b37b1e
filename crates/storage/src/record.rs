//! The stored form of a document and of a tombstone.
//!
//! A document keeps its JSON body (without `@metadata`) and the client's metadata (without the server-owned
//! keys) as compact JSON text, so a read (the engine's `DocumentJson`) can splice the wire form together without
//! parsing JSON.

use crate::codec::{Reader, Writer};
use crate::StorageError;

const RECORD_VERSION: u8 = 1;

/// A document as stored in `docs`.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    /// The id as the client first wrote it.
    pub id: String,
    /// Etag of its last write.
    pub etag: u64,
    /// When it was last written, unix nanoseconds.
    pub last_modified: i64,
    /// Bit set of `flags`.
    pub flags: u32,
    /// Its collection as written (`@empty` when it names none).
    pub collection: String,
    /// `A:<etag>-<database id>` of its last write.
    pub change_vector: String,
    /// Compact JSON object of the user's fields, without `@metadata`.
    pub body: String,
    /// Compact JSON object of client metadata (e.g. `Raven-Python-Type`), without server-owned keys and
    /// without `@collection`.
    pub client_metadata: String,
}

/// What a delete leaves in `tombstones`, so indexes catch up on deletes.
#[derive(Debug, Clone, PartialEq)]
pub struct Tombstone {
    /// Etag of the delete.
    pub etag: u64,
    /// The deleted document's id as written.
    pub id: String,
    /// The deleted document's collection.
    pub collection: String,
    /// Change vector of the delete.
    pub change_vector: String,
    /// When it was deleted, unix nanoseconds.
    pub deleted_at: i64,
}

impl DocumentRecord {
    /// Layout: version u8, etag u64, last_modified i64, flags u32, id/collection/change vector as
    /// u16-length strings, client metadata and body as u32-length strings. All integers big-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64 + self.id.len() + self.body.len() + self.client_metadata.len()));
        w.0.push(RECORD_VERSION);
        w.0.extend_from_slice(&self.etag.to_be_bytes());
        w.0.extend_from_slice(&self.last_modified.to_be_bytes());
        w.0.extend_from_slice(&self.flags.to_be_bytes());
        w.str16(&self.id);
        w.str16(&self.collection);
        w.str16(&self.change_vector);
        w.str32(&self.client_metadata);
        w.str32(&self.body);
        w.0
    }

    /// Reads the layout `encode` writes.
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader { bytes, table: crate::tables::DOCS };
        let version = r.u8()?;
        if version != RECORD_VERSION {
            return Err(StorageError::corrupted(crate::tables::DOCS, format!("unknown record version {version}")));
        }
        Ok(DocumentRecord {
            etag: r.u64()?,
            last_modified: r.u64()? as i64,
            flags: r.u32()?,
            id: r.str16()?,
            collection: r.str16()?,
            change_vector: r.str16()?,
            client_metadata: r.str32()?,
            body: r.str32()?,
        })
    }
}

/// Document flags (bit set); the engine names them on the wire.
pub mod flags {
    /// The document has attachment rows.
    pub const HAS_ATTACHMENTS: u32 = 1 << 0;
    /// The document has counter rows.
    pub const HAS_COUNTERS: u32 = 1 << 1;
    /// The document has (or had) revisions.
    pub const HAS_REVISIONS: u32 = 1 << 2;
    /// RavenDB's time series flag (Corvid keeps no time series yet).
    pub const HAS_TIME_SERIES: u32 = 1 << 3;
    /// Written by the server, not a client (map-reduce output documents).
    pub const ARTIFICIAL: u32 = 1 << 4;
    /// A map-reduce index's output (`OutputReduceToCollection`).
    pub const FROM_INDEX: u32 = 1 << 5;
    /// A revision of a document write (kept in `revisions`).
    pub const REVISION: u32 = 1 << 6;
    /// A revision of a delete (kept in `revisions`, listed in the revisions bin).
    pub const DELETE_REVISION: u32 = 1 << 7;
    /// A revision created on request (`ForceRevisionCreation`), not by the configuration.
    pub const FORCE_CREATED: u32 = 1 << 8;
    /// A document restored from a revision by a revert.
    pub const REVERTED: u32 = 1 << 9;
}

impl Tombstone {
    /// Layout: version u8, deleted_at i64, id/collection/change vector as u16-length strings.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(32 + self.id.len() + self.collection.len() + self.change_vector.len()));
        w.0.push(RECORD_VERSION);
        w.0.extend_from_slice(&self.deleted_at.to_be_bytes());
        w.str16(&self.id);
        w.str16(&self.collection);
        w.str16(&self.change_vector);
        w.0
    }

    /// Reads the layout `encode` writes; the etag is the row's key.
    pub fn decode(etag: u64, bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader { bytes, table: crate::tables::TOMBSTONES };
        let version = r.u8()?;
        if version != RECORD_VERSION {
            return Err(StorageError::corrupted(crate::tables::TOMBSTONES, format!("unknown record version {version}")));
        }
        Ok(Tombstone { etag, deleted_at: r.u64()? as i64, id: r.str16()?, collection: r.str16()?, change_vector: r.str16()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DocumentRecord {
        DocumentRecord {
            id: "Users/1-A".into(),
            etag: 7,
            last_modified: 1_700_000_000_000_000_000,
            flags: 0,
            collection: "Users".into(),
            change_vector: "A:7-abc".into(),
            body: r#"{"name":"Jo \"J\"","age":3}"#.into(),
            client_metadata: r#"{"Raven-Python-Type":"m.User"}"#.into(),
        }
    }

    #[test]
    fn record_round_trips() {
        let r = sample();
        assert_eq!(DocumentRecord::decode(&r.encode()).unwrap(), r);
        let t = Tombstone { etag: 9, id: "x".into(), collection: "Users".into(), change_vector: "A:9-abc".into(), deleted_at: 5 };
        assert_eq!(Tombstone::decode(9, &t.encode()).unwrap(), t);
    }

    #[test]
    fn truncated_record_is_reported_as_corruption() {
        let bytes = sample().encode();
        let err = DocumentRecord::decode(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(matches!(err, StorageError::Corrupted { table: "docs", .. }));
    }
}
