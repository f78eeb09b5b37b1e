//! Planning `select facet(...)`: term facets, range facets and aggregations, or the facets of a setup
//! document (`facet(id('facets/x'))`), which are read when the query runs.

use corvid_index::{Filter, Value as IndexValue};
use corvid_rql::{Arg, Expr, Projection, SelectExpr, ValueKind};
use serde_json::Value as Json;

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::indexing::AutoIndexField;
use crate::query::facets::{AggregationOp, FacetAggregation, FacetKind, FacetOptions, FacetPlan};
use crate::query::request::QueryRequest;
use crate::EngineError;

/// One `facet(...)` of a query.
#[derive(Debug, Clone)]
pub(crate) enum PlannedFacet {
    Facet(FacetPlan),
    /// `facet(id('facets/x'))`: the facets of a setup document, read when the query runs. `alias` is the
    /// query's `from` alias, which the setup's range expressions may use.
    Setup {
        id: String,
        alias: Option<String>,
    },
}

/// The facets of setup document `setup` (its `Facets` and `RangeFacets`) for a query, with the fields they
/// need in an index.
pub(crate) fn facets_of_setup(
    setup: &Json,
    request: &QueryRequest,
    alias: Option<String>,
) -> Result<(Vec<FacetPlan>, Vec<AutoIndexField>), EngineError> {
    let mut t = Translator::new(&request.query, &request.parameters, alias);
    let plans = setup_facets(setup, &mut t)?;
    Ok((plans, t.needed))
}

impl Translator<'_> {
    /// The filter of a range facet's condition.
    fn range_filter(&mut self, expr: &Expr) -> Result<Filter, EngineError> {
        let condition = self.expr(expr, false)?;
        condition.as_filter().cloned().ok_or_else(|| invalid("moreLikeThis() cannot be a facet range"))
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

/// A facet setup document's facets.
fn setup_facets(setup: &Json, t: &mut Translator<'_>) -> Result<Vec<FacetPlan>, EngineError> {
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
            ranges.push((text.to_owned(), t.range_filter(&expr)?));
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
pub(super) fn plan_facets(projection: &Projection, t: &mut Translator<'_>) -> Result<Option<Vec<PlannedFacet>>, EngineError> {
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
                    plans.push(PlannedFacet::Setup { id, alias: t.alias.clone() });
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
                    let filter = t.range_filter(expr)?;
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
        plans.push(PlannedFacet::Facet(FacetPlan { name, kind, aggregations, options }));
    }
    Ok(Some(plans))
}
