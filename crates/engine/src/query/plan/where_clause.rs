//! Translation of a query's `where` into what the index is asked: the [`Translator`] resolves paths
//! (without the `from` alias), literals and parameters, and notes every field an automatic index needs.

use corvid_index::{Filter, SpatialRelation, Value as IndexValue};
use corvid_rql::{Arg, Call, CompareOp, Expr, FieldPath, Operand, Query, ValueKind};
use serde_json::{Map, Value as Json};

use super::condition::Condition;
use super::error::{invalid, unsupported};
use crate::indexing::AutoIndexField;
use crate::query::catalog::CatalogIndex;
use crate::EngineError;

/// Translates the parsed query with its parameters; remembers the fields an index needs.
pub(super) struct Translator<'a> {
    /// The query text, for error messages that quote it.
    pub(super) text: &'a str,
    pub(super) parameters: &'a Map<String, Json>,
    /// The `from` alias (`from Orders as o`): `o.Total` is the path `Total`.
    pub(super) alias: Option<String>,
    /// Every field the query filters, sorts, facets or highlights on.
    pub(super) needed: Vec<AutoIndexField>,
    /// The index a `from index` query names (moreLikeThis needs one).
    pub(super) named_index: Option<CatalogIndex>,
}

impl<'a> Translator<'a> {
    /// A translator for query `text` with its parameters and `from` alias.
    pub(super) fn new(text: &'a str, parameters: &'a Map<String, Json>, alias: Option<String>) -> Translator<'a> {
        Translator { text, parameters, alias, needed: Vec::new(), named_index: None }
    }
}

impl Translator<'_> {
    /// A field path as a dotted string, without the `from` alias.
    pub(super) fn path(&self, path: &FieldPath) -> String {
        let stripped = self.alias.as_deref().and_then(|a| path.strip_alias(a));
        stripped.as_ref().unwrap_or(path).dotted()
    }

    /// Notes that the query needs `path` in an automatic index, with a full-text or case-sensitive form.
    pub(super) fn need(&mut self, path: &str, search: bool, exact: bool) {
        self.needed.push(AutoIndexField { search, exact, ..AutoIndexField::plain(path) });
    }

    /// The value of parameter `name` (a missing one is an error that points at its use).
    pub(super) fn parameter(&self, name: &str, span: corvid_rql::Span) -> Result<&Json, EngineError> {
        self.parameters.get(name).ok_or_else(|| invalid(format!("Query parameter '{name}' was not provided (at position {})", span.start)))
    }

    /// A parameter's JSON as an index value (arrays and objects are refused).
    fn json_value(json: &Json) -> Result<IndexValue, EngineError> {
        Ok(match json {
            Json::Null => IndexValue::Null,
            Json::Bool(b) => IndexValue::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => IndexValue::Long(i),
                None => IndexValue::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => IndexValue::String(s.clone()),
            other => return Err(invalid(format!("a query value must be a string, number, boolean or null, not {other}"))),
        })
    }

    /// One value; a parameter holding an array is expanded by `values`.
    pub(super) fn value(&self, value: &corvid_rql::Value) -> Result<IndexValue, EngineError> {
        Ok(match &value.kind {
            ValueKind::String(s) => IndexValue::String(s.clone()),
            ValueKind::Long(n) => IndexValue::Long(*n),
            ValueKind::Double(d) => IndexValue::Double(*d),
            ValueKind::Bool(b) => IndexValue::Bool(*b),
            ValueKind::Null => IndexValue::Null,
            ValueKind::Parameter(name) => Self::json_value(self.parameter(name, value.span)?)?,
        })
    }

    /// The values of an `in (...)` list, parameters holding arrays expanded.
    pub(super) fn values(&self, values: &[corvid_rql::Value]) -> Result<Vec<IndexValue>, EngineError> {
        let mut out = Vec::new();
        for value in values {
            match &value.kind {
                ValueKind::Parameter(name) => match self.parameter(name, value.span)? {
                    Json::Array(items) => {
                        for item in items {
                            out.push(Self::json_value(item)?);
                        }
                    }
                    other => out.push(Self::json_value(other)?),
                },
                _ => out.push(self.value(value)?),
            }
        }
        Ok(out)
    }

    /// A method's string argument (numbers in their text form).
    pub(super) fn string_arg(&self, arg: Option<&Arg>, what: &str, call: &Call) -> Result<String, EngineError> {
        match arg.map(|a| match a {
            Arg::Value(v) => self.value(v),
            _ => Err(invalid("")),
        }) {
            Some(Ok(IndexValue::String(s))) => Ok(s),
            Some(Ok(IndexValue::Long(n))) => Ok(n.to_string()),
            Some(Ok(IndexValue::Double(d))) => Ok(d.to_string()),
            _ => Err(invalid(format!("{}() needs {what} (at position {})", call.name, call.span.start))),
        }
    }

    /// A method's field argument, as a path.
    pub(super) fn field_arg(&self, arg: Option<&Arg>, call: &Call) -> Result<String, EngineError> {
        match arg.and_then(Arg::as_field) {
            Some(path) => Ok(self.path(&path)),
            None => Err(invalid(format!("{}() needs a field as its first argument (at position {})", call.name, call.span.start))),
        }
    }

    /// The path of a field operand.
    pub(super) fn operand_field(&self, operand: &Operand) -> Option<String> {
        match operand {
            Operand::Field(path) => Some(self.path(path)),
            _ => None,
        }
    }

    /// The condition `expr` stands for; `exact` inside `exact(...)`.
    pub(super) fn expr(&mut self, expr: &Expr, exact: bool) -> Result<Condition, EngineError> {
        let filter = match expr {
            Expr::True(_) => Filter::All,
            Expr::And(a, b) => return Ok(Condition::and(vec![self.expr(a, exact)?, self.expr(b, exact)?])),
            Expr::Or(a, b) => return Ok(Condition::or(vec![self.expr(a, exact)?, self.expr(b, exact)?])),
            Expr::Not { expr, .. } => return Ok(Condition::not(self.expr(expr, exact)?)),
            Expr::Compare { left, op, right, span } => {
                let (field, value, op) = match (left, right) {
                    (Operand::Field(_), Operand::Value(v)) => (self.operand_field(left), v, *op),
                    (Operand::Value(v), Operand::Field(_)) => (self.operand_field(right), v, flip(*op)),
                    _ => return Err(unsupported("This comparison", self.text, *span)),
                };
                let field = field.expect("matched a field operand");
                self.need(&field, false, exact);
                let value = self.value(value)?;
                match op {
                    CompareOp::Eq => Filter::Equal { field, value, exact },
                    CompareOp::NotEq => Filter::Not(Box::new(Filter::Equal { field, value, exact })),
                    CompareOp::Lt => Filter::Range { field, lower: None, upper: Some((value, false)) },
                    CompareOp::Le => Filter::Range { field, lower: None, upper: Some((value, true)) },
                    CompareOp::Gt => Filter::Range { field, lower: Some((value, false)), upper: None },
                    CompareOp::Ge => Filter::Range { field, lower: Some((value, true)), upper: None },
                }
            }
            Expr::Between { operand, low, high, span } => {
                let field = self.operand_field(operand).ok_or_else(|| unsupported("'between' on this operand", self.text, *span))?;
                self.need(&field, false, exact);
                Filter::Range { field, lower: Some((self.value(low)?, true)), upper: Some((self.value(high)?, true)) }
            }
            Expr::In { operand, values, all, span } => {
                let field = self.operand_field(operand).ok_or_else(|| unsupported("'in' on this operand", self.text, *span))?;
                self.need(&field, false, exact);
                Filter::In { field, values: self.values(values)?, all: *all, exact }
            }
            Expr::Method(call) => return self.method(call, exact),
        };
        Ok(Condition::Filter(filter))
    }

    /// The condition a method in `where` stands for (`search(...)`, `exists(...)`, ...).
    pub(super) fn method(&mut self, call: &Call, exact: bool) -> Result<Condition, EngineError> {
        let name = call.name.to_ascii_lowercase();
        let filter = match name.as_str() {
            "search" => {
                let field = self.field_arg(call.args.first(), call)?;
                let terms = self.string_arg(call.args.get(1), "the terms to search for", call)?;
                let all = match call.args.get(2) {
                    None => false,
                    Some(Arg::Field(p)) if p.dotted().eq_ignore_ascii_case("and") => true,
                    Some(Arg::Field(p)) if p.dotted().eq_ignore_ascii_case("or") => false,
                    Some(other) => {
                        return Err(invalid(format!("search() operator must be 'and' or 'or' (at position {})", other.span().start)))
                    }
                };
                self.need(&field, true, false);
                Filter::Search { field, terms, all }
            }
            "exists" => {
                let field = self.field_arg(call.args.first(), call)?;
                self.need(&field, false, false);
                Filter::Exists { field }
            }
            "startswith" | "endswith" => {
                let field = self.field_arg(call.args.first(), call)?;
                let text = self.string_arg(call.args.get(1), "a string", call)?;
                self.need(&field, false, exact);
                if name == "startswith" {
                    Filter::StartsWith { field, prefix: text, exact }
                } else {
                    Filter::EndsWith { field, suffix: text, exact }
                }
            }
            "regex" => {
                let field = self.field_arg(call.args.first(), call)?;
                let pattern = self.string_arg(call.args.get(1), "a pattern", call)?;
                self.need(&field, false, false);
                Filter::Regex { field, pattern }
            }
            "exact" => {
                return match call.args.first() {
                    Some(Arg::Expr(inner)) => self.expr(inner, true),
                    Some(Arg::Call(inner)) => self.method(inner, true),
                    _ => Err(invalid(format!("exact() needs a condition (at position {})", call.span.start))),
                }
            }
            "boost" => {
                let inner = match call.args.first() {
                    Some(Arg::Expr(inner)) => self.expr(inner, exact)?,
                    Some(Arg::Call(inner)) => self.method(inner, exact)?,
                    _ => return Err(invalid(format!("boost() needs a condition (at position {})", call.span.start))),
                };
                let factor = match call.args.get(1) {
                    Some(Arg::Value(v)) => match self.value(v)? {
                        IndexValue::Long(n) => n as f32,
                        IndexValue::Double(d) => d as f32,
                        _ => return Err(invalid("boost() factor must be a number")),
                    },
                    _ => return Err(invalid("boost() needs a factor")),
                };
                return Ok(Condition::boost(inner, factor));
            }
            // With entries merged per document, "every condition holds for the same entry" is the
            // conjunction (documented: fan-out entries are not told apart).
            "intersect" => {
                let mut parts = Vec::new();
                for arg in &call.args {
                    parts.push(match arg {
                        Arg::Expr(inner) => self.expr(inner, exact)?,
                        Arg::Call(inner) => self.method(inner, exact)?,
                        other => return Err(unsupported("This intersect() argument", self.text, other.span())),
                    });
                }
                if parts.len() < 2 {
                    return Err(invalid(format!("intersect() needs at least two conditions (at position {})", call.span.start)));
                }
                return Ok(Condition::and(parts));
            }
            "fuzzy" => {
                let Some(Arg::Expr(Expr::Compare { left, op: CompareOp::Eq, right: Operand::Value(value), .. })) = call.args.first() else {
                    return Err(invalid(format!("fuzzy() needs a condition 'Field = value' (at position {})", call.span.start)));
                };
                let field = self.operand_field(left).ok_or_else(|| invalid("fuzzy() needs a field on the left of '='"))?;
                let IndexValue::String(term) = self.value(value)? else { return Err(invalid("fuzzy() compares a string")) };
                let similarity = self.number_arg(call.args.get(1), "a similarity", call)?;
                // Lucene's FuzzyQuery.floatToEdits: a similarity of 1 or more is an edit count.
                let max_edits = if similarity >= 1.0 {
                    similarity.min(2.0) as u8
                } else {
                    ((1.0 - similarity) * term.chars().count() as f64).floor().clamp(0.0, 2.0) as u8
                };
                self.need(&field, false, false);
                Filter::Fuzzy { field, term, max_edits }
            }
            "proximity" => {
                let Some(Arg::Call(search)) = call.args.first().filter(|a| matches!(a, Arg::Call(c) if c.is("search"))) else {
                    return Err(invalid(format!("proximity() needs a search() as its first argument (at position {})", call.span.start)));
                };
                let field = self.field_arg(search.args.first(), search)?;
                let terms = self.string_arg(search.args.get(1), "the terms to search for", search)?;
                let slop = self.number_arg(call.args.get(1), "a distance", call)?;
                if slop < 0.0 {
                    return Err(invalid("proximity() distance must not be negative"));
                }
                self.need(&field, true, false);
                Filter::Proximity { field, terms, slop: slop as u32 }
            }
            "lucene" => {
                // A subset: the text is searched in the field like search(), with wildcards and phrases.
                let field = self.field_arg(call.args.first(), call)?;
                let text = self.string_arg(call.args.get(1), "a Lucene query", call)?;
                let prefix = format!("{field}:");
                let terms: Vec<&str> = text.split_whitespace().map(|w| w.strip_prefix(prefix.as_str()).unwrap_or(w)).collect();
                self.need(&field, true, false);
                Filter::Search { field, terms: terms.join(" "), all: false }
            }
            "morelikethis" => return self.more_like_this(call).map(Condition::MoreLikeThis),
            "spatial.within" | "spatial.contains" | "spatial.intersects" | "spatial.disjoint" => {
                let field = self.spatial_field(call.args.first(), call)?;
                let shape = self.shape(call.args.get(1), call)?;
                let relation = match name.as_str() {
                    "spatial.within" => SpatialRelation::Within,
                    "spatial.contains" => SpatialRelation::Contains,
                    "spatial.intersects" => SpatialRelation::Intersects,
                    _ => SpatialRelation::Disjoint,
                };
                Filter::Spatial { field, shape, relation }
            }
            _ => return Err(unsupported(&format!("The method {}()", call.name), self.text, call.span)),
        };
        Ok(Condition::Filter(filter))
    }

    /// A method's number argument (a string holding a number too).
    pub(super) fn number_arg(&self, arg: Option<&Arg>, what: &str, call: &Call) -> Result<f64, EngineError> {
        match arg {
            Some(Arg::Value(v)) => match self.value(v)? {
                IndexValue::Long(n) => Ok(n as f64),
                IndexValue::Double(d) => Ok(d),
                IndexValue::String(s) => s.trim().parse().map_err(|_| invalid(format!("{what} of {}() must be a number", call.name))),
                _ => Err(invalid(format!("{what} of {}() must be a number", call.name))),
            },
            _ => Err(invalid(format!("{}() needs {what} (at position {})", call.name, call.span.start))),
        }
    }
}

/// The operator seen from the other side (`5 < Age` is `Age > 5`).
fn flip(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
        other => other,
    }
}

/// The condition of the query's `where` (every entry when it has none).
pub(super) fn where_condition(query: &Query, t: &mut Translator<'_>) -> Result<Condition, EngineError> {
    match &query.where_clause {
        Some(w) => t.expr(w, false),
        None => Ok(Condition::all()),
    }
}

/// `id() = x`, `id() in (...)`, or several of them joined by `or`: the ids, else None.
pub(super) fn id_only(expr: &Expr, t: &Translator<'_>) -> Result<Option<Vec<String>>, EngineError> {
    let is_id = |o: &Operand| matches!(o, Operand::Call(c) if c.is("id") && c.args.is_empty());
    let as_strings = |values: Vec<IndexValue>| -> Vec<String> {
        values
            .into_iter()
            .filter_map(|v| match v {
                IndexValue::String(s) => Some(s),
                _ => None,
            })
            .collect()
    };
    Ok(match expr {
        Expr::Compare { left, op: CompareOp::Eq, right: Operand::Value(v), .. } if is_id(left) => Some(as_strings(vec![t.value(v)?])),
        Expr::In { operand, values, all: false, .. } if is_id(operand) => Some(as_strings(t.values(values)?)),
        Expr::Or(a, b) => match (id_only(a, t)?, id_only(b, t)?) {
            (Some(mut x), Some(y)) => {
                x.extend(y);
                Some(x)
            }
            _ => None,
        },
        _ => None,
    })
}
