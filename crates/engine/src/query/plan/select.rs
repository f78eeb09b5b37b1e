//! Planning what a query returns: projected fields (`select Name, c.Name as Company, id(), counter('Likes')`),
//! a JavaScript projection, or suggestions (`select suggest(...)`).

use corvid_rql::{Arg, Call, Projection, Query, SelectExpr, ValueKind};
use serde_json::Value as Json;

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::query::projection::{counter_path, ProjectedField};
use crate::query::suggestions::{SuggestOptions, SuggestPlan};
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

/// The projection of `select` (None: whole documents).
pub(super) fn plan_projection(query: &Query, t: &Translator<'_>) -> Result<Option<ProjectionPlan>, EngineError> {
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
