//! `select` of fields (with aliases) from a document body.

use serde_json::{Map, Value};

use crate::includes::referenced_ids;

/// One projected field: the path in the document and the name in the result.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedField {
    pub path: String,
    pub alias: String,
}

/// Projected paths that stand for a counter of the result's document (`select counter(u, 'Likes')`).
const COUNTER_PATH: &str = "@counter:";
const COUNTER_RAW_PATH: &str = "@counter-raw:";

pub fn counter_path(name: &str, raw: bool) -> String {
    format!("{}{name}", if raw { COUNTER_RAW_PATH } else { COUNTER_PATH })
}

/// The counter a projected path reads, and whether its raw (per database) form is asked for.
pub fn counter_of(path: &str) -> Option<(&str, bool)> {
    path.strip_prefix(COUNTER_PATH).map(|n| (n, false)).or_else(|| path.strip_prefix(COUNTER_RAW_PATH).map(|n| (n, true)))
}

/// A counter's value as projected: the total, or `{database id: total}` for the raw form; null when missing.
pub fn counter_value(value: Option<i64>, raw: bool, database_id: &str) -> Value {
    match value {
        None => Value::Null,
        Some(v) if raw => Value::Object(Map::from_iter([(database_id.to_owned(), Value::from(v))])),
        Some(v) => Value::from(v),
    }
}

/// The value at a path (`a.b`, `Lines[].Product`); arrays of values for `[]` paths.
pub fn value_at(document: &Value, path: &str) -> Value {
    if path.contains("[]") {
        let mut out = Vec::new();
        collect(document, &path.split('.').collect::<Vec<_>>(), &mut out);
        return Value::Array(out);
    }
    let mut current = document;
    for segment in path.split('.') {
        match current.get(segment) {
            Some(next) => current = next,
            None => return Value::Null,
        }
    }
    current.clone()
}

fn collect(value: &Value, segments: &[&str], out: &mut Vec<Value>) {
    let Some((first, rest)) = segments.split_first() else {
        out.push(value.clone());
        return;
    };
    let (name, over_array) = match first.strip_suffix("[]") {
        Some(n) => (n, true),
        None => (*first, false),
    };
    match value.get(name) {
        Some(Value::Array(items)) if over_array => items.iter().for_each(|i| collect(i, rest, out)),
        Some(child) => collect(child, rest, out),
        None => {}
    }
}

pub fn project(document: &Value, fields: &[ProjectedField]) -> Map<String, Value> {
    fields.iter().map(|f| (f.alias.clone(), value_at(document, &f.path))).collect()
}

/// Ids referenced at the include paths of a document.
pub fn included_ids(document: &Value, paths: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for path in paths {
        referenced_ids(document, path, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn projects_paths_and_aliases() {
        let doc = json!({"Name": "A", "Address": {"City": "X"}, "Lines": [{"P": 1}, {"P": 2}]});
        let fields = vec![
            ProjectedField { path: "Name".into(), alias: "Name".into() },
            ProjectedField { path: "Address.City".into(), alias: "City".into() },
            ProjectedField { path: "Lines[].P".into(), alias: "Ps".into() },
            ProjectedField { path: "Missing".into(), alias: "Missing".into() },
        ];
        assert_eq!(Value::Object(project(&doc, &fields)), json!({"Name": "A", "City": "X", "Ps": [1, 2], "Missing": null}));
    }
}
