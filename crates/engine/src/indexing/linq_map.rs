//! C# LINQ index maps and reduces (`from doc in docs.Users select new { ... }`), compiled and evaluated by
//! `corvid-linq`: what the index definition and the worker need around it.

use corvid_linq::{IndexEntry, LinqError, LinqIndex, SpatialValue};
use serde_json::{Map, Value};

/// Compiles C# maps and reduce; the error names the construct and its line:column.
pub(crate) fn compile_linq(maps: &[String], reduce: Option<&str>) -> Result<LinqIndex, LinqError> {
    let sources: Vec<&str> = maps.iter().map(String::as_str).collect();
    LinqIndex::compile(&sources, reduce)
}

/// Fields assigned from `CreateSpatialField(...)` in C# maps (`Location = CreateSpatialField(...)`).
pub(super) fn linq_spatial_fields(maps: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for map in maps {
        for (at, _) in map.match_indices("CreateSpatialField") {
            let before = map[..at].trim_end();
            let before = before.strip_suffix("this.").unwrap_or(before).trim_end();
            let Some(before) = before.strip_suffix('=') else { continue };
            let key = before.trim_end().rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
            if !key.is_empty() && !out.iter().any(|k| k == key) {
                out.push(key.to_owned());
            }
        }
    }
    out
}

/// A C# map entry as index fields: created fields by their names, spatial fields as points (or WKT).
pub(super) fn linq_entry(entry: IndexEntry) -> Map<String, Value> {
    let mut fields = entry.fields;
    for created in entry.created {
        fields.insert(created.name, created.value);
    }
    for (name, value) in entry.spatial {
        let value = match value {
            SpatialValue::Point { lat, lng } => serde_json::json!({"Latitude": lat, "Longitude": lng}),
            SpatialValue::Wkt(wkt) => wkt,
        };
        fields.insert(name, value);
    }
    fields
}

/// The collections the maps read (empty: every document) and the fields the maps, the reduce and the
/// spatial fields produce, each once.
pub(super) fn linq_collections_and_fields(program: &LinqIndex, spatial_fields: &[String]) -> (Vec<String>, Vec<String>) {
    let mut collections = Vec::new();
    let mut all_documents = false;
    let mut fields: Vec<String> = Vec::new();
    for map_no in 0..program.map_count() {
        match program.collections(map_no) {
            Some(names) => {
                for c in names {
                    if !collections.iter().any(|x: &String| x.eq_ignore_ascii_case(&c)) {
                        collections.push(c);
                    }
                }
            }
            None => all_documents = true,
        }
        for f in program.output_fields(map_no) {
            if !fields.contains(f) {
                fields.push(f.clone());
            }
        }
    }
    for f in program.reduce_fields() {
        if !fields.contains(&f) {
            fields.push(f);
        }
    }
    for f in spatial_fields {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    }
    (if all_documents { Vec::new() } else { collections }, fields)
}
