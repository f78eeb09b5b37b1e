//! The stored form of a document and of a tombstone.
//!
//! A document keeps its JSON body (without `@metadata`) and the client's metadata (without the server-owned
//! keys) as compact JSON text, so a read can splice the wire form together without parsing JSON.

use crate::codec::{Reader, Writer};
use crate::StorageError;
use corvid_types::{format_change_vector, format_date, metadata as meta};

const RECORD_VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    pub id: String,
    pub etag: u64,
    pub last_modified: i64,
    pub flags: u32,
    pub collection: String,
    pub change_vector: String,
    /// Compact JSON object of the user's fields, without `@metadata`.
    pub body: String,
    /// Compact JSON object of client metadata (e.g. `Raven-Python-Type`), without server-owned keys and
    /// without `@collection`.
    pub client_metadata: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tombstone {
    pub etag: u64,
    pub id: String,
    pub collection: String,
    pub change_vector: String,
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

    /// Appends the wire form: the body with an `@metadata` object holding the server-owned keys first,
    /// then the client's metadata. With `metadata_only`, the body's fields are left out.
    pub fn write_json(&self, out: &mut String, metadata_only: bool) {
        let body = if metadata_only { "{}" } else { self.body.as_str() };
        debug_assert!(body.starts_with('{') && body.ends_with('}'));
        let inner = &body[1..body.len() - 1];
        out.push('{');
        if !inner.is_empty() {
            out.push_str(inner);
            out.push(',');
        }
        out.push_str("\"@metadata\":{");
        push_key_value(out, meta::COLLECTION, &self.collection);
        out.push(',');
        push_key_value(out, meta::CHANGE_VECTOR, &self.change_vector);
        out.push(',');
        push_key_value(out, meta::ID, &self.id);
        out.push(',');
        push_key_value(out, meta::LAST_MODIFIED, &format_date(self.last_modified));
        if let Some(flags) = flags_string(self.flags) {
            out.push(',');
            push_key_value(out, meta::FLAGS, &flags);
        }
        let client = &self.client_metadata;
        if client.len() > 2 {
            out.push(',');
            out.push_str(&client[1..client.len() - 1]);
        }
        out.push_str("}}");
    }

    pub fn to_json_string(&self, metadata_only: bool) -> String {
        let mut s = String::with_capacity(self.body.len() + self.client_metadata.len() + 200);
        self.write_json(&mut s, metadata_only);
        s
    }

    pub fn change_vector_for(etag: u64, database_id: &str) -> String {
        format_change_vector(etag, database_id)
    }
}

/// Document flags (bit set) and their names on the wire.
pub mod flags {
    pub const HAS_ATTACHMENTS: u32 = 1 << 0;
    pub const HAS_COUNTERS: u32 = 1 << 1;
    pub const HAS_REVISIONS: u32 = 1 << 2;
    pub const HAS_TIME_SERIES: u32 = 1 << 3;
    /// Written by the server, not a client (map-reduce output documents).
    pub const ARTIFICIAL: u32 = 1 << 4;
    /// A map-reduce index's output (`OutputReduceToCollection`).
    pub const FROM_INDEX: u32 = 1 << 5;
    pub(crate) const NAMES: &[(u32, &str)] = &[
        (HAS_REVISIONS, "HasRevisions"),
        (HAS_ATTACHMENTS, "HasAttachments"),
        (HAS_COUNTERS, "HasCounters"),
        (HAS_TIME_SERIES, "HasTimeSeries"),
        (ARTIFICIAL, "Artificial"),
        (FROM_INDEX, "FromIndex"),
    ];
}

fn flags_string(bits: u32) -> Option<String> {
    let names: Vec<&str> = flags::NAMES.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, n)| *n).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

fn push_key_value(out: &mut String, key: &str, value: &str) {
    push_json_string(out, key);
    out.push(':');
    push_json_string(out, value);
}

/// Appends `value` as a JSON string literal.
pub fn push_json_string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
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

    #[test]
    fn wire_form_is_valid_json_with_metadata() {
        let json: serde_json::Value = serde_json::from_str(&sample().to_json_string(false)).unwrap();
        assert_eq!(json["name"], "Jo \"J\"");
        assert_eq!(json["@metadata"]["@id"], "Users/1-A");
        assert_eq!(json["@metadata"]["@collection"], "Users");
        assert_eq!(json["@metadata"]["@change-vector"], "A:7-abc");
        assert_eq!(json["@metadata"]["Raven-Python-Type"], "m.User");
        assert_eq!(json["@metadata"]["@last-modified"], "2023-11-14T22:13:20.0000000Z");
        let meta_only: serde_json::Value = serde_json::from_str(&sample().to_json_string(true)).unwrap();
        assert!(meta_only.get("name").is_none());
        let mut empty = sample();
        empty.body = "{}".into();
        empty.client_metadata = "{}".into();
        empty.flags = flags::HAS_ATTACHMENTS | flags::HAS_COUNTERS;
        let json: serde_json::Value = serde_json::from_str(&empty.to_json_string(false)).unwrap();
        assert_eq!(json["@metadata"]["@flags"], "HasAttachments, HasCounters");
    }
}
