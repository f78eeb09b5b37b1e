//! JavaScript patches (`PATCH /docs`, `PATCH` and `BatchPATCH` in batches, patch by query). A patch runs
//! inside the merged write transaction, so concurrent patches of one document are applied one after the
//! other and none is lost. Scripts run in a QuickJS sandbox kept per writer thread, with compiled scripts
//! cached, under the sandbox's time and memory limits.

use std::cell::RefCell;
use std::collections::HashMap;

use corvid_js::{Host, JsError, Limits, Sandbox};
use corvid_storage::WriteTxn;
use corvid_types::{id_key, metadata as meta, now_nanos, validate_id};
use serde_json::{Map, Value};

use crate::counters::{CounterOperation, DocumentCounters};
use crate::document_json::DocumentJson;
pub use crate::patch_status::PatchStatus;
use crate::write::document::{delete_document, put_document, PutOutcome};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// A script and its arguments (`args` in the script).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchScript {
    /// The JavaScript source.
    pub script: String,
    /// The arguments, by name.
    pub values: Map<String, Value>,
}

/// A patch of one document (`PATCH /docs`, a batch's `PATCH`).
#[derive(Debug, Clone)]
pub struct PatchCommand {
    /// The document.
    pub id: String,
    /// The change vector the client expects the document to have.
    pub expected: ExpectedChangeVector,
    /// The script run on the existing document.
    pub patch: PatchScript,
    /// Runs on an empty document when the document does not exist.
    pub patch_if_missing: Option<PatchScript>,
    /// Stored as is when the document does not exist (the session's `add_or_patch`).
    pub create_if_missing: Option<Value>,
    /// A change-vector mismatch answers `Skipped` instead of failing.
    pub skip_if_change_vector_mismatch: bool,
    /// Include the document before and after, and the script's `output()` lines.
    pub debug: bool,
    /// Include the document after the patch.
    pub return_document: bool,
}

/// What a patch did to one document, and what the reply shows of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchOutcome {
    /// Created, patched, unchanged, skipped or missing.
    pub status: PatchStatus,
    /// The id as stored.
    pub id: String,
    /// The document's collection (None when it does not exist).
    pub collection: Option<String>,
    /// Its change vector after the patch (None when it does not exist).
    pub change_vector: Option<String>,
    /// When it was last written, in unix nanoseconds (None when it does not exist).
    pub last_modified: Option<i64>,
    /// Wire JSON of the document after the patch (when asked for).
    pub modified_document: Option<String>,
    /// Wire JSON of the document before the patch (debug only).
    pub original_document: Option<String>,
    /// Lines the script wrote with `output()` / `console.log()` (debug only).
    pub debug_output: Vec<String>,
}

impl PatchOutcome {
    fn without_document(status: PatchStatus, id: &str) -> PatchOutcome {
        PatchOutcome {
            status,
            id: id.to_owned(),
            collection: None,
            change_vector: None,
            last_modified: None,
            modified_document: None,
            original_document: None,
            debug_output: Vec::new(),
        }
    }
}

/// RavenDB's helpers for patch scripts. `load`, `put` and `del` work inside the patch's transaction.
const PATCH_HELPERS: &str = r#"
function load(ids) {
  if (Array.isArray(ids)) { return ids.map(function (i) { return __host('load', [i]); }); }
  return __host('load', [ids]);
}
function id(d) { return d && d['@metadata'] ? d['@metadata']['@id'] : undefined; }
function getMetadata(d) { return d ? d['@metadata'] : undefined; }
function lastModified(d) { return d && d['@metadata'] ? d['@metadata']['@last-modified'] : undefined; }
function put(id, doc, changeVector) { return __host('put', [id, doc, changeVector === undefined ? null : changeVector]); }
function del(id, changeVector) { return __host('del', [id, changeVector === undefined ? null : changeVector]); }
function output(message) { __host('output', [typeof message === 'string' ? message : JSON.stringify(message)]); }
var console = { log: function () { output(Array.prototype.slice.call(arguments).map(function (a) { return typeof a === 'string' ? a : JSON.stringify(a); }).join(' ')); } };
function __docId(d, fn) {
  if (typeof d === 'string') { return d; }
  var i = id(d);
  if (typeof i !== 'string') { throw new Error(fn + '() takes a document or a document id as its first argument'); }
  return i;
}
function incrementCounter(d, name, delta) { return __host('incrementCounter', [__docId(d, 'incrementCounter'), name, delta === undefined ? 1 : delta]); }
function deleteCounter(d, name) { return __host('deleteCounter', [__docId(d, 'deleteCounter'), name]); }
function counter(d, name) { return __host('counter', [__docId(d, 'counter'), name]); }
function counterRaw(d, name) { return __host('counterRaw', [__docId(d, 'counterRaw'), name]); }
function __unsupported(name) { return function () { throw new Error(name + '() is not supported in patches by this server'); }; }
function cmpxchg(key) { return __host('cmpxchg', [key]); }
var timeseries = __unsupported('timeseries');
"#;

/// Compiled scripts kept per sandbox before it is recycled (bounds memory with many distinct scripts).
const MAX_CACHED_SCRIPTS: usize = 512;

struct PatchSandbox {
    sandbox: Sandbox,
    functions: HashMap<(String, Option<String>), String>,
}

impl PatchSandbox {
    fn new() -> Result<PatchSandbox, EngineError> {
        let sandbox = Sandbox::new(Limits::default()).map_err(script_error)?;
        sandbox.run(PATCH_HELPERS).map_err(script_error)?;
        Ok(PatchSandbox { sandbox, functions: HashMap::new() })
    }

    /// The global name of the compiled function for `script` (alias: the query's `from X as alias`).
    fn function(&mut self, script: &str, alias: Option<&str>) -> Result<String, EngineError> {
        let key = (script.to_owned(), alias.map(str::to_owned));
        if let Some(name) = self.functions.get(&key) {
            return Ok(name.clone());
        }
        let name = format!("__corvid_patch_{}", self.functions.len());
        let parameter = alias.unwrap_or("");
        // The script's statements run with `this` (and the alias, if any) bound to the document.
        let source = format!("(function (__doc, args) {{ (function ({parameter}) {{\n{script}\n}}).call(__doc, __doc); return __doc; }})");
        self.sandbox.define(&name, &source).map_err(script_error)?;
        self.functions.insert(key, name.clone());
        Ok(name)
    }
}

thread_local! {
    /// One sandbox per writer thread: patches run on the merger's thread, one at a time.
    static SANDBOX: RefCell<Option<PatchSandbox>> = const { RefCell::new(None) };
}

fn script_error(e: JsError) -> EngineError {
    EngineError::Script { message: e.to_string() }
}

/// Checks that a script compiles, before a request reaches the writer.
pub fn validate_script(script: &str) -> Result<(), EngineError> {
    validate_script_with_alias(script, None)
}

/// Like `validate_script`, for a script that names the document `alias` (patch by query).
pub(crate) fn validate_script_with_alias(script: &str, alias: Option<&str>) -> Result<(), EngineError> {
    with_sandbox(|sandbox| sandbox.function(script, alias).map(|_| ()))
}

fn with_sandbox<T>(f: impl FnOnce(&mut PatchSandbox) -> Result<T, EngineError>) -> Result<T, EngineError> {
    SANDBOX.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.as_ref().is_none_or(|s| s.functions.len() >= MAX_CACHED_SCRIPTS) {
            *slot = Some(PatchSandbox::new()?);
        }
        f(slot.as_mut().expect("created above"))
    })
}

/// Answers the script's `load`, `put`, `del` and `output` from inside the write transaction.
struct TxnHost<'a, 't> {
    txn: &'a mut WriteTxn<'t>,
    now: i64,
    output: Vec<String>,
}

impl TxnHost<'_, '_> {
    fn answer(&mut self, op: &str, arguments: Vec<Value>) -> Result<Value, EngineError> {
        let argument = |i: usize| arguments.get(i).cloned().unwrap_or(Value::Null);
        match op {
            "load" => match argument(0) {
                Value::String(id) => match self.txn.document(&id_key(&id))? {
                    Some(record) => Ok(corvid_types::json::parse(&record.to_json_string(false))
                        .map_err(|e| EngineError::Internal(format!("stored document {id} is not JSON: {e}")))?),
                    None => Ok(Value::Null),
                },
                Value::Null => Ok(Value::Null),
                other => Err(EngineError::bad_request(format!("load() takes a document id, not {other}"))),
            },
            "put" => {
                let Value::String(id) = argument(0) else {
                    return Err(EngineError::bad_request("put() takes a document id (a string) as its first argument"));
                };
                let document = IncomingDocument::from_value(argument(1))?;
                let expected = ExpectedChangeVector::from_wire(argument(2).as_str());
                Ok(Value::String(put_document(self.txn, &id, &expected, document, self.now)?.id))
            }
            "del" => {
                let Value::String(id) = argument(0) else {
                    return Err(EngineError::bad_request("del() takes a document id (a string)"));
                };
                let expected = ExpectedChangeVector::from_wire(argument(1).as_str());
                Ok(Value::Bool(delete_document(self.txn, &id, &expected, self.now)?.deleted))
            }
            "output" => {
                self.output.push(argument(0).as_str().unwrap_or_default().to_owned());
                Ok(Value::Null)
            }
            "incrementCounter" | "deleteCounter" | "counter" | "counterRaw" => counter_op(self.txn, op, &arguments, self.now),
            "cmpxchg" => match argument(0) {
                Value::String(key) => Ok(crate::compare_exchange::object_of(self.txn.compare_exchange(&key)?.map(|v| v.value).as_deref())),
                other => Err(EngineError::bad_request(format!("cmpxchg() takes a key (a string), not {other}"))),
            },
            other => Err(EngineError::bad_request(format!("{other}() is not available in patches"))),
        }
    }
}

impl Host for TxnHost<'_, '_> {
    fn call(&mut self, op: &str, arguments_json: &str) -> Result<String, String> {
        let arguments: Vec<Value> = corvid_types::json::parse(arguments_json).map_err(|e| e.to_string())?;
        self.answer(op, arguments).map(|v| v.to_string()).map_err(|e| e.to_string())
    }
}

/// Runs `script` over `document` (wire JSON) and returns the document as the script left it.
fn run_script(
    txn: &mut WriteTxn<'_>,
    script: &PatchScript,
    alias: Option<&str>,
    document: &str,
    now: i64,
    output: &mut Vec<String>,
) -> Result<Value, EngineError> {
    let arguments = Value::Object(script.values.clone()).to_string();
    let mut host = TxnHost { txn, now, output: Vec::new() };
    let result = with_sandbox(|sandbox| {
        let function = sandbox.function(&script.script, alias)?;
        sandbox.sandbox.call_with_host(&function, &[document, &arguments], &mut host).map_err(script_error)
    });
    output.append(&mut host.output);
    let text = result?;
    corvid_types::json::parse(&text).map_err(|e| EngineError::Internal(format!("patch result is not JSON: {e}")))
}

/// JSON equality where `1` and `1.0` are the same number (scripts round-trip numbers through doubles).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w))),
        _ => a == b,
    }
}

/// Puts back the text of every number the script left at the same place with the same value. Scripts see
/// numbers as doubles, so `79228162514264337593543950335`, `1.10` or `-0` come out of any script as
/// `7.922816251426434e+28`, `1.1` or `0`; a number the script did not change keeps the digits it was
/// written with, as RavenDB keeps the fields a patch does not touch.
fn restore_untouched_numbers(original: &Value, patched: &mut Value) {
    match (original, patched) {
        (Value::Number(before), Value::Number(after)) if before != after && before.as_f64() == after.as_f64() => {
            *after = before.clone();
        }
        (Value::Array(before), Value::Array(after)) => {
            before.iter().zip(after.iter_mut()).for_each(|(b, a)| restore_untouched_numbers(b, a));
        }
        (Value::Object(before), Value::Object(after)) => {
            for (key, a) in after.iter_mut() {
                if let Some(b) = before.get(key) {
                    restore_untouched_numbers(b, a);
                }
            }
        }
        _ => {}
    }
}

/// Keeps the document's collection when the script dropped `@collection` (or all of `@metadata`).
fn keep_collection(document: &mut Value, collection: &str) {
    let Value::Object(fields) = document else { return };
    let metadata = fields.entry(meta::METADATA).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        metadata.entry(meta::COLLECTION).or_insert_with(|| Value::String(collection.to_owned()));
    }
}

/// Applies one patch inside the writer's transaction.
pub(crate) fn patch_in_txn(txn: &mut WriteTxn<'_>, command: &PatchCommand, now: i64) -> Result<PatchOutcome, EngineError> {
    patch_document(txn, &command.id, command, None, now)
}

/// Applies a patch to one document; `alias` binds the document to a name (patch by query).
pub(crate) fn patch_document(
    txn: &mut WriteTxn<'_>,
    id: &str,
    command: &PatchCommand,
    alias: Option<&str>,
    now: i64,
) -> Result<PatchOutcome, EngineError> {
    let key = id_key(id);
    let current = txn.document(&key)?;
    let mut output = Vec::new();
    let Some(current) = current else {
        let created = if let Some(document) = &command.create_if_missing {
            document.clone()
        } else if let Some(script) = &command.patch_if_missing {
            run_script(txn, script, alias, "{}", now, &mut output)?
        } else {
            return Ok(PatchOutcome::without_document(PatchStatus::DocumentDoesNotExist, id));
        };
        let document = IncomingDocument::from_value(created)?;
        let put = put_document(txn, id, &ExpectedChangeVector::Any, document, now)?;
        let mut outcome = outcome_after_write(txn, put, PatchStatus::Created, command)?;
        outcome.debug_output = output;
        return Ok(outcome);
    };
    if let Err(conflict) = command.expected.check(id, Some(&current), "PATCH") {
        if command.skip_if_change_vector_mismatch {
            return Ok(PatchOutcome::without_document(PatchStatus::Skipped, &current.id));
        }
        return Err(conflict);
    }
    let original_json = current.to_json_string(false);
    let original: Value =
        corvid_types::json::parse(&original_json).map_err(|e| EngineError::Internal(format!("stored document {id} is not JSON: {e}")))?;
    let mut patched = run_script(txn, &command.patch, alias, &original_json, now, &mut output)?;
    if !patched.is_object() {
        return Err(EngineError::Script { message: format!("the patch of {id} left the document as {patched}; it must stay an object") });
    }
    let mut outcome = if same_json(&original, &patched) {
        PatchOutcome {
            status: PatchStatus::NotModified,
            id: current.id.clone(),
            collection: Some(current.collection.clone()),
            change_vector: Some(current.change_vector.clone()),
            last_modified: Some(current.last_modified),
            modified_document: (command.return_document || command.debug).then(|| original_json.clone()),
            original_document: None,
            debug_output: Vec::new(),
        }
    } else {
        keep_collection(&mut patched, &current.collection);
        restore_untouched_numbers(&original, &mut patched);
        let document = IncomingDocument::from_value(patched)?;
        // The current version was checked above; the put must not check again (ids may differ in case).
        let put = put_document(txn, &current.id, &ExpectedChangeVector::Any, document, now)?;
        outcome_after_write(txn, put, PatchStatus::Patched, command)?
    };
    if command.debug {
        outcome.original_document = Some(original_json);
    }
    outcome.debug_output = output;
    Ok(outcome)
}

fn outcome_after_write(
    txn: &mut WriteTxn<'_>,
    put: PutOutcome,
    status: PatchStatus,
    command: &PatchCommand,
) -> Result<PatchOutcome, EngineError> {
    let PutOutcome { id, collection, change_vector, last_modified, .. } = put;
    let modified_document =
        if command.return_document || command.debug { txn.document(&id_key(&id))?.map(|r| r.to_json_string(false)) } else { None };
    Ok(PatchOutcome {
        status,
        id,
        collection: Some(collection),
        change_vector: Some(change_vector),
        last_modified: Some(last_modified),
        modified_document,
        original_document: None,
        debug_output: Vec::new(),
    })
}

/// `incrementCounter`, `deleteCounter`, `counter` and `counterRaw` of a patch script, inside its transaction.
/// Arguments: the document id, the counter name, and for increments the delta.
fn counter_op(txn: &mut WriteTxn<'_>, op: &str, arguments: &[Value], now: i64) -> Result<Value, EngineError> {
    let id = arguments.first().and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = match arguments.get(1) {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(EngineError::bad_request(format!("{op}() needs a counter name (a non-empty string) as its second argument"))),
    };
    corvid_types::validate_name(corvid_types::NameKind::Counter, &name)?;
    let key = id_key(&id);
    match op {
        "counter" | "counterRaw" => {
            let Some(value) = txn.counter(&key, &name)? else { return Ok(Value::Null) };
            if op == "counter" {
                return Ok(Value::from(value.value));
            }
            let mut raw = Map::new();
            raw.insert(txn.database_id().to_owned(), Value::from(value.value));
            Ok(Value::Object(raw))
        }
        _ => {
            let operation = if op == "deleteCounter" {
                CounterOperation::Delete { name }
            } else {
                let delta = match arguments.get(2) {
                    Some(Value::Number(n)) => {
                        n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18).map(|f| f as i64))
                    }
                    _ => None,
                };
                let delta = delta.ok_or_else(|| {
                    EngineError::bad_request(format!(
                        "incrementCounter() needs a whole number as its delta, not {}",
                        arguments.get(2).unwrap_or(&Value::Null)
                    ))
                })?;
                CounterOperation::Increment { name, delta }
            };
            if txn.document(&key)?.is_none() {
                return Err(EngineError::DocumentDoesNotExist(id));
            }
            crate::counters::run(txn, DocumentCounters { id, operations: vec![operation] }, now)?;
            Ok(Value::Bool(true))
        }
    }
}

impl Database {
    /// Runs one patch in the writer's transaction and rolls it back (`PATCH /docs?test=true`): the outcome
    /// says what the patch would do, with debug output; nothing is written. Call on a blocking thread.
    pub fn test_patch_blocking(&self, mut command: PatchCommand) -> Result<PatchOutcome, EngineError> {
        validate_id(&command.id)?;
        command.debug = true;
        command.return_document = true;
        self.merger.dry_run_blocking(move |txn| patch_in_txn(txn, &command, now_nanos())).map_err(|e| self.name_error(e))
    }

    /// Applies one patch (`PATCH /docs`) once it is durable.
    pub fn submit_patch(
        &self,
        command: PatchCommand,
        reply: impl FnOnce(Result<PatchOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_id(&command.id)?;
        self.write(move |txn| patch_in_txn(txn, &command, now_nanos()), reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert!(same_json(&json!({"a": 1, "b": [1.0]}), &json!({"a": 1.0, "b": [1]})));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }

    #[test]
    fn numbers_a_script_did_not_change_keep_their_text() {
        let parse = |t: &str| corvid_types::json::parse::<Value>(t).unwrap();
        let original = parse(r#"{"big":79228162514264337593543950335,"price":1.10,"zero":-0,"list":[1E-7,2.50],"n":{"x":1.0}}"#);
        // What a script that set `changed` and `n.x = 2` returns: every other number through a double.
        let mut patched = parse(r#"{"big":7.922816251426434e+28,"price":1.1,"zero":0,"list":[1e-7,2.5,3],"n":{"x":2},"changed":1}"#);
        restore_untouched_numbers(&original, &mut patched);
        assert_eq!(
            patched.to_string(),
            r#"{"big":79228162514264337593543950335,"price":1.10,"zero":-0,"list":[1E-7,2.50,3],"n":{"x":2},"changed":1}"#
        );
    }

    #[test]
    fn collection_is_kept_when_metadata_is_dropped() {
        let mut doc = json!({"Name": "x"});
        keep_collection(&mut doc, "Users");
        assert_eq!(doc, json!({"Name": "x", "@metadata": {"@collection": "Users"}}));
        let mut doc = json!({"@metadata": {"@collection": "Orders"}});
        keep_collection(&mut doc, "Users");
        assert_eq!(doc["@metadata"]["@collection"], "Orders");
    }

    #[test]
    fn scripts_that_do_not_compile_are_refused() {
        assert!(matches!(validate_script("this.x = ;"), Err(EngineError::Script { .. })));
        assert!(validate_script("this.x = args.y + 1;").is_ok());
    }
}
