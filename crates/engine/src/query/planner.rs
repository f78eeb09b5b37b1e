//! RQL -> plan: a collection scan (no filter and no sort, or only `id()` conditions) or a search on an
//! automatic index that covers every field the query filters or sorts on (created or extended on demand).

use std::sync::Arc;

use corvid_index::{Filter, SortKey, SortKind, Value as IndexValue};
use corvid_rql::{
    Arg, Call, CompareOp, Expr, FieldPath, FromSource, IncludeItem, Operand, OrderingType, Projection, Query, SelectExpr, ValueKind,
};
use serde_json::Value as Json;

use super::execute::QueryRequest;
use super::projection::ProjectedField;
use super::reduce::{aggregation_of, OutputField, OutputSource, ReducePlan};
use crate::indexing::{Aggregation, AutoIndexField, IndexHandle, ALL_DOCS};
use crate::{Database, EngineError};

pub(crate) enum Source {
    Collection { name: String },
    AllDocs { name: String },
    Index { handle: Arc<IndexHandle> },
}

/// The projected path that stands for the document id (`select id() as Id`).
pub(crate) const ID_PATH: &str = "@metadata.@id";

pub(crate) enum ProjectionPlan {
    Fields(Vec<ProjectedField>),
    /// A JavaScript object literal: `functions` run first (declared functions), then `function` (an
    /// expression evaluating to a function of the document) is called per result.
    Js {
        functions: Vec<String>,
        function: String,
    },
}

pub(crate) struct Plan {
    pub source: Source,
    pub filter: Filter,
    pub sort: Vec<SortKey>,
    pub skip: usize,
    pub take: usize,
    pub projection: Option<ProjectionPlan>,
    pub includes: Vec<String>,
    /// For collection queries restricted by `id() = ...` / `id() in (...)`.
    pub ids: Option<Vec<String>>,
    /// The query created (or extended into) a new automatic index: like RavenDB, it waits for it.
    pub created_index: bool,
    /// For `group by` queries: how to turn reduce results into result rows.
    pub reduce: Option<ReducePlan>,
    /// `load <path> as <alias>`: related documents bound to aliases for the projection.
    pub loads: Vec<LoadPlan>,
    /// `select distinct`: repeated projections are returned once.
    pub distinct: bool,
    /// `order by random()`: results shuffled with this seed.
    pub random: Option<u64>,
    /// `include counters(...)`: the counter names to include with each result (empty: all of them).
    pub counter_includes: Option<Vec<String>>,
}

impl Plan {
    /// Distinct and random results need every match before paging.
    pub fn needs_all_matches(&self) -> bool {
        self.distinct || self.random.is_some()
    }
}

pub(crate) struct LoadPlan {
    /// Path in the result document holding the id to load.
    pub path: String,
    pub alias: String,
}

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidQuery { message: message.into() }
}

fn unsupported(what: &str, query: &str, span: corvid_rql::Span) -> EngineError {
    invalid(format!("{what} is not supported yet (at position {}: '{}')", span.start, span.text(query)))
}

/// Translates the parsed query with its parameters; remembers the fields an index needs.
struct Translator<'a> {
    text: &'a str,
    parameters: &'a serde_json::Map<String, Json>,
    alias: Option<String>,
    needed: Vec<AutoIndexField>,
}

impl Translator<'_> {
    fn path(&self, path: &FieldPath) -> String {
        let stripped = self.alias.as_deref().and_then(|a| path.strip_alias(a));
        stripped.as_ref().unwrap_or(path).dotted()
    }

    fn need(&mut self, path: &str, search: bool, exact: bool) {
        self.needed.push(AutoIndexField { path: path.to_owned(), search, exact });
    }

    fn parameter(&self, name: &str, span: corvid_rql::Span) -> Result<&Json, EngineError> {
        self.parameters.get(name).ok_or_else(|| invalid(format!("Query parameter '{name}' was not provided (at position {})", span.start)))
    }

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
    fn value(&self, value: &corvid_rql::Value) -> Result<IndexValue, EngineError> {
        Ok(match &value.kind {
            ValueKind::String(s) => IndexValue::String(s.clone()),
            ValueKind::Long(n) => IndexValue::Long(*n),
            ValueKind::Double(d) => IndexValue::Double(*d),
            ValueKind::Bool(b) => IndexValue::Bool(*b),
            ValueKind::Null => IndexValue::Null,
            ValueKind::Parameter(name) => Self::json_value(self.parameter(name, value.span)?)?,
        })
    }

    fn values(&self, values: &[corvid_rql::Value]) -> Result<Vec<IndexValue>, EngineError> {
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

    fn string_arg(&self, arg: Option<&Arg>, what: &str, call: &Call) -> Result<String, EngineError> {
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

    fn field_arg(&self, arg: Option<&Arg>, call: &Call) -> Result<String, EngineError> {
        match arg.and_then(Arg::as_field) {
            Some(path) => Ok(self.path(&path)),
            None => Err(invalid(format!("{}() needs a field as its first argument (at position {})", call.name, call.span.start))),
        }
    }

    fn operand_field(&self, operand: &Operand) -> Option<String> {
        match operand {
            Operand::Field(path) => Some(self.path(path)),
            _ => None,
        }
    }

    fn expr(&mut self, expr: &Expr, exact: bool) -> Result<Filter, EngineError> {
        Ok(match expr {
            Expr::True(_) => Filter::All,
            Expr::And(a, b) => Filter::And(vec![self.expr(a, exact)?, self.expr(b, exact)?]),
            Expr::Or(a, b) => Filter::Or(vec![self.expr(a, exact)?, self.expr(b, exact)?]),
            Expr::Not { expr, .. } => Filter::Not(Box::new(self.expr(expr, exact)?)),
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
            Expr::Method(call) => self.method(call, exact)?,
        })
    }

    fn method(&mut self, call: &Call, exact: bool) -> Result<Filter, EngineError> {
        let name = call.name.to_ascii_lowercase();
        Ok(match name.as_str() {
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
            "exact" => match call.args.first() {
                Some(Arg::Expr(inner)) => self.expr(inner, true)?,
                Some(Arg::Call(inner)) => self.method(inner, true)?,
                _ => return Err(invalid(format!("exact() needs a condition (at position {})", call.span.start))),
            },
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
                Filter::Boost(Box::new(inner), factor)
            }
            _ => return Err(unsupported(&format!("The method {}()", call.name), self.text, call.span)),
        })
    }
}

fn flip(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
        other => other,
    }
}

/// `id() = x`, `id() in (...)`, or several of them joined by `or`: the ids, else None.
fn id_only(expr: &Expr, t: &Translator<'_>) -> Result<Option<Vec<String>>, EngineError> {
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

fn paging(value: Option<&corvid_rql::Value>, t: &Translator<'_>, what: &str) -> Result<Option<usize>, EngineError> {
    let Some(value) = value else { return Ok(None) };
    match t.value(value)? {
        IndexValue::Long(n) if n >= 0 => Ok(Some(n as usize)),
        _ => Err(invalid(format!("'{what}' must be a non-negative integer (at position {})", value.span.start))),
    }
}

fn reject_unsupported(query: &Query, text: &str) -> Result<(), EngineError> {
    let js_projection = matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Js(_)));
    if let Some(f) = query.declared_functions.first().filter(|_| !js_projection) {
        return Err(unsupported("'declare function' without a JavaScript projection", text, f.span));
    }
    if let Some(f) = &query.filter {
        return Err(unsupported("'filter'", text, f.span()));
    }
    if let Some(u) = &query.update {
        return Err(unsupported("'update' in a query (use the patch-by-query endpoint)", text, u.span));
    }
    Ok(())
}

pub(crate) fn plan(db: &Database, request: &QueryRequest) -> Result<Plan, EngineError> {
    let text = request.query.as_str();
    let query = corvid_rql::parse(text).map_err(|e| invalid(e.to_string()))?;
    reject_unsupported(&query, text)?;
    let mut t =
        Translator { text, parameters: &request.parameters, alias: query.from.alias.as_ref().map(|a| a.name.clone()), needed: Vec::new() };

    let skip = paging(query.offset.as_ref(), &t, "offset")?.or(request.start).unwrap_or(0);
    let take = paging(query.limit.as_ref(), &t, "limit")?.or(request.page_size).unwrap_or(usize::MAX);

    if !query.group_by.is_empty() {
        let collection = match &query.from.source {
            FromSource::Collection { name, .. } => name.clone(),
            FromSource::AllDocs { .. } => ALL_DOCS.to_owned(),
            FromSource::Index { span, .. } => return Err(unsupported("'group by' on a named index", text, *span)),
        };
        return plan_group_by(db, request, &query, &collection, skip, take);
    }

    let distinct = query.select.as_ref().is_some_and(|s| s.distinct);
    let random = random_seed(&query, &t)?;
    let loads: Vec<LoadPlan> = query.load.iter().map(|l| LoadPlan { path: t.path(&l.path), alias: l.alias.name.clone() }).collect();
    if !loads.is_empty() && !matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Fields(_) | Projection::Js(_))) {
        return Err(invalid("'load' needs a 'select' that uses the loaded documents"));
    }

    let projection = match &query.select {
        None => None,
        Some(select) if select.distinct && !matches!(select.projection, Projection::Fields(_) | Projection::Js(_)) => {
            return Err(unsupported("'select distinct' without fields", text, select.span))
        }
        Some(select) => match &select.projection {
            Projection::All => None,
            Projection::Js(js) => {
                let mut params = vec![query.from.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| "__doc".to_owned())];
                params.extend(query.load.iter().map(|l| l.alias.name.clone()));
                let alias = params.join(", ");
                let functions = query
                    .declared_functions
                    .iter()
                    .map(|f| {
                        let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
                        format!("function {}({}) {}", f.name.name, params.join(", "), f.body.source)
                    })
                    .collect();
                Some(ProjectionPlan::Js { functions, function: format!("(function({alias}) {{ return ({}); }})", js.source) })
            }
            Projection::Fields(fields) => {
                let mut out = Vec::new();
                for field in fields {
                    match &field.expr {
                        SelectExpr::Field(path) => {
                            let path = t.path(path);
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| path.clone());
                            out.push(ProjectedField { path, alias });
                        }
                        SelectExpr::Call(call) if call.is("id") && call.args.is_empty() => {
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| "Id".to_owned());
                            out.push(ProjectedField { path: ID_PATH.to_owned(), alias });
                        }
                        _ => return Err(unsupported("This projection", text, field.span)),
                    }
                }
                Some(ProjectionPlan::Fields(out))
            }
        },
    };

    let mut includes = Vec::new();
    let mut counter_includes: Option<Vec<String>> = None;
    for item in &query.include {
        match item {
            IncludeItem::Path(path) => includes.push(t.path(path)),
            IncludeItem::Call(call) if call.is("counters") => {
                let mut names = Vec::new();
                for arg in &call.args {
                    match arg {
                        Arg::Value(corvid_rql::Value { kind: corvid_rql::ValueKind::String(name), .. }) => names.push(name.clone()),
                        // `counters($p0)`: one name or a list of names.
                        Arg::Value(corvid_rql::Value { kind: corvid_rql::ValueKind::Parameter(p), span }) => {
                            match request.parameters.get(p) {
                                Some(Json::String(name)) => names.push(name.clone()),
                                Some(Json::Array(list)) if list.iter().all(Json::is_string) => {
                                    names.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)))
                                }
                                _ => return Err(unsupported("include counters() with this parameter", text, *span)),
                            }
                        }
                        _ => return Err(unsupported("include counters() of a related document", text, call.span)),
                    }
                }
                // No names means all counters, and all wins over a list.
                counter_includes = match (counter_includes, names.is_empty()) {
                    (Some(list), _) if list.is_empty() => Some(list),
                    (_, true) => Some(Vec::new()),
                    (Some(mut list), false) => {
                        list.extend(names);
                        Some(list)
                    }
                    (None, false) => Some(names),
                };
            }
            IncludeItem::Call(call) => return Err(unsupported(&format!("include {}()", call.name), text, call.span)),
        }
    }

    // Where the results come from: a named index, a collection scan, or an automatic index.
    let (source, filter, sort, ids, created_index) = match &query.from.source {
        FromSource::Index { name, .. } => {
            let handle = db.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.clone()))?;
            let filter = where_filter(&query, &mut t)?;
            let sort = order_by(&query, &mut t)?;
            (Source::Index { handle }, filter, sort, None, false)
        }
        FromSource::Collection { .. } | FromSource::AllDocs { .. } => {
            let (collection, all_docs) = match &query.from.source {
                FromSource::Collection { name, .. } => (name.clone(), false),
                _ => (ALL_DOCS.to_owned(), true),
            };
            let ids = match &query.where_clause {
                Some(w) => id_only(w, &t)?,
                None => None,
            };
            let filterless = query.where_clause.as_ref().is_none_or(|w| matches!(w, Expr::True(_)) || ids.is_some());
            if filterless && query.order_by.is_empty() {
                let source = if all_docs { Source::AllDocs { name: "AllDocs".into() } } else { Source::Collection { name: collection } };
                (source, Filter::All, Vec::new(), ids, false)
            } else {
                let filter = where_filter(&query, &mut t)?;
                let sort = order_by(&query, &mut t)?;
                let (handle, created_index) = db.indexes.find_or_create(&collection, &t.needed)?;
                (Source::Index { handle }, filter, sort, None, created_index)
            }
        }
    };
    Ok(Plan {
        source,
        filter,
        sort,
        skip,
        take,
        projection,
        includes,
        ids,
        created_index,
        reduce: None,
        loads,
        distinct,
        random,
        counter_includes,
    })
}

fn where_filter(query: &Query, t: &mut Translator<'_>) -> Result<Filter, EngineError> {
    match &query.where_clause {
        Some(w) => t.expr(w, false),
        None => Ok(Filter::All),
    }
}

fn order_by(query: &Query, t: &mut Translator<'_>) -> Result<Vec<SortKey>, EngineError> {
    let mut sort = Vec::new();
    for field in &query.order_by {
        match &field.expr {
            Operand::Field(path) => {
                let path = t.path(path);
                t.need(&path, false, false);
                let kind = match field.ordering {
                    None | Some(OrderingType::String) => SortKind::String,
                    Some(OrderingType::Long) => SortKind::Long,
                    Some(OrderingType::Double) => SortKind::Double,
                    Some(OrderingType::AlphaNumeric) => SortKind::AlphaNumeric,
                };
                sort.push(SortKey { field: path, kind, descending: field.descending });
            }
            Operand::Call(call) if call.is("score") => {
                sort.push(SortKey { field: String::new(), kind: SortKind::Score, descending: field.descending })
            }
            Operand::Call(call) if call.is("random") => {} // handled by random_seed()
            Operand::Call(call) => return Err(unsupported(&format!("order by {}()", call.name), t.text, call.span)),
            Operand::Value(v) => return Err(unsupported("order by a constant", t.text, v.span)),
        }
    }
    Ok(sort)
}

/// The seed of `order by random()` / `random('seed')`, if the query orders randomly.
fn random_seed(query: &Query, t: &Translator<'_>) -> Result<Option<u64>, EngineError> {
    for field in &query.order_by {
        if let Operand::Call(call) = &field.expr {
            if call.is("random") {
                let seed = match call.args.first() {
                    Some(Arg::Value(v)) => format!("{:?}", t.value(v)?),
                    Some(other) => other.to_string(),
                    None => corvid_types::now_nanos().to_string(),
                };
                return Ok(Some(crate::reads::VersionHasher::of(&seed) | 1));
            }
        }
    }
    Ok(None)
}

/// `from Coll group by a, b select a, count() as n, sum(x) [where ...] [order by ...]`: a map-reduce index.
fn plan_group_by(
    db: &Database,
    request: &QueryRequest,
    query: &Query,
    collection: &str,
    skip: usize,
    take: usize,
) -> Result<Plan, EngineError> {
    let text = request.query.as_str();
    let alias = query.from.alias.as_ref().map(|a| a.name.clone());
    let strip = |path: &FieldPath| alias.as_deref().and_then(|a| path.strip_alias(a)).unwrap_or_else(|| path.clone()).dotted();
    let mut group_by = Vec::new();
    for item in &query.group_by {
        match &item.expr {
            Operand::Field(path) => group_by.push(strip(path)),
            _ => return Err(unsupported("This group by key", text, item.span)),
        }
    }
    // Selected outputs, in order; aggregations named in where/order by are needed too.
    let mut selected: Vec<(String, Result<String, Aggregation>)> = Vec::new();
    match query.select.as_ref().map(|s| &s.projection) {
        None | Some(Projection::All) => {
            for g in &group_by {
                selected.push((g.clone(), Ok(g.clone())));
            }
            selected.push(("Count".into(), Err(Aggregation::Count)));
        }
        Some(Projection::Js(js)) => return Err(unsupported("A JavaScript projection", text, js.span)),
        Some(Projection::Fields(fields)) => {
            for field in fields {
                let alias = field.alias.as_ref().map(|a| a.name.clone());
                match &field.expr {
                    SelectExpr::Field(path) => {
                        let path = strip(path);
                        selected.push((alias.unwrap_or_else(|| path.clone()), Ok(path)));
                    }
                    SelectExpr::Call(call) if call.is("key") && call.args.is_empty() => {
                        for g in &group_by {
                            selected.push((alias.clone().unwrap_or_else(|| g.clone()), Ok(g.clone())));
                        }
                    }
                    SelectExpr::Call(call) => {
                        let aggregation = aggregation_of(call)?;
                        let default = match &aggregation {
                            Aggregation::Count => "Count".to_owned(),
                            Aggregation::Sum(path) => path.clone(),
                        };
                        selected.push((alias.unwrap_or(default), Err(aggregation)));
                    }
                    _ => return Err(unsupported("This projection", text, field.span)),
                }
            }
        }
    }
    let mut aggregations: Vec<Aggregation> = selected.iter().filter_map(|(_, s)| s.clone().err()).collect();
    let mut note_calls = |operand: &Operand| {
        if let Operand::Call(call) = operand {
            if let Ok(a) = aggregation_of(call) {
                aggregations.push(a);
            }
        }
    };
    for order in &query.order_by {
        note_calls(&order.expr);
    }
    if let Some(w) = &query.where_clause {
        visit_operands(w, &mut note_calls);
    }
    let (handle, created_index) = db.indexes.find_or_create_reduce(collection, &group_by, &aggregations)?;
    let definition = &handle.definition;
    let mut outputs = Vec::new();
    for (name, source) in selected {
        let (source, integer) = match source {
            Ok(path) => {
                let position = definition.group_by.iter().position(|g| *g == path).ok_or_else(|| {
                    invalid(format!("'{path}' is selected but is not a group by field; select group by fields or aggregations"))
                })?;
                (OutputSource::Group(position), false)
            }
            Err(aggregation) => {
                let position = definition
                    .value_position(&aggregation)
                    .ok_or_else(|| EngineError::Internal("aggregation missing from index".into()))?;
                (OutputSource::Value(position), position == 0)
            }
        };
        outputs.push(OutputField { name, source, integer });
    }
    let sort = query.order_by.iter().map(|o| (o.expr.clone(), o.ordering, o.descending)).collect();
    let reduce =
        ReducePlan { handle: handle.clone(), outputs, filter: query.where_clause.clone(), sort, parameters: request.parameters.clone() };
    Ok(Plan {
        source: Source::Index { handle },
        filter: Filter::All,
        sort: Vec::new(),
        skip,
        take,
        projection: None,
        includes: Vec::new(),
        ids: None,
        created_index,
        reduce: Some(reduce),
        loads: Vec::new(),
        distinct: false,
        random: None,
        counter_includes: None,
    })
}

fn visit_operands(expr: &Expr, visit: &mut impl FnMut(&Operand)) {
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            visit_operands(a, visit);
            visit_operands(b, visit);
        }
        Expr::Not { expr, .. } => visit_operands(expr, visit),
        Expr::Compare { left, right, .. } => {
            visit(left);
            visit(right);
        }
        Expr::Between { operand, .. } | Expr::In { operand, .. } => visit(operand),
        Expr::True(_) | Expr::Method(_) => {}
    }
}
