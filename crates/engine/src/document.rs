//! Turning a client's JSON document into what storage keeps: body, collection and client metadata.

use std::borrow::Cow;

use corvid_types::metadata as meta;
use corvid_types::{json, push_json_string};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// An object's fields in order, values unparsed.
struct RawFields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = RawFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, value)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    fields.push((key, value));
                }
                Ok(RawFields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

use crate::EngineError;

/// Splits a JSON object's text in one pass, without parsing its values: its fields but `@metadata`,
/// copied as written into a compact object (the body), and its `@metadata` unparsed (None when absent).
pub(crate) fn split_raw(text: &str) -> Result<(String, Option<&RawValue>), EngineError> {
    let fields: Vec<(Cow<'_, str>, &RawValue)> = serde_json::from_str::<RawFields<'_>>(text)
        .map_err(|e| EngineError::bad_request(format!("A document must be a JSON object: {e}")))?
        .0;
    let mut body = String::with_capacity(text.len());
    body.push('{');
    let mut metadata = None;
    for (key, value) in fields {
        if key == meta::METADATA {
            metadata = Some(value);
            continue;
        }
        if body.len() > 1 {
            body.push(',');
        }
        push_json_string(&mut body, &key);
        body.push(':');
        body.push_str(value.get());
    }
    body.push('}');
    Ok((body, metadata))
}

/// The error of a document over the limits every stored document meets (so every reader can parse it).
fn refused(e: json::JsonLimitError) -> EngineError {
    EngineError::bad_request(format!("The document was refused: {e}"))
}

/// A document as sent by a client, split for storage.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingDocument {
    /// From `@metadata.@collection` (the empty collection when absent).
    pub collection: String,
    /// Compact JSON object without `@metadata`.
    pub body: String,
    /// Compact JSON object of client metadata keys (server-owned keys and `@collection` removed).
    pub client_metadata: String,
}

impl IncomingDocument {
    /// Like `from_value`, without parsing the body: its fields are copied as the client wrote them, only
    /// `@metadata` is parsed (bulk insert's fast path).
    pub fn from_raw(raw: &RawValue) -> Result<IncomingDocument, EngineError> {
        json::check_text(raw.get(), json::max_depth()).map_err(refused)?;
        let (body, metadata) = split_raw(raw.get())?;
        let metadata: Value = match metadata {
            Some(raw) => {
                serde_json::from_str(raw.get()).map_err(|e| EngineError::bad_request(format!("@metadata is not valid JSON: {e}")))?
            }
            None => Value::Null,
        };
        IncomingDocument::with_metadata(body, metadata)
    }

    /// Like `from_raw`, for a caller that split the object (`split_raw`) and parsed its `@metadata`
    /// already (the import, which reads the metadata first): `text` is the whole object, checked against
    /// the limits every stored document meets.
    pub(crate) fn from_split(text: &str, body: String, metadata: Value) -> Result<IncomingDocument, EngineError> {
        json::check_text(text, json::max_depth()).map_err(refused)?;
        IncomingDocument::with_metadata(body, metadata)
    }

    /// The document of `body` (its fields but `@metadata`) and `metadata` (`Null` when absent).
    fn with_metadata(body: String, metadata: Value) -> Result<IncomingDocument, EngineError> {
        let mut only_metadata = Map::new();
        only_metadata.insert(meta::METADATA.to_owned(), metadata);
        let split = IncomingDocument::from_value(Value::Object(only_metadata))?;
        Ok(IncomingDocument { collection: split.collection, body, client_metadata: split.client_metadata })
    }

    /// Splits a client's document (a JSON object, its `@metadata` optional) into collection, body and
    /// client metadata; refuses anything else or anything nested too deep.
    pub fn from_value(value: Value) -> Result<IncomingDocument, EngineError> {
        json::check_value(&value, json::max_depth()).map_err(refused)?;
        let Value::Object(mut fields) = value else {
            return Err(EngineError::bad_request("A document must be a JSON object"));
        };
        let mut collection = meta::EMPTY_COLLECTION.to_owned();
        let mut client = Map::new();
        match fields.shift_remove(meta::METADATA) {
            None | Some(Value::Null) => {}
            Some(Value::Object(metadata)) => {
                for (key, value) in metadata {
                    if key == meta::COLLECTION {
                        match value {
                            Value::String(name) if !name.is_empty() => collection = name,
                            Value::String(_) | Value::Null => {}
                            _ => return Err(EngineError::bad_request("@metadata.@collection must be a string")),
                        }
                    } else if !meta::is_server_owned(&key) {
                        client.insert(key, value);
                    }
                }
            }
            Some(_) => return Err(EngineError::bad_request("@metadata must be a JSON object")),
        }
        Ok(IncomingDocument { collection, body: Value::Object(fields).to_string(), client_metadata: Value::Object(client).to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_metadata_and_drops_server_owned_keys() {
        let doc = IncomingDocument::from_value(json!({
            "name": "John", "age": 30,
            "@metadata": {"@collection": "Users", "Raven-Python-Type": "m.User", "@id": "x", "@change-vector": "A:1-x",
                          "@nested-object-types": {"a": "date"}}
        }))
        .unwrap();
        assert_eq!(doc.collection, "Users");
        assert_eq!(doc.body, r#"{"name":"John","age":30}"#);
        assert_eq!(doc.client_metadata, r#"{"Raven-Python-Type":"m.User","@nested-object-types":{"a":"date"}}"#);
    }

    #[test]
    fn raw_documents_split_like_parsed_ones() {
        let text = r#"{"name": "Jo \"x\"", "tags": [1, {"a": 2}], "@metadata": {"@collection": "Users", "Raven-Python-Type": "m.U", "@id": "x"}, "n": 1.50}"#;
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let fast = IncomingDocument::from_raw(&raw).unwrap();
        let slow = IncomingDocument::from_value(serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!((fast.collection.as_str(), fast.client_metadata.as_str()), (slow.collection.as_str(), slow.client_metadata.as_str()));
        let fast_body: Value = serde_json::from_str(&fast.body).unwrap();
        let slow_body: Value = serde_json::from_str(&slow.body).unwrap();
        assert_eq!(fast_body, slow_body);
        assert_eq!(fast.body, r#"{"name":"Jo \"x\"","tags":[1, {"a": 2}],"n":1.50}"#);
        assert!(IncomingDocument::from_raw(&serde_json::from_str::<Box<RawValue>>("[1]").unwrap()).is_err());
    }

    #[test]
    fn documents_without_collection_go_to_empty() {
        let doc = IncomingDocument::from_value(json!({"a": 1})).unwrap();
        assert_eq!(doc.collection, "@empty");
        assert_eq!(doc.client_metadata, "{}");
    }

    #[test]
    fn rejects_non_objects() {
        assert!(IncomingDocument::from_value(json!([1])).is_err());
        assert!(IncomingDocument::from_value(json!({"@metadata": 3})).is_err());
        assert!(IncomingDocument::from_value(json!({"@metadata": {"@collection": 3}})).is_err());
    }
}
