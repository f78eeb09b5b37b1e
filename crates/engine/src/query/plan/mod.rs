//! RQL -> plan: where the results come from (a collection scan, a named index, or the automatic index that
//! covers every field the query filters or sorts on) and what is done with them. Planning is pure: it
//! reads the query, its parameters and a read-only view of the index catalog, and creates nothing and
//! reads no document; `resolve` finds or creates the index a plan names.

mod condition;
mod error;
mod facets;
mod group_by;
mod include;
mod more_like_this;
mod order;
mod select;
mod source;
mod spatial;
mod where_clause;

#[cfg(test)]
mod snapshot_tests;

use std::fmt;

use corvid_index::{Filter, SortKey};
use corvid_rql::{Expr, FromSource, Projection, Query};

use self::error::{invalid, unsupported};
use self::facets::plan_facets;
use self::group_by::plan_group_by;
use self::include::{plan_includes, searched_terms};
use self::order::{order_by, paging, random_order};
use self::select::{plan_projection, plan_suggestions};
use self::where_clause::{id_only, where_condition, Translator};
use super::catalog::IndexCatalog;
use super::document_filter::DocumentFilter;
use super::highlight::HighlightPlan;
use super::request::QueryRequest;
use super::suggestions::SuggestPlan;
use crate::indexing::ALL_DOCS;
use crate::EngineError;

pub(crate) use self::condition::Condition;
pub(crate) use self::facets::{facets_of_setup, PlannedFacet};
pub(crate) use self::group_by::{GroupByPlan, Output};
pub(crate) use self::order::RandomOrder;
pub(crate) use self::select::{time_series_of, ProjectionPlan, ID_PATH};
pub(crate) use self::source::Source;

/// `load <path> as <alias>`: a related document bound to an alias for the projection.
#[derive(Debug, Clone)]
pub(crate) struct LoadPlan {
    /// Path in the result document holding the id to load.
    pub path: String,
    pub alias: String,
}

/// A planned query.
pub(crate) struct Plan {
    pub source: Source,
    /// What the index is asked (`Filter::All` for collection scans).
    pub filter: Condition,
    pub sort: Vec<SortKey>,
    pub skip: usize,
    pub take: usize,
    pub projection: Option<ProjectionPlan>,
    /// Paths of ids whose documents are included.
    pub includes: Vec<String>,
    /// For collection queries restricted by `id() = ...` / `id() in (...)`.
    pub ids: Option<Vec<String>>,
    /// For `group by` queries: how to turn reduce rows into results.
    pub group_by: Option<GroupByPlan>,
    /// `load <path> as <alias>`: related documents bound to aliases for the projection.
    pub loads: Vec<LoadPlan>,
    /// `select distinct`: repeated projections are returned once.
    pub distinct: bool,
    /// `order by random()`.
    pub random: Option<RandomOrder>,
    /// `select facet(...)`: the facets to compute instead of results.
    pub facets: Option<Vec<PlannedFacet>>,
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
    /// `include cmpxchg(path)`: paths of compare-exchange keys whose values are included.
    pub compare_exchange_includes: Vec<String>,
    /// `include timeseries(...)`: series ranges of each result document.
    pub time_series_includes: Vec<crate::time_series::TimeSeriesInclude>,
    /// `filter ...`: evaluated on each selected document before paging.
    pub document_filter: Option<DocumentFilter>,
    /// Time-series sub-queries of the projection, named by position in its paths (`time_series_of`).
    pub time_series: Vec<crate::query::time_series::TimeSeriesQuery>,
}

impl Plan {
    /// A plan that returns a page of `source` as it is.
    fn new(source: Source, skip: usize, take: usize) -> Plan {
        Plan {
            source,
            filter: Condition::all(),
            sort: Vec::new(),
            skip,
            take,
            projection: None,
            includes: Vec::new(),
            ids: None,
            group_by: None,
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
            compare_exchange_includes: Vec::new(),
            time_series_includes: Vec::new(),
            document_filter: None,
            time_series: Vec::new(),
        }
    }

    /// Distinct and random results need every match before paging.
    pub fn needs_all_matches(&self) -> bool {
        self.distinct || self.random.is_some()
    }
}

/// Shows what differs from a plain page of the source, so that a plan reads at a glance (plan snapshots).
impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Plan");
        s.field("source", &self.source);
        if !matches!(self.filter, Condition::Filter(Filter::All)) {
            s.field("filter", &self.filter);
        }
        if !self.sort.is_empty() {
            s.field("sort", &self.sort);
        }
        if self.skip != 0 {
            s.field("skip", &self.skip);
        }
        if self.take != usize::MAX {
            s.field("take", &self.take);
        }
        let optional: [(&str, Option<&dyn fmt::Debug>); 14] = [
            ("projection", self.projection.as_ref().map(|p| p as _)),
            ("includes", Some(&self.includes as _).filter(|_| !self.includes.is_empty())),
            ("ids", self.ids.as_ref().map(|i| i as _)),
            ("group_by", self.group_by.as_ref().map(|g| g as _)),
            ("loads", Some(&self.loads as _).filter(|_| !self.loads.is_empty())),
            ("random", self.random.as_ref().map(|r| r as _)),
            ("facets", self.facets.as_ref().map(|x| x as _)),
            ("suggestions", self.suggestions.as_ref().map(|x| x as _)),
            ("highlights", Some(&self.highlights as _).filter(|_| !self.highlights.is_empty())),
            ("counter_includes", self.counter_includes.as_ref().map(|c| c as _)),
            ("time_series", Some(&self.time_series as _).filter(|_| !self.time_series.is_empty())),
            ("time_series_includes", Some(&self.time_series_includes as _).filter(|_| !self.time_series_includes.is_empty())),
            ("related_counter_includes", Some(&self.related_counter_includes as _).filter(|_| !self.related_counter_includes.is_empty())),
            (
                "compare_exchange_includes",
                Some(&self.compare_exchange_includes as _).filter(|_| !self.compare_exchange_includes.is_empty()),
            ),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                s.field(name, value);
            }
        }
        for (name, set) in [("distinct", self.distinct), ("explanations", self.explanations), ("timings", self.timings)] {
            if set {
                s.field(name, &true);
            }
        }
        if let Some(filter) = &self.document_filter {
            s.field("document_filter", filter);
        }
        s.finish()
    }
}

/// Plans `query` (parsed from `request`) against the indexes `catalog` knows. Creates nothing and reads no
/// document: a named index must exist (and answer queries); a dynamic query names the automatic index it
/// needs.
pub(crate) fn plan(query: &Query, request: &QueryRequest, catalog: &dyn IndexCatalog) -> Result<Plan, EngineError> {
    let text = request.query.as_str();
    reject_unsupported(query, text, request.for_operation)?;
    if query.from.revisions {
        return Err(invalid("'(Revisions = true)' is for data subscriptions; a query reads documents"));
    }
    let mut t = Translator::new(text, &request.parameters, query.from.alias.as_ref().map(|a| a.name.clone()));

    let skip = paging(query.offset.as_ref(), &t, "offset")?.or(request.start).unwrap_or(0);
    let take = paging(query.limit.as_ref(), &t, "limit")?.or(request.page_size).unwrap_or(usize::MAX);

    if !query.group_by.is_empty() {
        let collection = match &query.from.source {
            FromSource::Collection { name, .. } => name.clone(),
            FromSource::AllDocs { .. } => ALL_DOCS.to_owned(),
            FromSource::Index { span, .. } => return Err(unsupported("'group by' on a named index", text, *span)),
        };
        let (source, group_by) = plan_group_by(query, text, &collection)?;
        let mut plan = Plan::new(source, skip, take);
        plan.group_by = Some(group_by);
        return Ok(plan);
    }

    let distinct = query.select.as_ref().is_some_and(|s| s.distinct);
    let random = random_order(query, &t)?;
    let loads: Vec<LoadPlan> = query.load.iter().map(|l| LoadPlan { path: t.path(&l.path), alias: l.alias.name.clone() }).collect();
    let uses_loads =
        query.filter.is_some() || matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Fields(_) | Projection::Js(_)));
    if !loads.is_empty() && !uses_loads {
        return Err(invalid("'load' needs a 'select' or a 'filter' that uses the loaded documents"));
    }

    let facets = match &query.select {
        Some(select) => plan_facets(&select.projection, &mut t)?,
        None => None,
    };
    let suggestions = match &query.select {
        Some(select) => plan_suggestions(&select.projection, &mut t)?,
        None => None,
    };
    let facets_or_suggestions = facets.is_some() || suggestions.is_some();
    let document_filter = plan_document_filter(query, &t, &loads, facets_or_suggestions)?;
    let (projection, time_series) = if facets_or_suggestions { (None, Vec::new()) } else { plan_projection(query, &t)? };
    let includes = plan_includes(query, &mut t)?;

    // Where the results come from: a named index, a collection scan, or an automatic index.
    let (source, filter, sort, ids) = match &query.from.source {
        FromSource::Index { name, .. } => {
            let index = catalog.index(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.clone()))?;
            if let Some(reason) = index.errored.clone() {
                return Err(EngineError::IndexErrored { name: index.name, reason });
            }
            t.named_index = Some(index);
            let filter = where_condition(query, &mut t)?;
            let sort = order_by(query, &mut t)?;
            (Source::Index { name: name.clone() }, filter, sort, None)
        }
        FromSource::Collection { .. } | FromSource::AllDocs { .. } => {
            let (collection, all_docs) = match &query.from.source {
                FromSource::Collection { name, .. } => (name.clone(), false),
                _ => (ALL_DOCS.to_owned(), true),
            };
            let (direct, ids) = reads_collection_directly(query, &t, facets_or_suggestions)?;
            if direct {
                let source = if all_docs { Source::AllDocs { name: "AllDocs".into() } } else { Source::Collection { name: collection } };
                (source, Condition::all(), Vec::new(), ids)
            } else {
                let filter = where_condition(query, &mut t)?;
                let sort = order_by(query, &mut t)?;
                (Source::AutoIndex { collection, fields: t.needed.clone() }, filter, sort, None)
            }
        }
    };
    let highlights = searched_terms(includes.highlights, &filter);
    Ok(Plan {
        source,
        filter,
        sort,
        skip,
        take,
        projection,
        includes: includes.paths,
        ids,
        group_by: None,
        loads,
        distinct,
        random,
        facets,
        suggestions,
        highlights,
        explanations: includes.explanations,
        timings: includes.timings,
        counter_includes: includes.counters,
        related_counter_includes: includes.related_counters,
        compare_exchange_includes: includes.compare_exchange,
        time_series_includes: includes.time_series,
        document_filter,
        time_series,
    })
}

/// Refuses what a query of its kind cannot do: projections or groups in a patch or delete by query,
/// `update` in a query, functions without a JavaScript projection, `filter` with `group by`.
pub(crate) fn reject_unsupported(query: &Query, text: &str, for_operation: bool) -> Result<(), EngineError> {
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
    let mut javascript = query.declared_functions.iter().filter(|f| f.kind == corvid_rql::DeclarationKind::Function);
    if let Some(f) = javascript.next().filter(|_| !js_projection) {
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
