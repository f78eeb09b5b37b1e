//! JSON Patch (RFC 6902) on a document's body: `add`, `remove`, `replace`, `move`, `copy`, `test`, with
//! RFC 6901 pointers. All operations of a request apply or none does (a failed `test` or a bad path
//! changes nothing); it runs inside the merged write transaction like a JavaScript patch.

use corvid_storage::WriteTxn;
use corvid_types::{id_key, now_nanos, validate_id};
use serde_json::Value;

use crate::document_json::DocumentJson;
use crate::patch::{PatchOutcome, PatchStatus};
use crate::write::document::{put_document, PutOutcome};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// One RFC 6902 operation; paths are JSON pointers into the document's body.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonPatchOp {
    /// Inserts `value` at `path` (into an array, or replacing an object member).
    Add {
        /// Where.
        path: String,
        /// What.
        value: Value,
    },
    /// Removes what `path` points at, which must exist.
    Remove {
        /// What.
        path: String,
    },
    /// Replaces what `path` points at, which must exist.
    Replace {
        /// Where.
        path: String,
        /// The new value.
        value: Value,
    },
    /// Removes the value at `from` and adds it at `path`.
    Move {
        /// Where the value is taken from.
        from: String,
        /// Where it goes.
        path: String,
    },
    /// Adds a copy of the value at `from` at `path`.
    Copy {
        /// Where the value is copied from.
        from: String,
        /// Where the copy goes.
        path: String,
    },
    /// Fails the whole patch unless the value at `path` equals `value`.
    Test {
        /// What to compare.
        path: String,
        /// The value it must equal.
        value: Value,
    },
}

fn bad(message: impl Into<String>) -> EngineError {
    EngineError::bad_request(message)
}

impl JsonPatchOp {
    /// One `{"op": ..., "path": ..., ...}` object.
    pub fn from_json(value: &Value, index: usize) -> Result<JsonPatchOp, EngineError> {
        let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
        let path = field("path").ok_or_else(|| bad(format!("JSON patch operation #{index} needs a 'path'")))?;
        let needs_value = || value.get("value").cloned().ok_or_else(|| bad(format!("JSON patch operation #{index} needs a 'value'")));
        let needs_from = || field("from").ok_or_else(|| bad(format!("JSON patch operation #{index} needs a 'from'")));
        Ok(match field("op").as_deref() {
            Some("add") => JsonPatchOp::Add { path, value: needs_value()? },
            Some("remove") => JsonPatchOp::Remove { path },
            Some("replace") => JsonPatchOp::Replace { path, value: needs_value()? },
            Some("move") => JsonPatchOp::Move { from: needs_from()?, path },
            Some("copy") => JsonPatchOp::Copy { from: needs_from()?, path },
            Some("test") => JsonPatchOp::Test { path, value: needs_value()? },
            other => {
                return Err(bad(format!("JSON patch operation #{index}: unknown op {other:?} (add, remove, replace, move, copy, test)")))
            }
        })
    }
}

/// The unescaped tokens of a pointer (`/a/b~1c` -> `a`, `b/c`).
fn tokens(pointer: &str) -> Result<Vec<String>, EngineError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(bad(format!("JSON pointer '{pointer}' must start with '/'")));
    };
    Ok(rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect())
}

fn parent<'a>(doc: &'a mut Value, tokens: &[String], pointer: &str) -> Result<&'a mut Value, EngineError> {
    let mut current = doc;
    for token in tokens {
        current = match current {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(move |i| items.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| bad(format!("JSON pointer '{pointer}' does not exist in the document")))?;
    }
    Ok(current)
}

fn get(doc: &Value, pointer: &str) -> Result<Value, EngineError> {
    doc.pointer(pointer).cloned().ok_or_else(|| bad(format!("JSON pointer '{pointer}' does not exist in the document")))
}

fn add(doc: &mut Value, pointer: &str, value: Value, replace_only: bool) -> Result<(), EngineError> {
    let tokens = tokens(pointer)?;
    let Some((last, init)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, init, pointer)? {
        Value::Object(map) => {
            if replace_only && !map.contains_key(last) {
                return Err(bad(format!("JSON pointer '{pointer}' does not exist in the document")));
            }
            map.insert(last.clone(), value);
        }
        Value::Array(items) => {
            let at = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>().map_err(|_| bad(format!("'{last}' is not an array index")))?
            };
            if replace_only {
                let slot = items.get_mut(at).ok_or_else(|| bad(format!("JSON pointer '{pointer}' is past the end of the array")))?;
                *slot = value;
            } else if at > items.len() {
                return Err(bad(format!("JSON pointer '{pointer}' is past the end of the array")));
            } else {
                items.insert(at, value);
            }
        }
        _ => return Err(bad(format!("JSON pointer '{pointer}' points inside a value that is neither an object nor an array"))),
    }
    Ok(())
}

fn remove(doc: &mut Value, pointer: &str) -> Result<Value, EngineError> {
    let tokens = tokens(pointer)?;
    let Some((last, init)) = tokens.split_last() else {
        return Err(bad("the whole document cannot be removed by a JSON patch"));
    };
    let missing = || bad(format!("JSON pointer '{pointer}' does not exist in the document"));
    match parent(doc, init, pointer)? {
        Value::Object(map) => map.shift_remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let at: usize = last.parse().map_err(|_| missing())?;
            (at < items.len()).then(|| items.remove(at)).ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

/// Applies every operation to `doc`, or fails leaving the caller's copy untouched.
pub fn apply(doc: &Value, ops: &[JsonPatchOp]) -> Result<Value, EngineError> {
    let mut doc = doc.clone();
    for op in ops {
        match op {
            JsonPatchOp::Add { path, value } => add(&mut doc, path, value.clone(), false)?,
            JsonPatchOp::Replace { path, value } => add(&mut doc, path, value.clone(), true)?,
            JsonPatchOp::Remove { path } => {
                remove(&mut doc, path)?;
            }
            JsonPatchOp::Move { from, path } => {
                let value = remove(&mut doc, from)?;
                add(&mut doc, path, value, false)?;
            }
            JsonPatchOp::Copy { from, path } => {
                let value = get(&doc, from)?;
                add(&mut doc, path, value, false)?;
            }
            JsonPatchOp::Test { path, value } => {
                if get(&doc, path)? != *value {
                    return Err(EngineError::Concurrency {
                        message: format!("JSON patch test failed: the value at '{path}' is not {value}"),
                    });
                }
            }
        }
    }
    Ok(doc)
}

/// Applies a JSON patch to the body of document `id` inside the writer's transaction.
pub(crate) fn json_patch_in_txn(
    txn: &mut WriteTxn<'_>,
    id: &str,
    ops: &[JsonPatchOp],
    return_document: bool,
    now: i64,
) -> Result<PatchOutcome, EngineError> {
    let Some(current) = txn.document(&id_key(id))? else {
        return Ok(PatchOutcome {
            status: PatchStatus::DocumentDoesNotExist,
            id: id.to_owned(),
            collection: None,
            change_vector: None,
            last_modified: None,
            modified_document: None,
            original_document: None,
            debug_output: Vec::new(),
        });
    };
    let body: Value =
        corvid_types::json::parse(&current.body).map_err(|e| EngineError::Internal(format!("stored document {id} is not JSON: {e}")))?;
    let patched = apply(&body, ops)?;
    if !patched.is_object() {
        return Err(bad("a JSON patch must leave the document an object"));
    }
    if patched == body {
        return Ok(PatchOutcome {
            status: PatchStatus::NotModified,
            id: current.id.clone(),
            collection: Some(current.collection.clone()),
            change_vector: Some(current.change_vector.clone()),
            last_modified: Some(current.last_modified),
            modified_document: return_document.then(|| current.to_json_string(false)),
            original_document: None,
            debug_output: Vec::new(),
        });
    }
    let document = IncomingDocument {
        collection: current.collection.clone(),
        body: patched.to_string(),
        client_metadata: current.client_metadata.clone(),
    };
    let PutOutcome { id, collection, change_vector, last_modified, .. } =
        put_document(txn, &current.id, &ExpectedChangeVector::Any, document, now)?;
    let modified_document = if return_document { txn.document(&id_key(&id))?.map(|r| r.to_json_string(false)) } else { None };
    Ok(PatchOutcome {
        status: PatchStatus::Patched,
        id,
        collection: Some(collection),
        change_vector: Some(change_vector),
        last_modified: Some(last_modified),
        modified_document,
        original_document: None,
        debug_output: Vec::new(),
    })
}

/// Parses `{"Operations": [...]}`.
pub fn parse_operations(value: &Value) -> Result<Vec<JsonPatchOp>, EngineError> {
    let ops = value.get("Operations").and_then(Value::as_array).ok_or_else(|| bad("a JSON patch needs {\"Operations\": [...]}"))?;
    ops.iter().enumerate().map(|(i, op)| JsonPatchOp::from_json(op, i)).collect()
}

impl Database {
    /// Applies a JSON patch (`PATCH /json-patch`) once it is durable.
    pub fn submit_json_patch(
        &self,
        id: String,
        ops: Vec<JsonPatchOp>,
        reply: impl FnOnce(Result<PatchOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_id(&id)?;
        self.write(move |txn| json_patch_in_txn(txn, &id, &ops, true, now_nanos()), reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(list: Value) -> Vec<JsonPatchOp> {
        parse_operations(&json!({ "Operations": list })).unwrap()
    }

    #[test]
    fn applies_rfc6902_operations() {
        let doc = json!({"a": 1, "list": [1, 2], "o": {"x/y": 3}});
        let out = apply(
            &doc,
            &ops(json!([
                {"op": "add", "path": "/b", "value": 2},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "replace", "path": "/a", "value": 10},
                {"op": "move", "from": "/o/x~1y", "path": "/moved"},
                {"op": "copy", "from": "/list/0", "path": "/first"},
                {"op": "remove", "path": "/list/1"},
                {"op": "test", "path": "/b", "value": 2}
            ])),
        )
        .unwrap();
        assert_eq!(out, json!({"a": 10, "list": [1, 3], "o": {}, "b": 2, "moved": 3, "first": 1}));
    }

    #[test]
    fn failures_leave_the_document_alone() {
        let doc = json!({"a": 1});
        assert!(apply(&doc, &ops(json!([{"op": "test", "path": "/a", "value": 2}]))).is_err());
        assert!(apply(&doc, &ops(json!([{"op": "replace", "path": "/nope", "value": 2}]))).is_err());
        assert!(apply(&doc, &ops(json!([{"op": "remove", "path": "/a/b"}]))).is_err());
        assert!(parse_operations(&json!({"Operations": [{"op": "jump", "path": "/a"}]})).is_err());
    }
}
