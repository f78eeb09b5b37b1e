//! Planning `include`: documents referenced by a path, counters, highlights, score explanations and
//! timings.

use corvid_index::Filter;
use corvid_rql::{Arg, Call, IncludeItem, Query, ValueKind};
use serde_json::Value as Json;

use super::condition::Condition;
use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::query::highlight::HighlightPlan;
use crate::time_series::{parse_include, TimeSeriesInclude};
use crate::EngineError;

/// What a query's `include` asks for besides its results.
#[derive(Debug, Default)]
pub(super) struct Includes {
    /// Paths of ids whose documents are included.
    pub paths: Vec<String>,
    /// `include counters(...)`: the counter names to include with each result (empty: all of them).
    pub counters: Option<Vec<String>>,
    /// `include counters(path, ...)`: counters of the documents each result references at `path` (names
    /// empty: all of them).
    pub related_counters: Vec<(String, Vec<String>)>,
    /// `include cmpxchg(path)`: paths whose strings are compare-exchange keys to include.
    pub compare_exchange: Vec<String>,
    /// `include timeseries(...)`: series ranges of each result document.
    pub time_series: Vec<TimeSeriesInclude>,
    pub highlights: Vec<HighlightPlan>,
    pub explanations: bool,
    pub timings: bool,
}

/// The `include` clause of `query`.
pub(super) fn plan_includes(query: &Query, t: &mut Translator<'_>) -> Result<Includes, EngineError> {
    let text = t.text;
    let mut includes = Includes::default();
    let mut counter_includes: Option<Vec<String>> = None;
    for item in &query.include {
        match item {
            IncludeItem::Path(path) => includes.paths.push(t.path(path)),
            IncludeItem::Call(call) if call.is("highlight") => includes.highlights.push(plan_highlight(call, t)?),
            IncludeItem::Call(call) if call.is("explanations") => includes.explanations = true,
            IncludeItem::Call(call) if call.is("timings") => includes.timings = true,
            IncludeItem::Call(call) if call.is("cmpxchg") => {
                for arg in &call.args {
                    let path = match arg {
                        Arg::Field(path) => t.path(path),
                        Arg::Value(corvid_rql::Value { kind: ValueKind::String(path), .. }) => path.clone(),
                        Arg::Value(corvid_rql::Value { kind: ValueKind::Parameter(p), span }) => match t.parameters.get(p) {
                            Some(Json::String(path)) => path.clone(),
                            _ => return Err(unsupported("include cmpxchg() with this parameter", text, *span)),
                        },
                        _ => return Err(unsupported("include cmpxchg() with this argument", text, arg.span())),
                    };
                    includes.compare_exchange.push(path);
                }
            }
            IncludeItem::Call(call) if call.is("timeseries") => includes.time_series.push(plan_time_series(call, t)?),
            IncludeItem::Call(call) if call.is("counters") => {
                let mut names = Vec::new();
                let (related, args) = match call.args.split_first() {
                    // The clients name the query's alias first for the result's own counters.
                    Some((Arg::Field(path), rest)) if is_alias(path, t) => (None, rest),
                    Some((Arg::Field(path), rest)) => (Some(t.path(path)), rest),
                    _ => (None, call.args.as_slice()),
                };
                for arg in args {
                    match arg {
                        Arg::Value(corvid_rql::Value { kind: ValueKind::String(name), .. }) => names.push(name.clone()),
                        // `counters($p0)`: one name or a list of names.
                        Arg::Value(corvid_rql::Value { kind: ValueKind::Parameter(p), span }) => match t.parameters.get(p) {
                            Some(Json::String(name)) => names.push(name.clone()),
                            Some(Json::Array(list)) if list.iter().all(Json::is_string) => {
                                names.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)))
                            }
                            _ => return Err(unsupported("include counters() with this parameter", text, *span)),
                        },
                        _ => return Err(unsupported("include counters() with this argument", text, arg.span())),
                    }
                }
                if let Some(path) = related {
                    includes.related_counters.push((path, names));
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
    includes.counters = counter_includes;
    Ok(includes)
}

/// Whether `path` is the query's `from` alias alone (`counters(u, ...)` in `from Users as u`).
fn is_alias(path: &corvid_rql::FieldPath, t: &Translator<'_>) -> bool {
    t.alias.as_deref().is_some_and(|alias| path.dotted() == alias)
}

/// `timeseries(['alias', ]'Name'[, from, to | last(...)])`: a series of each result document (the clients name
/// the query's alias first when it has one).
fn plan_time_series(call: &Call, t: &Translator<'_>) -> Result<TimeSeriesInclude, EngineError> {
    let args = match call.args.split_first() {
        Some((Arg::Field(path), rest)) if is_alias(path, t) => rest,
        Some((Arg::Field(path), _)) => {
            return Err(unsupported("include timeseries() of related documents", t.text, path.span));
        }
        _ => call.args.as_slice(),
    };
    parse_include(args).ok_or_else(|| {
        invalid(format!(
            "include {} is not a series this server includes: write timeseries('Name'), timeseries('Name', from, to) or \
             timeseries('Name', last(N[, 'Seconds'|'Minutes'|'Hours'|'Days'|'Months'|'Years']))",
            &t.text[call.span.start..call.span.end]
        ))
    })
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
pub(super) fn searched_terms(mut highlights: Vec<HighlightPlan>, condition: &Condition) -> Vec<HighlightPlan> {
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
        for filter in condition.filters() {
            walk(filter, &h.field, &mut h.terms);
        }
    }
    highlights
}
