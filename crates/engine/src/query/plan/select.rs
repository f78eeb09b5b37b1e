//! Planning what a query returns: projected fields (`select Name, c.Name as Company, id(), counter('Likes')`),
//! a JavaScript projection, or suggestions (`select suggest(...)`).

use corvid_rql::{Arg, Call, DeclarationKind, Projection, Query, SelectExpr, ValueKind};
use serde_json::Value as Json;

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::query::projection::{counter_path, ProjectedField};
use crate::query::suggestions::{SuggestOptions, SuggestPlan};
use crate::query::time_series::{self, TimeSeriesQuery};
use crate::EngineError;

/// The projected path that stands for the document id (`select id() as Id`).
pub(crate) const ID_PATH: &str = "@metadata.@id";

/// What each result is made of, when not the whole document.
#[derive(Debug, Clone)]
pub(crate) enum ProjectionPlan {
    Fields(Vec<ProjectedField>),
    /// A JavaScript object literal: `functions` run first (declared functions), then `function` (an
    /// expression evaluating to a function of the document) is called per result.
    Js {
        functions: Vec<String>,
        function: String,
    },
}

/// Prefix of the path of a projected time-series sub-query; the rest is its position in the plan's list.
const TIME_SERIES_PATH: &str = "@timeseries-query:";

/// The position in the plan's list of time-series sub-queries a projected path names.
pub(crate) fn time_series_of(path: &str) -> Option<usize> {
    path.strip_prefix(TIME_SERIES_PATH)?.parse().ok()
}

/// A time-series sub-query of the projection: `timeseries(from ...)` or a call of a `declare timeseries`
/// function whose arguments are the queried document. Its parameters name the queried document.
fn plan_time_series(
    query: &Query,
    field: &corvid_rql::SelectField,
    t: &Translator<'_>,
) -> Result<Option<(TimeSeriesQuery, String)>, EngineError> {
    let document_alias = query.from.alias.as_ref().map(|a| a.name.clone());
    let parameters = |name: &str| t.parameter(name, field.span).ok().cloned();
    let (body, aliases, default_name) = match &field.expr {
        SelectExpr::TimeSeries(raw) => (raw.source.as_str(), document_alias.into_iter().collect::<Vec<_>>(), "timeseries".to_owned()),
        SelectExpr::Call(call) => {
            let declared = query.declared_functions.iter().find(|f| f.kind == DeclarationKind::TimeSeries && f.name.name == call.name);
            let Some(declared) = declared else { return Ok(None) };
            let passes_the_document = |arg: &Arg| match arg.as_field() {
                Some(path) => document_alias.as_deref() == Some(path.dotted().as_str()),
                None => false,
            };
            if !call.args.iter().all(passes_the_document) {
                return Err(unsupported("A time-series function given something other than the queried document", t.text, call.span));
            }
            let mut aliases: Vec<String> = declared.params.iter().map(|p| p.name.clone()).collect();
            aliases.extend(document_alias);
            (declared.body.source.as_str(), aliases, call.name.clone())
        }
        _ => return Ok(None),
    };
    let parsed = time_series::parse(body, &aliases, &parameters)?;
    // Alone and without an alias, the sub-query's result is the whole result (the clients read it so).
    let alone = matches!(&query.select, Some(s) if matches!(&s.projection, Projection::Fields(f) if f.len() == 1));
    let name = match &field.alias {
        Some(alias) => alias.name.clone(),
        None if alone => String::new(),
        None => default_name,
    };
    Ok(Some((parsed, name)))
}

/// The projection of `select` (None: whole documents), with the time-series sub-queries it projects.
pub(super) fn plan_projection(query: &Query, t: &Translator<'_>) -> Result<(Option<ProjectionPlan>, Vec<TimeSeriesQuery>), EngineError> {
    let mut series = Vec::new();
    let projection = plan_projection_fields(query, t, &mut series)?;
    Ok((projection, series))
}

fn plan_projection_fields(
    query: &Query,
    t: &Translator<'_>,
    series: &mut Vec<TimeSeriesQuery>,
) -> Result<Option<ProjectionPlan>, EngineError> {
    Ok(match &query.select {
        None => None,
        Some(select) if select.distinct && !matches!(select.projection, Projection::Fields(_) | Projection::Js(_)) => {
            return Err(unsupported("'select distinct' without fields", t.text, select.span))
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
                    .filter(|f| f.kind == DeclarationKind::Function)
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
                    if let Some((parsed, alias)) = plan_time_series(query, field, t)? {
                        out.push(ProjectedField { path: format!("{TIME_SERIES_PATH}{}", series.len()), alias });
                        series.push(parsed);
                        continue;
                    }
                    match &field.expr {
                        SelectExpr::Field(path) => {
                            let path = t.path(path);
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| path.clone());
                            out.push(ProjectedField { path, alias });
                        }
                        SelectExpr::Call(call) if call.is("counter") || call.is("counterRaw") => {
                            let name = counter_name(call, t)?;
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| name.clone());
                            out.push(ProjectedField { path: counter_path(&name, call.is("counterRaw")), alias });
                        }
                        SelectExpr::Call(call) if call.is("id") && call.args.is_empty() => {
                            let alias = field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| "Id".to_owned());
                            out.push(ProjectedField { path: ID_PATH.to_owned(), alias });
                        }
                        _ => return Err(unsupported("This projection", t.text, field.span)),
                    }
                }
                Some(ProjectionPlan::Fields(out))
            }
        },
    })
}

/// The counter named by a projected `counter('Likes')` / `counter(u, 'Likes')` (or `counterRaw`).
fn counter_name(call: &Call, t: &Translator<'_>) -> Result<String, EngineError> {
    let usage = || {
        invalid(format!(
            "{}() in a projection takes a counter name, optionally after the alias of the queried document (at position {}: '{}')",
            call.name,
            call.span.start,
            call.span.text(t.text)
        ))
    };
    let name = match call.args.as_slice() {
        [name] => name,
        [Arg::Field(document), name] if t.alias.as_deref() == Some(document.dotted().as_str()) => name,
        _ => return Err(usage()),
    };
    match name {
        Arg::Value(corvid_rql::Value { kind: ValueKind::String(name), .. }) => Ok(name.clone()),
        Arg::Value(corvid_rql::Value { kind: ValueKind::Parameter(p), span }) => match t.parameter(p, *span)? {
            Json::String(name) => Ok(name.clone()),
            _ => Err(usage()),
        },
        _ => Err(usage()),
    }
}

/// `select suggest(Field, $terms[, $options]) [as Alias]`, one or several; None when the select has none.
pub(super) fn plan_suggestions(projection: &Projection, t: &mut Translator<'_>) -> Result<Option<Vec<SuggestPlan>>, EngineError> {
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
