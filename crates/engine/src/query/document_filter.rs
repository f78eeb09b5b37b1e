//! The `filter` clause (RavenDB's "exploration queries"): a predicate evaluated on each document the query
//! selected (the `where` matches of an index, or the whole collection), read from storage, without an index.
//!
//! RavenDB translates the clause to JavaScript, and this evaluator follows that translation: `=` is strict
//! equality (strings compared with their case), `startsWith`/`endsWith` ignore case, `exists` is true for any
//! present value (null too). Methods that need an index (`search`, `boost`, spatial, ...) are refused when
//! the query is planned, with a message that names them.

use std::cmp::Ordering;

use corvid_rql::{Arg, Call, CompareOp, Expr, FieldPath, Operand, PathSegment, ValueKind};
use corvid_storage::DocumentRecord;
use serde_json::{Map, Value};

use super::literal::literal_value;
use crate::EngineError;

/// Methods a filter may call, as RavenDB's JavaScript translation supports them.
const FILTER_METHODS: &[&str] = &["exists", "startsWith", "endsWith", "intersect"];

fn invalid(message: String) -> EngineError {
    EngineError::InvalidQuery { message }
}

/// Where a filter reads a path: the document itself or a document named by `load <path> as <alias>` (the
/// rest of the path: None for the loaded document as a whole).
enum Root {
    Document(FieldPath),
    Loaded { alias: String, rest: Option<FieldPath> },
}

/// A planned `filter` clause with the values it needs.
pub(crate) struct DocumentFilter {
    expr: Expr,
    /// The from-alias (`from Orders as o`): `o.Total` reads `Total`.
    alias: Option<String>,
    /// `load` aliases, each with the path of the id it loads.
    loads: Vec<(String, String)>,
    parameters: Map<String, Value>,
    /// `filter_limit n`: at most this many documents are evaluated.
    pub limit: Option<usize>,
}

/// The clause as RQL text with its aliases and limit (the parameters are the query's).
impl std::fmt::Debug for DocumentFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentFilter")
            .field("expr", &self.expr.to_string())
            .field("alias", &self.alias)
            .field("loads", &self.loads)
            .field("limit", &self.limit)
            .finish()
    }
}

/// How a filtered scan went, reported as RavenDB's `ScannedResults` and `SkippedResults`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FilterCounts {
    pub scanned: u64,
    pub rejected: u64,
    pub accepted: u64,
}

impl DocumentFilter {
    /// Checks that every part of `expr` can be evaluated on a document. `declared` are the names of the
    /// query's `declare function`s (refused in a filter: they need the JavaScript runtime).
    pub fn new(
        expr: Expr,
        text: &str,
        alias: Option<String>,
        loads: Vec<(String, String)>,
        parameters: Map<String, Value>,
        limit: Option<usize>,
        declared: &[String],
    ) -> Result<DocumentFilter, EngineError> {
        check(&expr, text, declared)?;
        Ok(DocumentFilter { expr, alias, loads, parameters, limit })
    }

    /// Whether the document `id` with body `document` passes the filter. `load` reads a document by id
    /// (for paths through `load` aliases).
    pub fn matches(
        &self,
        id: &str,
        document: &Value,
        load: &mut dyn FnMut(&str) -> Result<Option<Value>, EngineError>,
    ) -> Result<bool, EngineError> {
        let mut context = Context { filter: self, id, document, load, loaded: Vec::new() };
        context.eval(&self.expr)
    }
}

/// The page of a filtered query, built as the selected documents are offered in query order: paging
/// applies to the documents that pass, and scanning continues past the page so the total is exact.
pub(crate) struct FilteredPage<'f> {
    filter: &'f DocumentFilter,
    skip: usize,
    take: usize,
    pub counts: FilterCounts,
    pub records: Vec<DocumentRecord>,
}

impl<'f> FilteredPage<'f> {
    pub fn new(filter: &'f DocumentFilter, skip: usize, take: usize) -> FilteredPage<'f> {
        FilteredPage { filter, skip, take, counts: FilterCounts::default(), records: Vec::new() }
    }

    /// Evaluates the next selected document; false once `filter_limit` documents were scanned (stop).
    pub fn offer(
        &mut self,
        record: DocumentRecord,
        load: &mut dyn FnMut(&str) -> Result<Option<Value>, EngineError>,
    ) -> Result<bool, EngineError> {
        if self.filter.limit.is_some_and(|limit| self.counts.scanned >= limit as u64) {
            return Ok(false);
        }
        self.counts.scanned += 1;
        let body: Value = corvid_types::json::parse(&record.body)
            .map_err(|e| EngineError::Internal(format!("stored document {} is not JSON: {e}", record.id)))?;
        if !self.filter.matches(&record.id, &body, load)? {
            self.counts.rejected += 1;
            return Ok(true);
        }
        self.counts.accepted += 1;
        if self.counts.accepted > self.skip as u64 && self.records.len() < self.take {
            self.records.push(record);
        }
        Ok(true)
    }
}

/// Refuses what a document filter cannot evaluate, naming it and its position.
fn check(expr: &Expr, text: &str, declared: &[String]) -> Result<(), EngineError> {
    match expr {
        Expr::True(_) => Ok(()),
        Expr::And(a, b) | Expr::Or(a, b) => {
            check(a, text, declared)?;
            check(b, text, declared)
        }
        Expr::Not { expr, .. } => check(expr, text, declared),
        Expr::Compare { left, right, .. } => {
            check_operand(left, text)?;
            check_operand(right, text)
        }
        Expr::Between { operand, .. } | Expr::In { operand, .. } => check_operand(operand, text),
        Expr::Method(call) => {
            if declared.iter().any(|d| d == &call.name) {
                return Err(invalid(format!(
                    "calling a declared function in 'filter' is not supported yet (at position {}: '{}')",
                    call.span.start,
                    call.span.text(text)
                )));
            }
            if !FILTER_METHODS.iter().any(|m| call.is(m)) {
                return Err(invalid(format!(
                    "{}() cannot be used in 'filter' (at position {}: '{}'); 'filter' supports comparisons, in, between, \
                     and/or/not, {}(); methods that need an index belong in 'where'",
                    call.name,
                    call.span.start,
                    call.span.text(text),
                    FILTER_METHODS.join("(), ")
                )));
            }
            if call.is("intersect") {
                for arg in &call.args {
                    match arg {
                        Arg::Expr(e) => check(e, text, declared)?,
                        other => return Err(invalid(format!("intersect() takes conditions (at position {})", other.span().start))),
                    }
                }
            }
            Ok(())
        }
    }
}

fn check_operand(operand: &Operand, text: &str) -> Result<(), EngineError> {
    match operand {
        Operand::Call(call) if !(call.is("id") && call.args.is_empty()) => Err(invalid(format!(
            "{}() cannot be compared in 'filter' (at position {}: '{}'); fields, values and id() can",
            call.name,
            call.span.start,
            call.span.text(text)
        ))),
        _ => Ok(()),
    }
}

struct Context<'a> {
    filter: &'a DocumentFilter,
    id: &'a str,
    document: &'a Value,
    load: &'a mut dyn FnMut(&str) -> Result<Option<Value>, EngineError>,
    /// Documents loaded for this document, by load alias (None: the id was missing or not found).
    loaded: Vec<(String, Option<Value>)>,
}

impl Context<'_> {
    fn eval(&mut self, expr: &Expr) -> Result<bool, EngineError> {
        Ok(match expr {
            Expr::True(_) => true,
            Expr::And(a, b) => self.eval(a)? && self.eval(b)?,
            Expr::Or(a, b) => self.eval(a)? || self.eval(b)?,
            Expr::Not { expr, .. } => !self.eval(expr)?,
            Expr::Compare { left, op, right, .. } => {
                let (left, right) = (self.operand(left)?, self.operand(right)?);
                any_pair(left.as_ref(), right.as_ref(), |a, b| compare(a, *op, b))
            }
            Expr::Between { operand, low, high, .. } => {
                let (low, high) = (self.literal(&low.kind)?, self.literal(&high.kind)?);
                candidates(self.operand(operand)?.as_ref()).iter().any(|v| {
                    matches!(order(v, &low), Some(Ordering::Greater | Ordering::Equal))
                        && matches!(order(v, &high), Some(Ordering::Less | Ordering::Equal))
                })
            }
            Expr::In { operand, values, all, .. } => {
                let mut wanted = Vec::new();
                for value in values {
                    match self.literal(&value.kind)? {
                        Value::Array(items) => wanted.extend(items),
                        other => wanted.push(other),
                    }
                }
                let present = self.operand(operand)?;
                let present = candidates(present.as_ref());
                if *all {
                    wanted.iter().all(|w| present.iter().any(|p| equal(p, w)))
                } else {
                    present.iter().any(|p| wanted.iter().any(|w| equal(p, w)))
                }
            }
            Expr::Method(call) => self.method(call)?,
        })
    }

    fn method(&mut self, call: &Call) -> Result<bool, EngineError> {
        if call.is("intersect") {
            for arg in &call.args {
                if let Arg::Expr(e) = arg {
                    if !self.eval(e)? {
                        return Ok(false);
                    }
                }
            }
            return Ok(true);
        }
        let field = match call.args.first() {
            Some(Arg::Field(path)) => path,
            _ => return Err(invalid(format!("{}() needs a field as its first argument (at position {})", call.name, call.span.start))),
        };
        let value = self.path(field)?;
        if call.is("exists") {
            return Ok(value.is_some());
        }
        let affix = match call.args.get(1) {
            Some(Arg::Value(v)) => match self.literal(&v.kind)? {
                Value::String(s) => s.to_lowercase(),
                other => other.to_string().to_lowercase(),
            },
            _ => return Err(invalid(format!("{}() needs a field and a string (at position {})", call.name, call.span.start))),
        };
        let starts = call.is("startsWith");
        // RavenDB's startsWith/endsWith compare ignoring case.
        Ok(candidates(value.as_ref()).iter().any(|v| match v {
            Value::String(s) if starts => s.to_lowercase().starts_with(&affix),
            Value::String(s) => s.to_lowercase().ends_with(&affix),
            _ => false,
        }))
    }

    fn literal(&self, kind: &ValueKind) -> Result<Value, EngineError> {
        literal_value(kind, &self.filter.parameters)
    }

    /// An operand's value; None when it names a missing field.
    fn operand(&mut self, operand: &Operand) -> Result<Option<Value>, EngineError> {
        match operand {
            Operand::Value(v) => self.literal(&v.kind).map(Some),
            Operand::Field(path) => self.path(path),
            Operand::Call(_) => Ok(Some(Value::from(self.id))), // only id() passes the plan-time check
        }
    }

    fn root(&self, path: &FieldPath) -> Root {
        if let Some(rest) = self.filter.alias.as_deref().and_then(|a| path.strip_alias(a)) {
            return Root::Document(rest);
        }
        match self.filter.loads.iter().find(|(a, _)| first_name(path) == Some(a.as_str())) {
            Some((alias, _)) => Root::Loaded { alias: alias.clone(), rest: path.strip_alias(alias) },
            None => Root::Document(path.clone()),
        }
    }

    fn path(&mut self, path: &FieldPath) -> Result<Option<Value>, EngineError> {
        match self.root(path) {
            Root::Document(path) => Ok(lookup(self.document, &path.segments)),
            Root::Loaded { alias, rest } => Ok(match (self.loaded_document(&alias)?, rest) {
                (Some(doc), Some(rest)) => lookup(&doc, &rest.segments),
                (doc, _) => doc,
            }),
        }
    }

    fn loaded_document(&mut self, alias: &str) -> Result<Option<Value>, EngineError> {
        if let Some((_, doc)) = self.loaded.iter().find(|(a, _)| a == alias) {
            return Ok(doc.clone());
        }
        let id_path = self.filter.loads.iter().find(|(a, _)| a == alias).map(|(_, p)| p.clone()).unwrap_or_default();
        let doc = match super::projection::value_at(self.document, &id_path) {
            Value::String(id) => (self.load)(&id)?,
            _ => None,
        };
        self.loaded.push((alias.to_owned(), doc.clone()));
        Ok(doc)
    }
}

fn first_name(path: &FieldPath) -> Option<&str> {
    match path.segments.first() {
        Some(PathSegment::Field { name, .. }) => Some(name),
        _ => None,
    }
}

/// The value at a path: None when a field on the way is missing; `[]` collects every element's value
/// into an array (None when there is none).
fn lookup(value: &Value, segments: &[PathSegment]) -> Option<Value> {
    let Some((first, rest)) = segments.split_first() else { return Some(value.clone()) };
    match first {
        PathSegment::Field { name, .. } => lookup(value.get(name)?, rest),
        PathSegment::Index(i) => lookup(value.get(usize::try_from(*i).ok()?)?, rest),
        PathSegment::AllElements => {
            let items: Vec<Value> = value.as_array()?.iter().filter_map(|item| lookup(item, rest)).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
    }
}

/// The values a condition tests: every element of an array, else the value itself (a missing field is null,
/// as JavaScript's `undefined` compares with nothing but itself).
fn candidates(value: Option<&Value>) -> Vec<Value> {
    match value {
        Some(Value::Array(items)) => items.clone(),
        Some(v) => vec![v.clone()],
        None => vec![Value::Null],
    }
}

/// A comparison holds when it holds for any element of an array side.
fn any_pair(left: Option<&Value>, right: Option<&Value>, test: impl Fn(&Value, &Value) -> bool) -> bool {
    let (left, right) = (candidates(left), candidates(right));
    left.iter().any(|l| right.iter().any(|r| test(l, r)))
}

fn compare(a: &Value, op: CompareOp, b: &Value) -> bool {
    match op {
        CompareOp::Eq => equal(a, b),
        CompareOp::NotEq => !equal(a, b),
        CompareOp::Lt => order(a, b) == Some(Ordering::Less),
        CompareOp::Le => matches!(order(a, b), Some(Ordering::Less | Ordering::Equal)),
        CompareOp::Gt => order(a, b) == Some(Ordering::Greater),
        CompareOp::Ge => matches!(order(a, b), Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// JavaScript's `===`: numbers by value, strings exactly (with their case).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// JavaScript's relational order: numbers numerically, strings by code unit, a number against a numeric
/// string numerically; anything else does not compare.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.encode_utf16().cmp(y.encode_utf16())),
        (Value::Number(x), Value::String(y)) => x.as_f64()?.partial_cmp(&y.trim().parse::<f64>().ok()?),
        (Value::String(x), Value::Number(y)) => x.trim().parse::<f64>().ok()?.partial_cmp(&y.as_f64()?),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(clause: &str, parameters: Value) -> Result<DocumentFilter, EngineError> {
        let text = format!("from Employees as e load e.Manager as m filter {clause}");
        let query = corvid_rql::parse(&text).map_err(|e| invalid(e.to_string()))?;
        let parameters = parameters.as_object().cloned().unwrap_or_default();
        DocumentFilter::new(
            query.filter.expect("filter"),
            &text,
            Some("e".into()),
            vec![("m".into(), "Manager".into())],
            parameters,
            None,
            &["titled".into()],
        )
    }

    fn passes(clause: &str, parameters: Value, document: &Value) -> bool {
        let manager = json!({"Name": "Boss", "Age": 60});
        let mut load = |id: &str| Ok((id == "employees/9").then(|| manager.clone()));
        filter(clause, parameters).expect("plans").matches("employees/1", document, &mut load).expect("evaluates")
    }

    fn employee() -> Value {
        json!({"Name": "Ann", "Age": 34, "Address": {"Country": "USA"}, "Tags": ["a", "b"], "Manager": "employees/9",
               "Lines": [{"Product": "p1", "Qty": 2}, {"Product": "p2", "Qty": 5}]})
    }

    #[test]
    fn comparisons_follow_javascript() {
        let doc = employee();
        assert!(passes("Address.Country = 'USA' and Age > 30", json!({}), &doc));
        assert!(!passes("Address.Country = 'usa'", json!({}), &doc), "strict equality keeps the case");
        assert!(passes("e.Age >= $min and e.Age < $max", json!({"min": 34, "max": 35}), &doc));
        assert!(passes("Age = 34.0", json!({}), &doc));
        assert!(!passes("Age = '34'", json!({}), &doc));
        assert!(passes("Name != 'Bob' or Age < 0", json!({}), &doc));
        assert!(passes("true and not Age between 40 and 50", json!({}), &doc));
        assert!(passes("Age between $lo and $hi", json!({"lo": 30, "hi": 34}), &doc));
        assert!(!passes("Missing > 3", json!({}), &doc));
    }

    #[test]
    fn in_methods_arrays_and_loads() {
        let doc = employee();
        assert!(passes("Name in ($names)", json!({"names": ["Bob", "Ann"]}), &doc));
        assert!(passes("Tags all in ('a', 'b')", json!({}), &doc));
        assert!(!passes("Tags all in ('a', 'c')", json!({}), &doc));
        assert!(passes("Lines[].Product = 'p2' and Lines[].Qty > 4", json!({}), &doc));
        assert!(passes("startsWith(Name, 'an') and endsWith(Address.Country, 'sa')", json!({}), &doc));
        assert!(passes("exists(Address) and not exists(Nope)", json!({}), &doc));
        assert!(passes("intersect(Age > 1, Name = 'Ann')", json!({}), &doc));
        assert!(passes("m.Name = 'Boss' and m.Age = 60", json!({}), &doc));
        assert!(passes("id() = 'employees/1'", json!({}), &doc));
    }

    #[test]
    fn index_only_methods_and_declared_functions_are_refused() {
        for clause in ["search(Name, 'a')", "boost(Name = 'a', 2)", "regex(Name, 'a')", "count() > 1", "titled(e)"] {
            let err = filter(clause, json!({})).err().unwrap_or_else(|| panic!("{clause} was accepted"));
            assert!(matches!(err, EngineError::InvalidQuery { .. }), "{clause}: {err}");
        }
    }
}
