//! The metadata a map sees on a document (its own and those it loads).

use serde_json::{Map, Value};

/// Makes sure `doc["@metadata"]["@id"]` holds the document id (it backs `Id(doc)` and `doc.Id`).
pub(crate) fn with_id(doc: &mut Value, id: &str) {
    if let Value::Object(d) = doc {
        if let Value::Object(meta) = d.entry("@metadata").or_insert_with(|| Value::Object(Map::new())) {
            meta.entry("@id").or_insert_with(|| Value::String(id.to_string()));
        }
    }
}
