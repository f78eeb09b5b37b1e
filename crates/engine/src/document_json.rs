//! The wire form of a stored document: RavenDB's JSON with its `@metadata`, spliced from the stored strings
//! without parsing them.

use corvid_storage::{flags, DocumentRecord};
use corvid_types::{format_date, metadata as meta, push_json_string};

/// The flags RavenDB names in `@flags`, in the order it lists them.
const FLAG_NAMES: &[(u32, &str)] = &[
    (flags::HAS_REVISIONS, "HasRevisions"),
    (flags::DELETE_REVISION, "DeleteRevision"),
    (flags::REVISION, "Revision"),
    (flags::HAS_ATTACHMENTS, "HasAttachments"),
    (flags::HAS_COUNTERS, "HasCounters"),
    (flags::REVERTED, "Reverted"),
    (flags::HAS_TIME_SERIES, "HasTimeSeries"),
    (flags::ARTIFICIAL, "Artificial"),
    (flags::FROM_INDEX, "FromIndex"),
    (flags::FORCE_CREATED, "ForceCreated"),
];

/// Renders a stored document as the clients read it.
pub(crate) trait DocumentJson {
    /// The body with an `@metadata` object holding the server-owned keys first, then the client's
    /// metadata. With `metadata_only`, the body's fields are left out.
    fn to_json_string(&self, metadata_only: bool) -> String;
}

impl DocumentJson for DocumentRecord {
    fn to_json_string(&self, metadata_only: bool) -> String {
        let mut out = String::with_capacity(self.body.len() + self.client_metadata.len() + 200);
        let body = if metadata_only { "{}" } else { self.body.as_str() };
        debug_assert!(body.starts_with('{') && body.ends_with('}'));
        let inner = &body[1..body.len() - 1];
        out.push('{');
        if !inner.is_empty() {
            out.push_str(inner);
            out.push(',');
        }
        out.push_str("\"@metadata\":{");
        push_key_value(&mut out, meta::COLLECTION, &self.collection);
        out.push(',');
        push_key_value(&mut out, meta::CHANGE_VECTOR, &self.change_vector);
        out.push(',');
        push_key_value(&mut out, meta::ID, &self.id);
        out.push(',');
        push_key_value(&mut out, meta::LAST_MODIFIED, &format_date(self.last_modified));
        if let Some(flags) = flags_string(self.flags) {
            out.push(',');
            push_key_value(&mut out, meta::FLAGS, &flags);
        }
        let client = &self.client_metadata;
        if client.len() > 2 {
            out.push(',');
            out.push_str(&client[1..client.len() - 1]);
        }
        out.push_str("}}");
        out
    }
}

/// `@flags` as RavenDB writes it (`None` when no flag is set).
pub fn flags_text(bits: u32) -> String {
    flags_string(bits).unwrap_or_else(|| "None".to_owned())
}

/// The flags named in an `@flags` text (`"HasRevisions, Revision"`); unknown names are ignored.
pub(crate) fn flags_from_text(text: &str) -> u32 {
    text.split(',')
        .filter_map(|name| FLAG_NAMES.iter().find(|(_, n)| n.eq_ignore_ascii_case(name.trim())))
        .fold(0, |bits, (bit, _)| bits | bit)
}

fn flags_string(bits: u32) -> Option<String> {
    let names: Vec<&str> = FLAG_NAMES.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, n)| *n).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

fn push_key_value(out: &mut String, key: &str, value: &str) {
    push_json_string(out, key);
    out.push(':');
    push_json_string(out, value);
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

    #[test]
    fn wire_form_keeps_the_stored_text_byte_for_byte() {
        let text = sample().to_json_string(false);
        assert_eq!(
            text,
            r#"{"name":"Jo \"J\"","age":3,"@metadata":{"@collection":"Users","@change-vector":"A:7-abc","@id":"Users/1-A","@last-modified":"2023-11-14T22:13:20.0000000Z","Raven-Python-Type":"m.User"}}"#
        );
    }
}
