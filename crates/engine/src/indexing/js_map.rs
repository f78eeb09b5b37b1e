//! JavaScript index maps (`map('Users', function (u) { return { Name: u.Name }; })`) on QuickJS. A program
//! lives on its index's worker thread (QuickJS runtimes are not `Send`); it is compiled once and called per
//! document, with `load()` answered from the worker's storage snapshot.

use corvid_js::{Host, JsError, Limits, Sandbox};
use serde_json::{Map, Value};

use super::all_docs::is_all_docs;

/// RavenDB's helpers for JavaScript indexes. `map()` only records the map; `load()` goes to the host.
const INDEX_PRELUDE: &str = r#"
var __maps = [];
function map(collection, fn) {
  if (typeof collection !== 'string') { throw new Error('map() takes a collection name and a function'); }
  if (typeof fn !== 'function') { throw new Error('the second argument of map() must be a function'); }
  __maps.push({ collection: collection, fn: fn });
}
// `counters.map(collection[, name], fn)` and `timeSeries.map(...)`: an item is mapped like a document of its
// document's collection; a name given maps only the counters or series of that name (any case).
function __corvid_date(text) { return new Date(String(text).replace(/(\.\d{3})\d*Z$/, '$1Z')); }
function __corvid_item(kind, item) {
  if (kind === 'timeSeries') {
    item.Start = __corvid_date(item.Start);
    item.End = __corvid_date(item.End);
    item.Entries.forEach(function (e) { e.Timestamp = __corvid_date(e.Timestamp); });
  }
  return item;
}
function __corvid_item_map(kind) {
  return { map: function (collection, name, fn) {
    if (typeof name === 'function') { fn = name; name = null; }
    if (typeof collection !== 'string') { throw new Error(kind + '.map() takes a collection name, an optional name and a function'); }
    if (typeof fn !== 'function') { throw new Error('the last argument of ' + kind + '.map() must be a function'); }
    var wanted = name === null || name === undefined ? null : String(name).toLowerCase();
    __maps.push({ collection: collection, fn: function (item) {
      if (wanted !== null && String(item.Name).toLowerCase() !== wanted) { return []; }
      return fn(__corvid_item(kind, item));
    } });
  } };
}
var counters = __corvid_item_map('counters');
var timeSeries = __corvid_item_map('timeSeries');
var __reduce = null;
function groupBy(keyFn) {
  if (typeof keyFn !== 'function') { throw new Error('groupBy() takes a function that returns the reduce key'); }
  return { aggregate: function (fn) { __reduce = { key: keyFn, aggregate: fn }; } };
}
function load(id, collection) { return id === null || id === undefined ? null : __host('load', [id]); }
var noTracking = { load: load };
function id(d) { return d && d['@metadata'] ? d['@metadata']['@id'] : undefined; }
function getMetadata(d) { return d ? d['@metadata'] : undefined; }
function counterNamesFor(d) { var m = d && d['@metadata']; return (m && m['@counters']) || []; }
function timeSeriesNamesFor(d) { var m = d && d['@metadata']; return (m && m['@timeseries']) || []; }
function createField(name, value, options) { return { $name: name, $value: value, $options: options }; }
function createSpatialField(a, b) {
  if (typeof a === 'string') { return a; }  // WKT
  if (a === null || a === undefined || b === null || b === undefined) { return null; }
  return { Latitude: a, Longitude: b };
}
function __corvid_collections() { return __maps.map(function (m) { return m.collection; }); }
function __corvid_reduce(key, values) {
  var out = __reduce.aggregate({ key: key, values: values });
  if (out === undefined || out === null) { return []; }
  return Array.isArray(out) ? out : [out];
}
function __corvid_map(doc, i) {
  var out = __maps[i].fn(doc);
  if (out === undefined || out === null) { return []; }
  return Array.isArray(out) ? out : [out];
}
"#;

/// The compiled maps (and reduce) of a JavaScript index, ready to map documents.
pub struct JsMapProgram {
    sandbox: Sandbox,
    collections: Vec<String>,
    field_names: Vec<String>,
}

/// Why JavaScript maps or their reduce do not compile (the index definition is refused).
#[derive(Debug, thiserror::Error)]
pub enum JsMapCompileError {
    /// The sandbox or Corvid's own helpers failed (out of memory, for instance).
    #[error(transparent)]
    Sandbox(#[from] JsError),
    /// An `AdditionalSources` entry (named) is not a string.
    #[error("additional source '{0}' must be a string")]
    AdditionalSourceNotText(String),
    /// An `AdditionalSources` entry (named) does not run.
    #[error("additional source '{0}': {1}")]
    AdditionalSource(String, JsError),
    /// A map (counted from 1) does not run.
    #[error("map #{0}: {1}")]
    Map(usize, JsError),
    /// The reduce does not run.
    #[error("the reduce: {0}")]
    Reduce(JsError),
    /// The reduce runs but registers no `groupBy(...).aggregate(...)`.
    #[error("the reduce must be groupBy(x => key).aggregate(g => result)")]
    ReduceNotGroupBy,
    /// The maps' registrations did not come back as a list of names.
    #[error(transparent)]
    Collections(#[from] serde_json::Error),
    /// The maps run but register no `map(...)`.
    #[error("no map(...) call found in the maps")]
    NoMap,
}

/// Why mapping one document, or reducing one key, failed (recorded as that document's or key's error).
#[derive(Debug, thiserror::Error)]
pub enum JsMapRunError {
    /// The script threw, or went over its time or memory limit.
    #[error(transparent)]
    Script(#[from] JsError),
    /// What the script returned could not be read back.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("the map did not return an object")]
    MapNotObjects,
    #[error("a map must return an object (or a list of objects), not {0}")]
    MapEntryNotObject(Value),
    #[error("the reduce did not return an object")]
    ReduceNotObjects,
    #[error("a reduce must return objects, not {0}")]
    ReduceResultNotObject(Value),
}

/// Names of dynamic fields written literally: `{ $name: 'Field', $value: … }` and `createField('Field', …)`.
fn dynamic_field_names(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for pattern in ["$name", "createField("] {
        for (at, _) in source.match_indices(pattern) {
            let rest = source[at + pattern.len()..].trim_start();
            let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else { continue };
            if let Some(end) = rest[1..].find(quote) {
                let name = &rest[1..1 + end];
                if !name.is_empty() && !out.iter().any(|n| n == name) {
                    out.push(name.to_owned());
                }
            }
        }
    }
    out
}

/// Moves dynamic fields (`_: {$name, $value}` or a list of them, and any `createField()` result) to
/// fields of their own names.
pub(crate) fn expand_dynamic_fields(entry: &mut Map<String, Value>) {
    let mut dynamic = Vec::new();
    let keys: Vec<String> = entry.keys().cloned().collect();
    for key in keys {
        let is_field = |v: &Value| v.get("$name").is_some_and(Value::is_string) && v.get("$value").is_some();
        let value = &entry[&key];
        let holds = match value {
            Value::Array(items) => !items.is_empty() && items.iter().all(is_field),
            other => is_field(other),
        };
        if holds {
            match entry.shift_remove(&key) {
                Some(Value::Array(items)) => dynamic.extend(items),
                Some(item) => dynamic.push(item),
                None => {}
            }
        }
    }
    for field in dynamic {
        if let (Some(Value::String(name)), Some(value)) = (field.get("$name").cloned(), field.get("$value").cloned()) {
            entry.insert(name, value);
        }
    }
}

/// Object-literal keys in the map sources (`Name:` and `'Name':`): the fields the index will have. A key
/// that is not an output field (a nested object's) only costs an empty column.
fn literal_keys(source: &str) -> Vec<String> {
    let bytes = source.as_bytes();
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let (start, end, next) = if c == b'\'' || c == b'"' {
            let Some(close) = source[i + 1..].find(c as char) else { break };
            (i + 1, i + 1 + close, i + 2 + close)
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let len = source[i..].find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')).unwrap_or(source.len() - i);
            (i, i + len, i + len)
        } else {
            i += 1;
            continue;
        };
        let rest = source[next..].trim_start();
        if rest.starts_with(':') && !rest.starts_with("::") && end > start {
            let key = &source[start..end];
            if !key.starts_with('@') && !keys.iter().any(|k| k == key) && !matches!(key, "default" | "case") {
                keys.push(key.to_owned());
            }
        }
        i = next;
    }
    keys
}

impl JsMapProgram {
    /// Compiles the maps (and `AdditionalSources`, name -> script). Errors say what does not compile.
    pub fn compile(
        maps: &[String],
        reduce: Option<&str>,
        additional_sources: &Map<String, Value>,
    ) -> Result<JsMapProgram, JsMapCompileError> {
        let sandbox = Sandbox::new(Limits::default())?;
        sandbox.run(INDEX_PRELUDE)?;
        for (name, source) in additional_sources {
            let Some(source) = source.as_str() else { return Err(JsMapCompileError::AdditionalSourceNotText(name.clone())) };
            sandbox.run(source).map_err(|e| JsMapCompileError::AdditionalSource(name.clone(), e))?;
        }
        for (i, source) in maps.iter().enumerate() {
            sandbox.run(source).map_err(|e| JsMapCompileError::Map(i + 1, e))?;
        }
        if let Some(reduce) = reduce {
            sandbox.run(reduce).map_err(JsMapCompileError::Reduce)?;
            sandbox.define("__corvid_is_reduce", "(function () { return __reduce !== null; })")?;
            if sandbox.call_with_documents("__corvid_is_reduce", &["null"])? != "true" {
                return Err(JsMapCompileError::ReduceNotGroupBy);
            }
            sandbox.define("__corvid_key_fn", "(function (entry) { return __reduce.key(entry); })")?;
            sandbox.define("__corvid_reduce_fn", "(function (key, values) { return __corvid_reduce(key, values); })")?;
        }
        sandbox.define("__corvid_collections_fn", "(function () { return __corvid_collections(); })")?;
        sandbox.define("__corvid_map_fn", "(function (doc, i) { return __corvid_map(doc, i); })")?;
        let collections: Vec<String> = corvid_types::json::parse(&sandbox.call_with_documents("__corvid_collections_fn", &["null"])?)?;
        if collections.is_empty() {
            return Err(JsMapCompileError::NoMap);
        }
        let collections = if collections.iter().any(|c| is_all_docs(c)) { Vec::new() } else { collections };
        let mut field_names = Vec::new();
        for map in maps {
            for name in dynamic_field_names(map) {
                if !field_names.contains(&name) {
                    field_names.push(name);
                }
            }
        }
        for map in maps.iter().map(String::as_str).chain(reduce) {
            for key in literal_keys(map) {
                if !field_names.contains(&key) {
                    field_names.push(key);
                }
            }
        }
        Ok(JsMapProgram { sandbox, collections, field_names })
    }

    /// Collections read by the maps; empty means every document.
    pub fn collections(&self) -> &[String] {
        &self.collections
    }

    /// Fields the maps and reduce can produce (their object-literal keys and literal dynamic field names).
    pub fn field_names(&self) -> &[String] {
        &self.field_names
    }

    /// Fields whose value comes from `createSpatialField(...)` in the maps.
    pub fn spatial_fields(maps: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for map in maps {
            for (at, _) in map.match_indices("createSpatialField") {
                let before = map[..at].trim_end();
                let Some(before) = before.strip_suffix(':') else { continue };
                let key = before.trim_end().rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')).next().unwrap_or("");
                if !key.is_empty() && !out.iter().any(|k| k == key) {
                    out.push(key.to_owned());
                }
            }
        }
        out
    }

    /// The reduce key of a map entry, as canonical JSON text.
    pub fn reduce_key(&self, entry: &str) -> Result<String, JsMapRunError> {
        Ok(self.sandbox.call_with_documents("__corvid_key_fn", &[entry])?)
    }

    /// Reduces the entries (JSON texts) of one key into result objects (JSON texts).
    pub fn reduce(&self, key: &str, entries: &[String]) -> Result<Vec<String>, JsMapRunError> {
        let values = format!("[{}]", entries.join(","));
        let out = self.sandbox.call_with_documents("__corvid_reduce_fn", &[key, &values])?;
        match corvid_types::json::parse(&out)? {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::Object(_) => Ok(item.to_string()),
                    other => Err(JsMapRunError::ReduceResultNotObject(other)),
                })
                .collect(),
            _ => Err(JsMapRunError::ReduceNotObjects),
        }
    }

    /// The index entries of one document (wire JSON with `@metadata`) of `collection`: every map registered
    /// for that collection (or for all documents) contributes.
    pub fn map(&self, collection: &str, document: &str, host: &mut dyn Host) -> Result<Vec<Map<String, Value>>, JsMapRunError> {
        let collections: Vec<String> = corvid_types::json::parse(&self.sandbox.call_with_documents("__corvid_collections_fn", &["null"])?)?;
        let mut entries = Vec::new();
        for (i, c) in collections.iter().enumerate() {
            if !(c.eq_ignore_ascii_case(collection) || is_all_docs(c)) {
                continue;
            }
            let index = i.to_string();
            let out = self.sandbox.call_with_host("__corvid_map_fn", &[document, &index], host)?;
            let Value::Array(items) = corvid_types::json::parse(&out)? else {
                return Err(JsMapRunError::MapNotObjects);
            };
            for item in items {
                match item {
                    Value::Object(mut entry) => {
                        expand_dynamic_fields(&mut entry);
                        entries.push(entry)
                    }
                    other => return Err(JsMapRunError::MapEntryNotObject(other)),
                }
            }
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoLoads;
    impl Host for NoLoads {
        fn call(&mut self, op: &str, _: &str) -> Result<String, String> {
            if op == "load" {
                Ok(r#"{"Name":"Acme"}"#.into())
            } else {
                Err("no".into())
            }
        }
    }

    #[test]
    fn dynamic_fields_get_their_own_names() {
        let maps =
            vec!["map('Users', u => ({ name: u.name, _: [{ $value: u.name, $name: 'analyzed' }, createField(\"other\", 1)] }))".to_owned()];
        let p = JsMapProgram::compile(&maps, None, &Map::new()).unwrap();
        assert!(p.field_names().contains(&"analyzed".to_owned()) && p.field_names().contains(&"other".to_owned()));
        let out = p.map("Users", r#"{"name":"Jo"}"#, &mut NoLoads).unwrap();
        assert_eq!(Value::Object(out[0].clone()), serde_json::json!({"name": "Jo", "analyzed": "Jo", "other": 1}));
    }

    #[test]
    fn finds_literal_keys() {
        assert_eq!(literal_keys("map('Users', u => ({ Name: u.Name, 'Age': u.a ? 1 : 2, \"x y\": 3 }))"), ["Name", "Age", "x y"]);
    }

    #[test]
    fn maps_documents_per_collection() {
        let maps = vec![
            "map('Users', function (u) { return { Name: u.Name.toUpperCase(), Company: load(u.Company).Name }; })".to_owned(),
            "map('Orders', o => o.Lines.map(l => ({ Product: l.P })))".to_owned(),
        ];
        let p = JsMapProgram::compile(&maps, None, &Map::new()).unwrap();
        assert_eq!(p.collections(), ["Users", "Orders"]);
        let out = p.map("Users", r#"{"Name":"jo","Company":"c/1"}"#, &mut NoLoads).unwrap();
        assert_eq!(Value::Object(out[0].clone()), serde_json::json!({"Name": "JO", "Company": "Acme"}));
        let out = p.map("Orders", r#"{"Lines":[{"P":"a"},{"P":"b"}]}"#, &mut NoLoads).unwrap();
        assert_eq!(out.len(), 2);
        assert!(p.map("Other", "{}", &mut NoLoads).unwrap().is_empty());
        assert!(p.map("Users", r#"{}"#, &mut NoLoads).is_err(), "u.Name.toUpperCase() of undefined throws");
    }

    #[test]
    fn item_maps_filter_by_name_and_see_dates() {
        let maps = vec!["counters.map('Users', 'Likes', c => ({ doc: c.DocumentId, likes: c.Value }))".to_owned()];
        let p = JsMapProgram::compile(&maps, None, &Map::new()).unwrap();
        let out = p.map("Users", r#"{"Name":"likes","Value":3,"DocumentId":"users/1"}"#, &mut NoLoads).unwrap();
        assert_eq!(Value::Object(out[0].clone()), serde_json::json!({"doc": "users/1", "likes": 3}));
        assert!(p.map("Users", r#"{"Name":"Views","Value":3,"DocumentId":"users/1"}"#, &mut NoLoads).unwrap().is_empty());
        let segment = r#"{"Name":"HeartRate","DocumentId":"users/1","Start":"2026-01-01T05:00:00.0000000Z","End":"2026-01-01T05:00:00.0000000Z",
            "Count":1,"Entries":[{"Timestamp":"2026-01-01T05:00:00.0000000Z","Tag":null,"Values":[7],"Value":7}]}"#;
        let maps = vec!["timeSeries.map('Users', ts => ts.Entries.map(e => ({ hour: e.Timestamp.getUTCHours(), v: e.Value })))".to_owned()];
        let p = JsMapProgram::compile(&maps, None, &Map::new()).unwrap();
        let out = p.map("Users", segment, &mut NoLoads).unwrap();
        assert_eq!(Value::Object(out[0].clone()), serde_json::json!({"hour": 5, "v": 7}));
    }

    #[test]
    fn compile_errors_name_the_map() {
        let err = JsMapProgram::compile(&["map('Users', function (u) { return { ; })".to_owned()], None, &Map::new()).err().unwrap();
        let err = err.to_string();
        assert!(err.contains("map #1"), "{err}");
        assert!(JsMapProgram::compile(&["var x = 1;".to_owned()], None, &Map::new()).is_err());
        let map = ["map('Users', u => ({ a: 1 }))".to_owned()];
        assert!(JsMapProgram::compile(&map, Some("var nothing = 1;"), &Map::new()).err().unwrap().to_string().contains("groupBy"));
    }

    #[test]
    fn reduces_by_key() {
        let maps = ["map('Orders', o => o.Lines.map(l => ({ Product: l.P, Qty: l.Q })))".to_owned()];
        let reduce = "groupBy(x => x.Product).aggregate(g => ({ Product: g.key, Qty: g.values.reduce((t, v) => t + v.Qty, 0) }))";
        let p = JsMapProgram::compile(&maps, Some(reduce), &Map::new()).unwrap();
        assert_eq!(p.reduce_key(r#"{"Product":"apple","Qty":2}"#).unwrap(), r#""apple""#);
        let out =
            p.reduce(r#""apple""#, &[r#"{"Product":"apple","Qty":2}"#.to_owned(), r#"{"Product":"apple","Qty":5}"#.to_owned()]).unwrap();
        assert_eq!(out, vec![r#"{"Product":"apple","Qty":7}"#.to_owned()]);
    }
}
