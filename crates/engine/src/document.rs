//! Turning a client's JSON document into what storage keeps: body, collection and client metadata.

use corvid_types::metadata as meta;
use serde_json::{Map, Value};

use crate::EngineError;

/// A document as sent by a client, split for storage.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingDocument {
    pub collection: String,
    /// Compact JSON object without `@metadata`.
    pub body: String,
    /// Compact JSON object of client metadata keys (server-owned keys and `@collection` removed).
    pub client_metadata: String,
}

impl IncomingDocument {
    pub fn from_value(value: Value) -> Result<IncomingDocument, EngineError> {
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
