//! Transform scripts of exports and imports (`TransformScript`, `MaxStepsForTransformScript`), as RavenDB's
//! smuggler runs them: the script runs once per document with `this` bound to it (metadata in
//! `this['@metadata']`), may change it, and what it leaves is what is written; `throw 'skip'` (any letter
//! case, or an `Error` with that message) leaves the document out. A script that does not compile is
//! refused before anything is written; one that fails or runs past its step limit on a document stops the
//! export or import with the document's id named.

use corvid_js::{JsError, Limits, Sandbox};
use serde_json::Value;

use crate::EngineError;

/// RavenDB's default `MaxStepsForTransformScript`.
pub const DEFAULT_MAX_STEPS: u64 = 10_000;

/// The global name the compiled script is kept under.
const FUNCTION: &str = "__corvid_transform";

/// Helpers RavenDB's scripts may use on the document they are given.
const HELPERS: &str = r#"
function id(d) { return d && d['@metadata'] ? d['@metadata']['@id'] : undefined; }
function getMetadata(d) { return d ? d['@metadata'] : undefined; }
function __corvid_is_skip(e) {
  var message = typeof e === 'string' ? e : (e instanceof Error ? e.message : undefined);
  return typeof message === 'string' && message.toLowerCase() === 'skip';
}
"#;

/// A transform script and its step limit, as the options carry them.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformScript {
    /// The JavaScript statements run per document.
    pub script: String,
    /// Most steps the script may run on one document (see `corvid_js::Sandbox::set_step_limit`).
    pub max_steps: u64,
}

impl TransformScript {
    /// The script of an options JSON (`TransformScript`, `MaxStepsForTransformScript`); None when it is
    /// absent or blank.
    pub(crate) fn from_options(json: &Value) -> Result<Option<TransformScript>, EngineError> {
        let Some(script) = json.get("TransformScript").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
            return Ok(None);
        };
        let max_steps = match json.get("MaxStepsForTransformScript") {
            None | Some(Value::Null) => DEFAULT_MAX_STEPS,
            Some(value) => value
                .as_u64()
                .filter(|steps| *steps > 0)
                .ok_or_else(|| EngineError::bad_request(format!("MaxStepsForTransformScript must be a positive number, not {value}")))?,
        };
        Ok(Some(TransformScript { script: script.to_owned(), max_steps }))
    }

    /// Compiles the script in a sandbox of its own, so a syntax error is answered before anything is
    /// written. Blocking (it runs JavaScript): call it off the async threads.
    pub fn check(&self) -> Result<(), EngineError> {
        Transformer::new(self).map(drop)
    }
}

/// What the script made of one document.
#[derive(Debug, PartialEq)]
pub(crate) enum Transformed {
    /// The document as it is to be written (JSON text, `@metadata` included).
    Document(String),
    /// The script skipped it.
    Skipped,
}

/// A compiled transform script, run on the thread that made it.
pub(crate) struct Transformer {
    sandbox: Sandbox,
}

impl Transformer {
    /// Compiles the script.
    pub fn new(script: &TransformScript) -> Result<Transformer, EngineError> {
        let failed = |e: JsError| EngineError::Script { message: format!("The transform script cannot be used: {e}") };
        let sandbox = Sandbox::new(Limits::default()).map_err(failed)?;
        sandbox.run(HELPERS).map_err(failed)?;
        // RavenDB's shape: the statements run with `this` = the document, which is then returned. A skip
        // returns null, which no document can be.
        let source = format!(
            "(function (__doc) {{ try {{ (function () {{\n{}\n}}).call(__doc); }} catch (e) {{ if (__corvid_is_skip(e)) {{ return null; }} throw e; }} return __doc; }})",
            script.script
        );
        sandbox.define(FUNCTION, &source).map_err(|e| match e {
            JsError::Compile(message) => EngineError::Script { message: format!("The transform script does not compile: {message}") },
            other => failed(other),
        })?;
        sandbox.set_step_limit(Some(script.max_steps));
        Ok(Transformer { sandbox })
    }

    /// Runs the script on the document `id` (its JSON text).
    pub fn apply(&self, id: &str, document_json: &str) -> Result<Transformed, EngineError> {
        let out = self.sandbox.call_with_document(FUNCTION, document_json).map_err(|e| match e {
            JsError::Cancelled => EngineError::Cancelled,
            other => EngineError::Script { message: format!("The transform script failed on document '{id}': {other}") },
        })?;
        if out == "null" || !out.starts_with('{') {
            return Ok(Transformed::Skipped);
        }
        Ok(Transformed::Document(out))
    }

    /// Runs the script on the document item in `item` (JSON text), leaving what is to be written there;
    /// false when the script skipped it.
    pub fn apply_in_place(&self, id: &str, item: &mut Vec<u8>) -> Result<bool, EngineError> {
        let text = std::str::from_utf8(item).map_err(|e| EngineError::bad_request(format!("the document is not UTF-8: {e}")))?;
        match self.apply(id, text)? {
            Transformed::Document(out) => {
                item.clear();
                item.extend_from_slice(out.as_bytes());
                Ok(true)
            }
            Transformed::Skipped => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn transformer(script: &str, max_steps: u64) -> Result<Transformer, EngineError> {
        Transformer::new(&TransformScript { script: script.into(), max_steps })
    }

    #[test]
    fn changes_documents_and_their_metadata() {
        let t =
            transformer("this.Full = this.First + ' ' + this.Last; delete this.First; this['@metadata']['Tag'] = id(this);", 100).unwrap();
        let out = t.apply("users/1", r#"{"First":"Ada","Last":"L","@metadata":{"@id":"users/1"}}"#).unwrap();
        let Transformed::Document(text) = out else { panic!("a document") };
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value, json!({"Last":"L","Full":"Ada L","@metadata":{"@id":"users/1","Tag":"users/1"}}));
    }

    #[test]
    fn skip_in_any_case_and_as_an_error_leaves_the_document_out() {
        for script in ["throw 'skip';", "throw 'SKIP';", "throw new Error('Skip');", "if (this.N > 1) throw 'skip';"] {
            let t = transformer(script, 100).unwrap();
            assert_eq!(t.apply("a/1", r#"{"N":2}"#).unwrap(), Transformed::Skipped, "{script}");
        }
        let t = transformer("if (this.N > 1) throw 'skip';", 100).unwrap();
        assert!(matches!(t.apply("a/1", r#"{"N":1}"#).unwrap(), Transformed::Document(_)));
    }

    #[test]
    fn errors_name_the_document_and_syntax_errors_are_found_first() {
        let t = transformer("throw new Error('boom');", 100).unwrap();
        let message = t.apply("orders/7", "{}").unwrap_err().to_string();
        assert!(message.contains("orders/7") && message.contains("boom"), "{message}");
        let Err(EngineError::Script { message }) = transformer("this.x = ;", 100) else { panic!("a syntax error") };
        assert!(message.contains("does not compile"), "{message}");
        let spin = transformer("for (var i = 0; i < 1e7; i++) {}", 1000).unwrap();
        let message = spin.apply("items/1", "{}").unwrap_err().to_string();
        assert!(message.contains("items/1") && message.contains("1000 steps"), "{message}");
    }

    #[test]
    fn options_carry_the_script_and_its_limit() {
        assert_eq!(TransformScript::from_options(&json!({"TransformScript": "  "})).unwrap(), None);
        let script = TransformScript::from_options(&json!({"TransformScript": "this.a = 1", "MaxStepsForTransformScript": null})).unwrap();
        assert_eq!(script.unwrap().max_steps, DEFAULT_MAX_STEPS);
        assert!(TransformScript::from_options(&json!({"TransformScript": "x", "MaxStepsForTransformScript": -1})).is_err());
    }
}
