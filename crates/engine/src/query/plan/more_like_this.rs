//! Planning `moreLikeThis(id() = 'x'[, $options])` / `moreLikeThis($document[, $options])`: which document
//! the words come from and the options; the words themselves are picked when the query runs.

use corvid_index::Value as IndexValue;
use corvid_rql::{Arg, Call, CompareOp, Expr, Operand, ValueKind};
use serde_json::Value as Json;

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::query::catalog::IndexKind;
use crate::query::more_like_this::{MoreLikeThisOptions, MoreLikeThisPlan, MoreLikeThisSource};
use crate::EngineError;

impl Translator<'_> {
    /// The source document and options of a `moreLikeThis(...)`, which needs a named map index.
    pub(super) fn more_like_this(&mut self, call: &Call) -> Result<MoreLikeThisPlan, EngineError> {
        let Some(index) = &self.named_index else {
            return Err(unsupported("moreLikeThis() outside a query on a named index ('from index ...')", self.text, call.span));
        };
        if index.kind != IndexKind::Map {
            return Err(invalid("moreLikeThis() needs a map index"));
        }
        let options = match call.args.get(1) {
            Some(Arg::Value(v)) => match &v.kind {
                ValueKind::Parameter(name) => self.parameter(name, v.span)?.clone(),
                ValueKind::String(s) => {
                    serde_json::from_str(s).map_err(|e| invalid(format!("moreLikeThis() options are not JSON: {e}")))?
                }
                _ => return Err(invalid("moreLikeThis() options must be a JSON object")),
            },
            _ => Json::Null,
        };
        let given = |text: &str| -> Result<MoreLikeThisSource, EngineError> {
            let document = serde_json::from_str(text).map_err(|e| invalid(format!("moreLikeThis() document is not JSON: {e}")))?;
            Ok(MoreLikeThisSource::Given(document))
        };
        let source = match call.args.first() {
            Some(Arg::Expr(Expr::Compare { left: Operand::Call(id), op: CompareOp::Eq, right: Operand::Value(v), .. })) if id.is("id") => {
                let IndexValue::String(id) = self.value(v)? else {
                    return Err(invalid("moreLikeThis(id() = ...) needs a document id"));
                };
                MoreLikeThisSource::Document { id }
            }
            Some(Arg::Value(v)) => match &v.kind {
                ValueKind::Parameter(name) => match self.parameter(name, v.span)? {
                    Json::String(text) => given(text)?,
                    other => MoreLikeThisSource::Given(other.clone()),
                },
                ValueKind::String(text) => given(text)?,
                _ => return Err(invalid("moreLikeThis() needs id() = 'doc' or a JSON document")),
            },
            _ => return Err(invalid(format!("moreLikeThis() needs id() = 'doc' or a JSON document (at position {})", call.span.start))),
        };
        Ok(MoreLikeThisPlan { source, options: MoreLikeThisOptions::from_json(&options) })
    }
}
