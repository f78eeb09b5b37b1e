//! RQL -> plan: a collection scan (no filter and no sort, or only `id()` conditions) or a search on an
//! automatic index that covers every field the query filters or sorts on (created or extended on demand).

use std::sync::Arc;

use corvid_index::{Filter, Shape, SortKey, SortKind, SpatialRelation, Value as IndexValue};
use corvid_rql::{
    Arg, Call, CompareOp, Expr, FieldPath, FromSource, IncludeItem, Operand, OrderingType, Projection, Query, SelectExpr, ValueKind,
};
use serde_json::Value as Json;

use super::document_filter::DocumentFilter;
use super::execute::QueryRequest;
use super::facets::{AggregationOp, FacetAggregation, FacetKind, FacetOptions, FacetPlan};
use super::highlight::HighlightPlan;
use super::projection::{counter_path, ProjectedField};
use super::reduce::{aggregation_of, OutputField, OutputSource, ReducePlan};
use super::suggestions::{SuggestOptions, SuggestPlan};
use crate::indexing::{
    array_content_path, group_by_array_content, Aggregation, AutoIndexField, IndexExplanation, IndexHandle, QueryExplanation, ALL_DOCS,
};
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
    /// `select facet(...)`: the facets to compute instead of results.
    pub facets: Option<Vec<FacetPlan>>,
    /// `select suggest(...)`: suggestions instead of results.
    pub suggestions: Option<Vec<SuggestPlan>>,
    /// `include highlight(...)`.
    pub highlights: Vec<HighlightPlan>,
    /// `include explanations()`.
    pub explanations: bool,
    /// `include timings()`.
    pub timings: bool,
    /// `include counters(...)`: the counter names to include with each result (empty: all of them).
    pub counter_includes: Option<Vec<String>>,
    /// `include counters(path, ...)`: counters of the documents each result references at `path` (names
    /// empty: all of them).
    pub related_counter_includes: Vec<(String, Vec<String>)>,
    /// `filter ...`: evaluated on each selected document before paging.
    pub document_filter: Option<DocumentFilter>,
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
    /// For `moreLikeThis`: the database (source document) and the named index (term statistics).
    more_like_this: Option<(&'a Database, Arc<IndexHandle>)>,
}

impl<'a> Translator<'a> {
    fn new(request: &'a QueryRequest, query: &Query) -> Translator<'a> {
        Translator {
            text: request.query.as_str(),
            parameters: &request.parameters,
            alias: query.from.alias.as_ref().map(|a| a.name.clone()),
            needed: Vec::new(),
            more_like_this: None,
        }
    }
}

impl Translator<'_> {
    fn path(&self, path: &FieldPath) -> String {
        let stripped = self.alias.as_deref().and_then(|a| path.strip_alias(a));
        stripped.as_ref().unwrap_or(path).dotted()
    }

    /// The counter named by a projected `counter('Likes')` / `counter(u, 'Likes')` (or `counterRaw`).
    fn counter_name(&self, call: &Call) -> Result<String, EngineError> {
        let usage = || {
            invalid(format!(
                "{}() in a projection takes a counter name, optionally after the alias of the queried document (at position {}: '{}')",
                call.name,
                call.span.start,
                call.span.text(self.text)
            ))
        };
        let name = match call.args.as_slice() {
            [name] => name,
            [Arg::Field(document), name] if self.alias.as_deref() == Some(document.dotted().as_str()) => name,
            _ => return Err(usage()),
        };
        match name {
            Arg::Value(corvid_rql::Value { kind: ValueKind::String(name), .. }) => Ok(name.clone()),
            Arg::Value(corvid_rql::Value { kind: ValueKind::Parameter(p), span }) => match self.parameter(p, *span)? {
                Json::String(name) => Ok(name.clone()),
                _ => Err(usage()),
            },
            _ => Err(usage()),
        }
    }

    fn need(&mut self, path: &str, search: bool, exact: bool) {
        self.needed.push(AutoIndexField { search, exact, ..AutoIndexField::plain(path) });
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
                Filter::And(parts)
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
            "morelikethis" => self.more_like_this(call)?,
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
        })
    }

    /// `moreLikeThis(id() = 'x'[, $options])` or `moreLikeThis($document[, $options])`: the most telling words
    /// of the source document (term frequency x inverse document frequency in the index), any of which a
    /// result must contain; the source document itself is left out.
    fn more_like_this(&mut self, call: &Call) -> Result<Filter, EngineError> {
        let Some((db, handle)) = self.more_like_this.clone() else {
            return Err(unsupported("moreLikeThis() outside a query on a named index ('from index ...')", self.text, call.span));
        };
        let crate::indexing::IndexBackend::Search(index) = &handle.index else {
            return Err(invalid("moreLikeThis() needs a map index"));
        };
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
        let (source_key, document) = match call.args.first() {
            Some(Arg::Expr(Expr::Compare { left: Operand::Call(id), op: CompareOp::Eq, right: Operand::Value(v), .. })) if id.is("id") => {
                let IndexValue::String(doc_id) = self.value(v)? else {
                    return Err(invalid("moreLikeThis(id() = ...) needs a document id"));
                };
                let key = corvid_types::id_key(&doc_id);
                let record = db.store.read()?.document(&key)?;
                let body = match record {
                    Some(r) => corvid_types::json::parse(&r.body).map_err(|e| EngineError::Internal(e.to_string()))?,
                    None => Json::Null,
                };
                (Some(key), body)
            }
            Some(Arg::Value(v)) => match &v.kind {
                ValueKind::Parameter(name) => match self.parameter(name, v.span)? {
                    Json::String(text) => {
                        (None, serde_json::from_str(text).map_err(|e| invalid(format!("moreLikeThis() document is not JSON: {e}")))?)
                    }
                    other => (None, other.clone()),
                },
                ValueKind::String(text) => {
                    (None, serde_json::from_str(text).map_err(|e| invalid(format!("moreLikeThis() document is not JSON: {e}")))?)
                }
                _ => return Err(invalid("moreLikeThis() needs id() = 'doc' or a JSON document")),
            },
            _ => return Err(invalid(format!("moreLikeThis() needs id() = 'doc' or a JSON document (at position {})", call.span.start))),
        };
        let number = |key: &str, default: f64| -> f64 {
            options
                .as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
                .and_then(|(_, v)| v.as_f64())
                .unwrap_or(default)
        };
        let min_tf = number("MinimumTermFrequency", 2.0);
        let min_df = number("MinimumDocumentFrequency", 5.0);
        let max_df = number("MaximumDocumentFrequency", f64::MAX);
        let min_len = number("MinimumWordLength", 0.0) as usize;
        let max_len = number("MaximumWordLength", 0.0) as usize;
        let max_terms = number("MaximumQueryTerms", 25.0) as usize;
        let boost = options.get("Boost").and_then(Json::as_bool).unwrap_or(false);
        let boost_factor = number("BoostFactor", 1.0) as f32;
        let fields: Vec<String> = match options.get("Fields").and_then(Json::as_array) {
            Some(list) => list.iter().filter_map(Json::as_str).map(str::to_owned).collect(),
            None => index.field_paths(),
        };
        let total = index.entries_count() as f64;
        let mut scored: Vec<(f64, String, String)> = Vec::new();
        for field in &fields {
            let mut frequencies: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for text in super::highlight::texts(&super::projection::value_at(&document, field)) {
                for term in index.analyze(field, text).map_err(|e| invalid(e.to_string()))? {
                    let len = term.chars().count();
                    if len < min_len || (max_len > 0 && len > max_len) {
                        continue;
                    }
                    *frequencies.entry(term).or_default() += 1;
                }
            }
            for (term, tf) in frequencies {
                if (tf as f64) < min_tf {
                    continue;
                }
                let df = index.doc_freq(field, &term).map_err(|e| invalid(e.to_string()))? as f64;
                if df < min_df || df > max_df || df == 0.0 {
                    continue;
                }
                let idf = (total / (df + 1.0)).ln() + 1.0;
                scored.push((tf as f64 * idf, field.clone(), term));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
        scored.truncate(max_terms);
        let top = scored.first().map(|s| s.0).unwrap_or(1.0);
        let mut by_field: Vec<(String, Vec<(String, f32)>)> = Vec::new();
        for (score, field, term) in scored {
            let weight = if boost { (score / top) as f32 * boost_factor } else { 1.0 };
            match by_field.iter_mut().find(|(f, _)| *f == field) {
                Some((_, terms)) => terms.push((term, weight)),
                None => by_field.push((field, vec![(term, weight)])),
            }
        }
        let any = Filter::Or(by_field.into_iter().map(|(field, terms)| Filter::AnyTerm { field, terms }).collect());
        Ok(match source_key {
            Some(key) => Filter::And(vec![any, Filter::Not(Box::new(Filter::Key(key)))]),
            None => any,
        })
    }

    /// The spatial field of `spatial.within(field, …)`: a field name (static indexes),
    /// `spatial.point(LatPath, LngPath)` or `spatial.wkt(WktPath)` (automatic indexes).
    fn spatial_field(&mut self, arg: Option<&Arg>, call: &Call) -> Result<String, EngineError> {
        let path = match arg {
            Some(Arg::Call(point)) if point.is("spatial.point") => {
                let (Some(lat), Some(lng)) = (point.args.first().and_then(Arg::as_field), point.args.get(1).and_then(Arg::as_field)) else {
                    return Err(invalid(format!("spatial.point() needs two field paths (at position {})", point.span.start)));
                };
                format!("spatial.point({},{})", self.path(&lat), self.path(&lng))
            }
            // A document field holding WKT (the client's `WktField`).
            Some(Arg::Call(wkt)) if wkt.is("spatial.wkt") => {
                let Some(path) = wkt.args.first().and_then(Arg::as_field) else {
                    return Err(invalid(format!("spatial.wkt() needs a field path here (at position {})", wkt.span.start)));
                };
                format!("spatial.wkt({})", self.path(&path))
            }
            Some(arg) => match arg.as_field() {
                Some(path) => self.path(&path),
                None => return Err(unsupported("This spatial field", self.text, arg.span())),
            },
            None => return Err(invalid(format!("{}() needs a spatial field (at position {})", call.name, call.span.start))),
        };
        self.needed.push(AutoIndexField { spatial: true, ..AutoIndexField::plain(&path) });
        Ok(path)
    }

    fn number_arg(&self, arg: Option<&Arg>, what: &str, call: &Call) -> Result<f64, EngineError> {
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

    /// `spatial.circle(radius, lat, lng[, 'miles'|'kilometers'])` or `spatial.wkt('POLYGON((…))')`.
    fn shape(&self, arg: Option<&Arg>, call: &Call) -> Result<Shape, EngineError> {
        let Some(Arg::Call(shape)) = arg else {
            return Err(invalid(format!(
                "{}() needs a shape: spatial.circle(...) or spatial.wkt(...) (at position {})",
                call.name, call.span.start
            )));
        };
        if shape.is("spatial.circle") {
            let radius = self.number_arg(shape.args.first(), "a radius", shape)?;
            let lat = self.number_arg(shape.args.get(1), "a latitude", shape)?;
            let lng = self.number_arg(shape.args.get(2), "a longitude", shape)?;
            let units = match shape.args.get(3) {
                None => "kilometers".to_owned(),
                Some(arg) => self.string_arg(Some(arg), "units ('kilometers' or 'miles')", shape)?.to_ascii_lowercase(),
            };
            let radius_km = match units.as_str() {
                "kilometers" | "km" => radius,
                "miles" | "mi" => radius * 1.609_344,
                other => return Err(invalid(format!("unknown distance units '{other}' (use 'kilometers' or 'miles')"))),
            };
            return Ok(Shape::Circle { lat, lng, radius_km });
        }
        if shape.is("spatial.wkt") {
            let text = self.string_arg(shape.args.first(), "a WKT shape", shape)?;
            return corvid_index::parse_wkt(&text).map_err(invalid);
        }
        Err(unsupported(&format!("The shape {}()", shape.name), self.text, shape.span))
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

/// `offset`/`limit` from the query. A parameter that is null or not provided means "not given", as in
/// RavenDB: the Node client sends `limit $p0, $p1` with an undefined offset (dropped from its JSON).
fn paging(value: Option<&corvid_rql::Value>, t: &Translator<'_>, what: &str) -> Result<Option<usize>, EngineError> {
    let Some(value) = value else { return Ok(None) };
    if let ValueKind::Parameter(name) = &value.kind {
        if matches!(t.parameters.get(name.as_str()), None | Some(Json::Null)) {
            return Ok(None);
        }
    }
    match t.value(value)? {
        IndexValue::Null => Ok(None),
        IndexValue::Long(n) if n >= 0 => Ok(Some(n as usize)),
        _ => Err(invalid(format!("'{what}' must be a non-negative integer (at position {})", value.span.start))),
    }
}

fn reject_unsupported(query: &Query, text: &str, for_operation: bool) -> Result<(), EngineError> {
    if for_operation {
        // Patch and delete by query act on whole documents: no projections, paging of results or groups.
        if let Some(select) = &query.select {
            return Err(unsupported("'select' in a patch or delete by query", text, select.span));
        }
        if let Some(field) = query.group_by.first() {
            return Err(unsupported("'group by' in a patch or delete by query", text, field.span));
        }
        if let Some(f) = &query.filter {
            return Err(unsupported("'filter'", text, f.span()));
        }
        return Ok(());
    }
    let js_projection = matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Js(_)));
    if let Some(f) = query.declared_functions.first().filter(|_| !js_projection) {
        return Err(unsupported("'declare function' without a JavaScript projection", text, f.span));
    }
    if let (Some(f), Some(_)) = (&query.filter, query.group_by.first()) {
        return Err(invalid(format!(
            "'filter' cannot be used in a group by query; filter the groups with 'where' (at position {}: '{}')",
            f.span().start,
            f.span().text(text)
        )));
    }
    if let (None, Some(limit)) = (&query.filter, &query.filter_limit) {
        return Err(invalid(format!("'filter_limit' needs a 'filter' clause (at position {})", limit.span.start)));
    }
    if let Some(u) = &query.update {
        return Err(unsupported("'update' in a query (use the patch-by-query endpoint)", text, u.span));
    }
    Ok(())
}

pub(crate) fn plan(db: &Database, request: &QueryRequest) -> Result<Plan, EngineError> {
    let text = request.query.as_str();
    let query = corvid_rql::parse(text).map_err(|e| invalid(e.to_string()))?;
    reject_unsupported(&query, text, request.for_operation)?;
    let mut t = Translator::new(request, &query);

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
    let uses_loads =
        query.filter.is_some() || matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Fields(_) | Projection::Js(_)));
    if !loads.is_empty() && !uses_loads {
        return Err(invalid("'load' needs a 'select' or a 'filter' that uses the loaded documents"));
    }

    let facets = match &query.select {
        Some(select) => plan_facets(db, &select.projection, &mut t)?,
        None => None,
    };
    let suggestions = match &query.select {
        Some(select) => plan_suggestions(&select.projection, &mut t)?,
        None => None,
    };
    let document_filter = plan_document_filter(&query, &t, &loads, facets.is_some() || suggestions.is_some())?;
    let projection = match &query.select {
        _ if facets.is_some() || suggestions.is_some() => None,
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
                        SelectExpr::Call(call) if call.is("counter") || call.is("counterRaw") => {
                            let name = t.counter_name(call)?;
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| name.clone());
                            out.push(ProjectedField { path: counter_path(&name, call.is("counterRaw")), alias });
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
    let mut related_counter_includes: Vec<(String, Vec<String>)> = Vec::new();
    let mut highlights = Vec::new();
    let (mut explanations, mut timings) = (false, false);
    for item in &query.include {
        match item {
            IncludeItem::Path(path) => includes.push(t.path(path)),
            IncludeItem::Call(call) if call.is("highlight") => highlights.push(plan_highlight(call, &mut t)?),
            IncludeItem::Call(call) if call.is("explanations") => explanations = true,
            IncludeItem::Call(call) if call.is("timings") => timings = true,
            IncludeItem::Call(call) if call.is("counters") => {
                let mut names = Vec::new();
                let (related, args) = match call.args.split_first() {
                    Some((Arg::Field(path), rest)) => (Some(t.path(path)), rest),
                    _ => (None, call.args.as_slice()),
                };
                for arg in args {
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
                        _ => return Err(unsupported("include counters() with this argument", text, arg.span())),
                    }
                }
                if let Some(path) = related {
                    related_counter_includes.push((path, names));
                    continue;
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
            if let Some(reason) = handle.control.errored_reason() {
                return Err(EngineError::IndexErrored { name: handle.name(), reason });
            }
            t.more_like_this = Some((db, handle.clone()));
            let filter = where_filter(&query, &mut t)?;
            let sort = order_by(&query, &mut t)?;
            (Source::Index { handle }, filter, sort, None, false)
        }
        FromSource::Collection { .. } | FromSource::AllDocs { .. } => {
            let (collection, all_docs) = match &query.from.source {
                FromSource::Collection { name, .. } => (name.clone(), false),
                _ => (ALL_DOCS.to_owned(), true),
            };
            let (direct, ids) = reads_collection_directly(&query, &t, facets.is_some() || suggestions.is_some())?;
            if direct {
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
    let highlights = searched_terms(highlights, &filter);
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
        facets,
        suggestions,
        highlights,
        explanations,
        timings,
        counter_includes,
        related_counter_includes,
        document_filter,
    })
}

/// `filter <expr> [filter_limit n]`: checked now, evaluated per document by the executor. Facets and
/// suggestions are computed from the index alone, so they cannot see it.
fn plan_document_filter(
    query: &Query,
    t: &Translator<'_>,
    loads: &[LoadPlan],
    facets_or_suggestions: bool,
) -> Result<Option<DocumentFilter>, EngineError> {
    let Some(expr) = &query.filter else { return Ok(None) };
    if facets_or_suggestions {
        return Err(invalid(format!(
            "'filter' cannot be used with facets or suggestions (at position {}: '{}')",
            expr.span().start,
            expr.span().text(t.text)
        )));
    }
    let limit = paging(query.filter_limit.as_ref(), t, "filter_limit")?;
    let declared: Vec<String> = query.declared_functions.iter().map(|f| f.name.name.clone()).collect();
    let loads = loads.iter().map(|l| (l.alias.clone(), l.path.clone())).collect();
    DocumentFilter::new(expr.clone(), t.text, t.alias.clone(), loads, t.parameters.clone(), limit, &declared).map(Some)
}

/// Which automatic index a dynamic query uses and why (`queries?debug=explain`), found as [`plan`] finds it
/// but without creating one. A query that reads its collection directly is explained as such.
pub(crate) fn explain(db: &Database, request: &QueryRequest) -> Result<QueryExplanation, EngineError> {
    let text = request.query.as_str();
    let query = corvid_rql::parse(text).map_err(|e| invalid(e.to_string()))?;
    reject_unsupported(&query, text, request.for_operation)?;
    let (collection, all_docs) = match &query.from.source {
        FromSource::Collection { name, .. } => (name.clone(), false),
        FromSource::AllDocs { .. } => (ALL_DOCS.to_owned(), true),
        FromSource::Index { name, .. } => {
            return Err(invalid(format!("Explain works on dynamic queries ('from <collection>'); this query names its index, '{name}'")))
        }
    };
    if !query.group_by.is_empty() {
        let needs = reduce_needs(&query, text)?;
        return Ok(db.indexes.explain_reduce(&collection, &needs.group_by, &needs.aggregations));
    }
    let mut t = Translator::new(request, &query);
    let (facets, suggestions) = match &query.select {
        Some(select) => (plan_facets(db, &select.projection, &mut t)?, plan_suggestions(&select.projection, &mut t)?),
        None => (None, None),
    };
    if reads_collection_directly(&query, &t, facets.is_some() || suggestions.is_some())?.0 {
        let name = format!("collection/{}", if all_docs { "AllDocs" } else { collection.as_str() });
        let reason = "The query neither filters nor sorts: it reads the collection's documents directly, without an index";
        return Ok(QueryExplanation {
            index_name: name.clone(),
            explanations: vec![IndexExplanation { index: name, reason: reason.to_owned() }],
        });
    }
    where_filter(&query, &mut t)?;
    order_by(&query, &mut t)?;
    Ok(db.indexes.explain_map(&collection, &t.needed))
}

/// Whether a query on a collection reads the collection's documents without an index: it neither sorts nor
/// filters (other than by document ids, returned too) and asks for no facets or suggestions.
fn reads_collection_directly(
    query: &Query,
    t: &Translator<'_>,
    facets_or_suggestions: bool,
) -> Result<(bool, Option<Vec<String>>), EngineError> {
    let ids = match &query.where_clause {
        Some(w) => id_only(w, t)?,
        None => None,
    };
    let filterless = query.where_clause.as_ref().is_none_or(|w| matches!(w, Expr::True(_)) || ids.is_some());
    Ok((filterless && query.order_by.is_empty() && !facets_or_suggestions, ids))
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
            Operand::Call(call) if call.is("spatial.distance") => {
                let spatial = t.spatial_field(call.args.first(), call)?;
                let (lat, lng) = match call.args.get(1) {
                    Some(Arg::Call(point)) if point.is("spatial.point") => {
                        (t.number_arg(point.args.first(), "a latitude", point)?, t.number_arg(point.args.get(1), "a longitude", point)?)
                    }
                    // `order_by_distance_wkt`: the distance from the shape's center.
                    Some(Arg::Call(wkt)) if wkt.is("spatial.wkt") => {
                        let shape = corvid_index::parse_wkt(&t.string_arg(wkt.args.first(), "a WKT shape", wkt)?).map_err(invalid)?;
                        corvid_index::shape_center(&shape).ok_or_else(|| invalid("spatial.distance() needs a non-empty shape"))?
                    }
                    _ => {
                        return Err(invalid(format!(
                            "spatial.distance() needs spatial.point(lat, lng) or spatial.wkt(...) as its origin (at position {})",
                            call.span.start
                        )))
                    }
                };
                let kind = SortKind::Distance { lat_e7: (lat * 1e7).round() as i64, lng_e7: (lng * 1e7).round() as i64 };
                sort.push(SortKey { field: spatial, kind, descending: field.descending });
            }
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

/// What a `group by` query needs of a map-reduce index: its reduce key, its outputs (by name: a group by
/// field or an aggregation) and every aggregation it uses (outputs, `where` and `order by`).
struct ReduceNeeds {
    group_by: Vec<String>,
    selected: Vec<(String, Result<String, Aggregation>)>,
    aggregations: Vec<Aggregation>,
}

fn reduce_needs(query: &Query, text: &str) -> Result<ReduceNeeds, EngineError> {
    let alias = query.from.alias.as_ref().map(|a| a.name.clone());
    let strip = |path: &FieldPath| alias.as_deref().and_then(|a| path.strip_alias(a)).unwrap_or_else(|| path.clone()).dotted();
    let mut group_by = Vec::new();
    for item in &query.group_by {
        match &item.expr {
            Operand::Field(path) => group_by.push(strip(path)),
            // `array(Lines[].Product)`: the whole array is one key value (RavenDB's ByContent).
            Operand::Call(call) if call.is("array") => match call.args.as_slice() {
                [Arg::Field(path)] => group_by.push(group_by_array_content(&strip(path))),
                _ => return Err(invalid(format!("array() in group by takes one field path (at position {})", call.span.start))),
            },
            _ => return Err(unsupported("This group by key", text, item.span)),
        }
    }
    // Selected outputs, in order; aggregations named in where/order by are needed too.
    let mut selected: Vec<(String, Result<String, Aggregation>)> = Vec::new();
    match query.select.as_ref().map(|s| &s.projection) {
        None | Some(Projection::All) => {
            for g in &group_by {
                selected.push((output_name(g), Ok(g.clone())));
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
                            selected.push((alias.clone().unwrap_or_else(|| output_name(g)), Ok(g.clone())));
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
    Ok(ReduceNeeds { group_by, selected, aggregations })
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
    let ReduceNeeds { group_by, selected, aggregations } = reduce_needs(query, request.query.as_str())?;
    let (handle, created_index) = db.indexes.find_or_create_reduce(collection, &group_by, &aggregations)?;
    let definition = &handle.definition;
    let mut outputs = Vec::new();
    for (name, source) in selected {
        let (source, integer) = match source {
            Ok(path) => {
                // A selected path names an `array(path)` key too.
                let position =
                    definition.group_by.iter().position(|g| *g == path || array_content_path(g) == Some(&path)).ok_or_else(|| {
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
        facets: None,
        suggestions: None,
        highlights: Vec::new(),
        explanations: false,
        timings: false,
        counter_includes: None,
        related_counter_includes: Vec::new(),
        document_filter: None,
    })
}

/// The default name of a group by key in results: its path (the path inside `array(...)`).
fn output_name(group_by: &str) -> String {
    array_content_path(group_by).unwrap_or(group_by).to_owned()
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

/// A range's label: its text with parameters replaced by their values (`total < 100`).
fn range_label(text: &str, t: &Translator<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let name_len = rest[at + 1..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len() - at - 1);
        let name = &rest[at + 1..at + 1 + name_len];
        match t.parameters.get(name) {
            Some(Json::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            None => out.push_str(&rest[at..at + 1 + name_len]),
        }
        rest = &rest[at + 1 + name_len..];
    }
    out.push_str(rest);
    out
}

/// A facet setup document's facets (`facet(id('facets/x'))`).
fn facets_from_setup(db: &Database, id: &str, t: &mut Translator<'_>) -> Result<Vec<FacetPlan>, EngineError> {
    let snapshot = db.store.read()?;
    let record =
        snapshot.document(&corvid_types::id_key(id))?.ok_or_else(|| invalid(format!("facet setup document '{id}' does not exist")))?;
    let setup: Json = corvid_types::json::parse(&record.body).map_err(|e| EngineError::Internal(e.to_string()))?;
    let aggregations_of = |value: Option<&Json>| -> Vec<FacetAggregation> {
        let mut out = Vec::new();
        if let Some(Json::Object(map)) = value {
            for (op, fields) in map {
                let Some(op) = AggregationOp::from_name(op) else { continue };
                for field in fields.as_array().into_iter().flatten() {
                    let name = field.get("Name").and_then(Json::as_str).unwrap_or_default().to_owned();
                    let display = field.get("DisplayName").and_then(Json::as_str).map(str::to_owned);
                    out.push(FacetAggregation { op, field: name, display });
                }
            }
        }
        out
    };
    let options_of = |value: Option<&Json>| value.filter(|v| v.is_object()).map(FacetOptions::from_json).transpose();
    let mut plans = Vec::new();
    for facet in setup.get("Facets").and_then(Json::as_array).into_iter().flatten() {
        let field = facet.get("FieldName").and_then(Json::as_str).unwrap_or_default().to_owned();
        let name = facet.get("DisplayFieldName").and_then(Json::as_str).map(str::to_owned).unwrap_or_else(|| field.clone());
        t.need(&field, false, false);
        let aggregations = aggregations_of(facet.get("Aggregations"));
        aggregations.iter().for_each(|a| t.need(&a.field, false, false));
        let options = options_of(facet.get("Options"))?.unwrap_or_default();
        plans.push(FacetPlan { name, kind: FacetKind::Terms { field }, aggregations, options });
    }
    for facet in setup.get("RangeFacets").and_then(Json::as_array).into_iter().flatten() {
        let mut ranges = Vec::new();
        let mut first_field = None;
        for range in facet.get("Ranges").and_then(Json::as_array).into_iter().flatten() {
            let Some(text) = range.as_str() else { continue };
            let parsed = corvid_rql::parse(&format!("from x where {text}")).map_err(|e| invalid(format!("facet range '{text}': {e}")))?;
            let Some(expr) = parsed.where_clause else { continue };
            let before = t.needed.len();
            ranges.push((text.to_owned(), t.expr(&expr, false)?));
            first_field = first_field.or_else(|| t.needed.get(before).map(|f| f.path.clone()));
        }
        let name = facet.get("DisplayFieldName").and_then(Json::as_str).map(str::to_owned).or(first_field).unwrap_or_default();
        let aggregations = aggregations_of(facet.get("Aggregations"));
        aggregations.iter().for_each(|a| t.need(&a.field, false, false));
        plans.push(FacetPlan {
            name,
            kind: FacetKind::Ranges(ranges),
            aggregations,
            options: options_of(facet.get("Options"))?.unwrap_or_default(),
        });
    }
    Ok(plans)
}

/// `select facet(...), facet(...)`: None when the select is not a facet query. Facets cannot be mixed with
/// other projections.
fn plan_facets(db: &Database, projection: &Projection, t: &mut Translator<'_>) -> Result<Option<Vec<FacetPlan>>, EngineError> {
    let Projection::Fields(fields) = projection else { return Ok(None) };
    let is_facet = |f: &corvid_rql::SelectField| matches!(&f.expr, SelectExpr::Call(c) if c.is("facet"));
    if !fields.iter().any(is_facet) {
        return Ok(None);
    }
    if let Some(other) = fields.iter().find(|f| !is_facet(f)) {
        return Err(unsupported("Mixing facets with other projections", t.text, other.span));
    }
    let mut plans = Vec::new();
    for field in fields {
        let SelectExpr::Call(call) = &field.expr else { continue };
        let alias = field.alias.as_ref().map(|a| a.name.clone());
        let mut kind = None;
        let mut ranges = Vec::new();
        let mut aggregations = Vec::new();
        let mut options = FacetOptions::default();
        let mut first_range_field = None;
        for arg in &call.args {
            let (arg, display) = match arg {
                Arg::Aliased { arg, alias } => (arg.as_ref(), Some(alias.name.clone())),
                other => (other, None),
            };
            match arg {
                Arg::Call(c) if c.is("id") => {
                    let Some(Arg::Value(v)) = c.args.first() else { return Err(invalid("facet(id(...)) needs the setup document id")) };
                    let IndexValue::String(id) = t.value(v)? else { return Err(invalid("facet(id(...)) needs a string id")) };
                    plans.extend(facets_from_setup(db, &id, t)?);
                    kind = Some(FacetKind::AllResults); // marker: nothing more for this facet()
                }
                Arg::Call(c) if AggregationOp::from_name(&c.name).is_some() => {
                    let op = AggregationOp::from_name(&c.name).expect("checked");
                    let Some(path) = c.args.first().and_then(Arg::as_field) else {
                        return Err(unsupported(&format!("{}() without a field", c.name), t.text, c.span));
                    };
                    let path = t.path(&path);
                    t.need(&path, false, false);
                    aggregations.push(FacetAggregation { op, field: path, display });
                }
                Arg::Field(path) if kind.is_none() && ranges.is_empty() => {
                    let path = t.path(path);
                    t.need(&path, false, false);
                    kind = Some(FacetKind::Terms { field: path });
                }
                Arg::Expr(expr) => {
                    let before = t.needed.len();
                    let filter = t.expr(expr, false)?;
                    first_range_field = first_range_field.or_else(|| t.needed.get(before).map(|f| f.path.clone()));
                    ranges.push((range_label(expr.span().text(t.text), t), filter));
                }
                Arg::Value(v) if matches!(v.kind, ValueKind::Parameter(_)) => {
                    let ValueKind::Parameter(name) = &v.kind else { unreachable!() };
                    options = FacetOptions::from_json(t.parameter(name, v.span)?)?;
                }
                other => return Err(unsupported("This facet argument", t.text, other.span())),
            }
        }
        let is_setup = call.args.iter().any(|a| matches!(a, Arg::Call(c) if c.is("id")));
        if is_setup {
            continue;
        }
        let kind = if !ranges.is_empty() { FacetKind::Ranges(ranges) } else { kind.unwrap_or(FacetKind::AllResults) };
        let name = alias.unwrap_or_else(|| match &kind {
            FacetKind::Terms { field } => field.clone(),
            FacetKind::Ranges(_) => first_range_field.clone().unwrap_or_default(),
            FacetKind::AllResults => "@AllResults".to_owned(),
        });
        plans.push(FacetPlan { name, kind, aggregations, options });
    }
    Ok(Some(plans))
}

/// `select suggest(Field, $terms[, $options]) [as Alias]`, one or several; None when the select has none.
fn plan_suggestions(projection: &Projection, t: &mut Translator<'_>) -> Result<Option<Vec<SuggestPlan>>, EngineError> {
    let Projection::Fields(fields) = projection else { return Ok(None) };
    let is_suggest = |f: &corvid_rql::SelectField| matches!(&f.expr, SelectExpr::Call(c) if c.is("suggest"));
    if !fields.iter().any(is_suggest) {
        return Ok(None);
    }
    if let Some(other) = fields.iter().find(|f| !is_suggest(f)) {
        return Err(unsupported("Mixing suggestions with other projections", t.text, other.span));
    }
    let mut plans = Vec::new();
    for field in fields {
        let SelectExpr::Call(call) = &field.expr else { continue };
        let Some(path) = call.args.first().and_then(Arg::as_field) else {
            return Err(invalid(format!("suggest() needs a field as its first argument (at position {})", call.span.start)));
        };
        let path = t.path(&path);
        t.need(&path, false, false);
        let terms = match call.args.get(1) {
            Some(Arg::Value(v)) => match &v.kind {
                ValueKind::Parameter(name) => match t.parameter(name, v.span)? {
                    Json::Array(items) => items.iter().filter_map(Json::as_str).map(str::to_owned).collect(),
                    Json::String(s) => vec![s.clone()],
                    other => return Err(invalid(format!("suggest() terms must be a string or a list of strings, not {other}"))),
                },
                ValueKind::String(s) => vec![s.clone()],
                _ => return Err(invalid("suggest() terms must be a string or a list of strings")),
            },
            _ => return Err(invalid(format!("suggest() needs the term to look for (at position {})", call.span.start))),
        };
        let options = match call.args.get(2) {
            Some(Arg::Value(v)) => match &v.kind {
                ValueKind::Parameter(name) => SuggestOptions::from_json(t.parameter(name, v.span)?)?,
                _ => return Err(invalid("suggest() options must be a query parameter holding a JSON object")),
            },
            Some(other) => return Err(unsupported("This suggest() argument", t.text, other.span())),
            None => SuggestOptions::default(),
        };
        let name = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| path.clone());
        plans.push(SuggestPlan { name, field: path, terms, options });
    }
    Ok(Some(plans))
}

/// `highlight(Field, fragmentLength, fragmentCount[, $options])`; the searched terms are filled in later.
fn plan_highlight(call: &Call, t: &mut Translator<'_>) -> Result<HighlightPlan, EngineError> {
    let field = t.field_arg(call.args.first(), call)?;
    t.need(&field, true, false);
    let count_arg =
        |i: usize, what: &str| -> Result<usize, EngineError> { Ok(t.number_arg(call.args.get(i), what, call)?.max(0.0) as usize) };
    let fragment_length = count_arg(1, "a fragment length")?;
    if fragment_length < 18 {
        return Err(invalid(format!("highlight() fragment length must be at least 18, not {fragment_length}")));
    }
    let fragment_count = count_arg(2, "a fragment count")?;
    let mut plan = HighlightPlan {
        field,
        fragment_length,
        fragment_count,
        group_key: None,
        pre_tags: Vec::new(),
        post_tags: Vec::new(),
        terms: Vec::new(),
    };
    if let Some(Arg::Value(v)) = call.args.get(3) {
        if let ValueKind::Parameter(name) = &v.kind {
            let options = t.parameter(name, v.span)?;
            let get = |key: &str| options.as_object().and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v));
            plan.group_key = get("GroupKey").and_then(Json::as_str).map(str::to_owned);
            let strings = |v: Option<&Json>| -> Vec<String> {
                v.and_then(Json::as_array).map(|a| a.iter().filter_map(Json::as_str).map(str::to_owned).collect()).unwrap_or_default()
            };
            plan.pre_tags = strings(get("PreTags"));
            plan.post_tags = strings(get("PostTags"));
        }
    }
    Ok(plan)
}

/// Gives each highlight the words `search()` looked for in its field.
fn searched_terms(mut highlights: Vec<HighlightPlan>, filter: &Filter) -> Vec<HighlightPlan> {
    fn walk(filter: &Filter, field: &str, out: &mut Vec<String>) {
        match filter {
            Filter::Search { field: f, terms, .. } if f == field => {
                for word in terms.split(|c: char| !(c.is_alphanumeric() || c == '*')) {
                    let word = word.trim_start_matches('*').to_lowercase();
                    if !word.is_empty() && !out.contains(&word) {
                        out.push(word);
                    }
                }
            }
            Filter::And(children) | Filter::Or(children) => children.iter().for_each(|c| walk(c, field, out)),
            Filter::Not(inner) | Filter::Boost(inner, _) => walk(inner, field, out),
            _ => {}
        }
    }
    for h in &mut highlights {
        walk(filter, &h.field, &mut h.terms);
    }
    highlights
}
