//! What a map produces: index entries with ordinary, created (`CreateField`) and spatial fields.

use serde_json::{Map, Value};

use crate::reserved_keys::{FIELD, GROUP_KEY, SPATIAL};
use crate::value::to_text;

/// A field made with `CreateField`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedField {
    /// The field's name (the first argument).
    pub name: String,
    /// The value to index.
    pub value: Value,
    /// The `stored` flag, when given.
    pub stored: Option<bool>,
    /// The `analyzed` flag, when given.
    pub analyzed: Option<bool>,
    /// A `CreateFieldOptions` object when one was passed instead of the two flags.
    pub options: Option<Value>,
}

/// A field made with `CreateSpatialField`.
#[derive(Debug, Clone, PartialEq)]
pub enum SpatialValue {
    /// `CreateSpatialField(lat, lng)`.
    Point {
        /// The latitude as the map computed it.
        lat: Value,
        /// The longitude as the map computed it.
        lng: Value,
    },
    /// `CreateSpatialField(wkt)`.
    Wkt(Value),
}

/// One index entry produced by a map: ordinary fields in output order, plus dynamic and spatial fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexEntry {
    /// The selected fields, in output order.
    pub fields: Map<String, Value>,
    /// Fields made with `CreateField`.
    pub created: Vec<CreatedField>,
    /// Fields made with `CreateSpatialField`, by output name.
    pub spatial: Vec<(String, SpatialValue)>,
}

impl IndexEntry {
    /// Splits one map output into ordinary, created and spatial fields; the error is the message of a runtime error.
    pub(crate) fn from_row(row: Value) -> Result<IndexEntry, String> {
        let Value::Object(obj) = row else {
            return Err(format!("A map must select an object, got {row}"));
        };
        let mut e = IndexEntry::default();
        for (name, v) in obj {
            if let Some(s) = v.get(SPATIAL) {
                let sv = match s.get("wkt") {
                    Some(w) => SpatialValue::Wkt(w.clone()),
                    None => SpatialValue::Point { lat: s["lat"].clone(), lng: s["lng"].clone() },
                };
                e.spatial.push((name, sv));
                continue;
            }
            let created: Vec<&Value> = match &v {
                Value::Object(o) if o.contains_key(FIELD) => vec![&v],
                Value::Array(a) if !a.is_empty() && a.iter().all(|x| x.get(FIELD).is_some()) => a.iter().collect(),
                _ => Vec::new(),
            };
            if !created.is_empty() {
                for c in created {
                    let f = &c[FIELD];
                    e.created.push(CreatedField {
                        name: to_text(&f["name"]),
                        value: f["value"].clone(),
                        stored: f.get("stored").and_then(Value::as_bool),
                        analyzed: f.get("analyzed").and_then(Value::as_bool),
                        options: f.get("options").cloned(),
                    });
                }
                continue;
            }
            if v.get(GROUP_KEY).is_some() {
                return Err(format!("Field '{name}' holds a group; select an aggregate of it instead"));
            }
            e.fields.insert(name, v);
        }
        Ok(e)
    }
}
