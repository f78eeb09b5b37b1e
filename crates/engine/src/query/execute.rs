//! Running a query plan against one storage snapshot (and, for indexed queries, one index searcher).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use corvid_index::{DocumentIndex, Filter};
use corvid_storage::{DocumentRecord, ReadTxn};
use corvid_types::{format_date, id_key, now_nanos};
use serde_json::{Map, Value};

use super::document_filter::{DocumentFilter, FilteredPage};
use super::facet_setup::expand_facets;
use super::plan::{time_series_of, Plan, ProjectionPlan, RandomOrder, Source, ID_PATH};
use super::projection::{counter_of, counter_value, included_ids, project, value_at};
use super::reduce::{ReducePlan, Row};
use super::request::QueryRequest;
use super::resolve::{ResolvedPlan, Target};
use super::response::QueryResponse;
use super::time_series;
use crate::document_json::DocumentJson;
use crate::indexing::IndexBackend;
use crate::reads::VersionHasher;
use crate::{Cancellation, Database, EngineError};

/// The ids a query matches, for patch and delete by query.
pub(crate) struct MatchedIds {
    pub ids: Vec<String>,
    pub index_name: String,
    pub is_stale: bool,
}

const DEFAULT_WAIT: Duration = Duration::from_secs(15);
const PROJECTION_FUNCTION: &str = "__corvid_project";
/// Helpers every projection script can call, as in RavenDB.
const PROJECTION_HELPERS: &str = "function id(d) { return d && d['@metadata'] ? d['@metadata']['@id'] : undefined; }\n\
function getMetadata(d) { return d ? d['@metadata'] : undefined; }\n\
function load() { throw new Error('load() is not supported in projections yet'); }\n\
function __counterArgs(fn, a) {\n\
  if (a.length === 1) { return [null, a[0]]; }\n\
  var d = a[0]; var i = typeof d === 'string' ? d : id(d);\n\
  if (typeof i !== 'string') { throw new Error(fn + '() takes a document or a document id, then a counter name'); }\n\
  return [i, a[1]];\n\
}\n\
function counter() { return __host('counter', __counterArgs('counter', arguments)); }\n\
function counterRaw() { return __host('counterRaw', __counterArgs('counterRaw', arguments)); }\n\
function cmpxchg(key) { return __host('cmpxchg', [key]); }";

/// Documents whose counters a query includes, each once, with the union of the names asked for (empty: all).
#[derive(Default)]
struct CounterWants {
    entries: Vec<(String, Vec<String>)>,
    by_key: HashMap<String, usize>,
}

impl CounterWants {
    fn add(&mut self, id: &str, names: &[String]) {
        let key = id_key(id);
        let Some(&at) = self.by_key.get(&key) else {
            self.by_key.insert(key, self.entries.len());
            self.entries.push((id.to_owned(), names.to_vec()));
            return;
        };
        let existing = &mut self.entries[at].1;
        if existing.is_empty() {
            return;
        }
        if names.is_empty() {
            existing.clear();
            return;
        }
        for name in names {
            if !existing.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                existing.push(name.clone());
            }
        }
    }
}

/// Answers a projection's `counter()` / `counterRaw()` from the query's snapshot; the id defaults to the
/// result's document.
struct ProjectionHost<'a, 't> {
    snapshot: &'a ReadTxn<'t>,
    id: &'a str,
    database_id: &'a str,
    /// Values read, for the result etag.
    counters: Vec<i64>,
}

impl corvid_js::Host for ProjectionHost<'_, '_> {
    fn call(&mut self, op: &str, arguments_json: &str) -> Result<String, String> {
        if op == "cmpxchg" {
            let arguments: Vec<Value> = corvid_types::json::parse(arguments_json).map_err(|e| e.to_string())?;
            let Some(Value::String(key)) = arguments.first() else {
                return Err("cmpxchg() needs a key (a string)".into());
            };
            let stored = self.snapshot.compare_exchange(key).map_err(|e| e.to_string())?;
            // The value's index changes the result etag as a counter's value does.
            self.counters.push(stored.as_ref().map_or(-1, |v| v.index as i64));
            return Ok(crate::compare_exchange::object_of(stored.map(|v| v.value).as_deref()).to_string());
        }
        let raw = match op {
            "counter" => false,
            "counterRaw" => true,
            other => return Err(format!("{other}() is not available in projections")),
        };
        let arguments: Vec<Value> = corvid_types::json::parse(arguments_json).map_err(|e| e.to_string())?;
        let id = arguments.first().and_then(Value::as_str).unwrap_or(self.id);
        let Some(Value::String(name)) = arguments.get(1) else {
            return Err(format!("{op}() needs a counter name (a string)"));
        };
        let value = self.snapshot.counter(&id_key(id), name).map_err(|e| e.to_string())?.map(|c| c.value);
        self.counters.push(value.unwrap_or(0));
        Ok(counter_value(value, raw, self.database_id).to_string())
    }
}

/// The page to read from the source: everything when distinct or random results are paged afterwards.
fn page_of(plan: &Plan) -> (usize, usize) {
    if plan.needs_all_matches() {
        (0, usize::MAX)
    } else {
        (plan.skip, plan.take)
    }
}

/// A result's JSON without its `@metadata`, to compare projections for `distinct`.
fn without_metadata(result: &str) -> String {
    match corvid_types::json::parse::<Value>(result) {
        Ok(Value::Object(mut map)) => {
            map.shift_remove("@metadata");
            Value::Object(map).to_string()
        }
        _ => result.to_owned(),
    }
}

/// The seed of a random order; an unseeded one takes the clock's, so each run differs.
fn seed_of(order: RandomOrder) -> u64 {
    match order {
        RandomOrder::Seeded(seed) => seed,
        RandomOrder::Unseeded => VersionHasher::of(&now_nanos().to_string()) | 1,
    }
}

/// Fisher-Yates with xorshift64: deterministic for a given seed (`random('seed')`).
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn projection_metadata(record: &DocumentRecord) -> Value {
    let mut metadata = Map::new();
    metadata.insert("@id".into(), Value::String(record.id.clone()));
    metadata.insert("@projection".into(), Value::Bool(true));
    metadata.insert("@last-modified".into(), Value::String(format_date(record.last_modified)));
    metadata.insert("@change-vector".into(), Value::String(record.change_vector.clone()));
    metadata.insert("@collection".into(), Value::String(record.collection.clone()));
    Value::Object(metadata)
}

fn script_error(e: corvid_js::JsError) -> EngineError {
    match e {
        corvid_js::JsError::Cancelled => EngineError::Cancelled,
        e => EngineError::Script { message: e.to_string() },
    }
}

/// A sandbox with the query's declared functions and its projection compiled once for all results.
fn js_sandbox(functions: &[String], function: &str, cancel: &Cancellation) -> Result<corvid_js::Sandbox, EngineError> {
    let sandbox = corvid_js::Sandbox::cancellable(corvid_js::Limits::default(), cancel.flag()).map_err(script_error)?;
    sandbox.run(PROJECTION_HELPERS).map_err(script_error)?;
    for f in functions {
        sandbox.run(f).map_err(script_error)?;
    }
    sandbox.define(PROJECTION_FUNCTION, function).map_err(script_error)?;
    Ok(sandbox)
}

/// The documents of the queried collection named by `id() = ...` / `id() in (...)`, each once, in the
/// order named.
fn records_by_ids(snapshot: &ReadTxn<'_>, plan: &Plan, ids: &[String]) -> Result<Vec<DocumentRecord>, EngineError> {
    let collection = match &plan.source {
        Source::Collection { name } => Some(id_key(name)),
        _ => None,
    };
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    for id in ids {
        let key = id_key(id);
        if !seen.insert(key.clone()) {
            continue;
        }
        if let Some(record) = snapshot.document(&key)? {
            if collection.as_ref().is_none_or(|c| id_key(&record.collection) == *c) {
                found.push(record);
            }
        }
    }
    Ok(found)
}

/// Reads a document by id from the query's snapshot, for paths through `load` aliases in a filter.
fn loader<'s>(snapshot: &'s ReadTxn<'_>) -> impl FnMut(&str) -> Result<Option<Value>, EngineError> + 's {
    move |id: &str| match snapshot.document(&id_key(id))? {
        Some(record) => Ok(corvid_types::json::parse(&record.body).ok()),
        None => Ok(None),
    }
}

/// RavenDB's statistics of a filtered query: the total counts the documents that passed, `SkippedResults`
/// those the filter rejected, `ScannedResults` those it evaluated.
fn filtered_totals(page: &FilteredPage<'_>, response: &mut QueryResponse) {
    response.total_results = page.counts.accepted;
    response.skipped_results = page.counts.rejected;
    response.scanned_results = Some(page.counts.scanned);
}

/// The filter `plan` asks of `index`, its moreLikeThis parts completed from `snapshot` (they need a map
/// index: `index` is None for the others).
fn index_filter(plan: &Plan, snapshot: &ReadTxn<'_>, index: Option<&DocumentIndex>) -> Result<Filter, EngineError> {
    plan.filter.to_filter(&mut |more_like_this| match index {
        Some(index) => more_like_this.filter(snapshot, index),
        None => Err(EngineError::InvalidQuery { message: "moreLikeThis() needs a map index".into() }),
    })
}

impl Database {
    /// Runs a query: its results, includes and statistics, all from one storage snapshot.
    pub fn query(&self, request: &QueryRequest) -> Result<QueryResponse, EngineError> {
        let resolved = self.plan_query(request)?;
        let plan = &resolved.plan;
        let now = now_nanos();
        let mut response = QueryResponse { last_query_time: now, index_timestamp: now, ..Default::default() };
        response.included_paths = plan.includes.clone();
        response.timings = plan.timings;
        response.highlightings = plan.highlights.iter().map(|h| (h.field.clone(), Vec::new())).collect();
        match &resolved.target {
            Target::Documents { name } => {
                response.index_name = format!("collection/{name}");
                let snapshot = self.store.read()?;
                let records = match &plan.document_filter {
                    Some(filter) => self.filter_collection(&snapshot, plan, filter, &mut response)?,
                    None => self.scan_collection(&snapshot, plan, &mut response)?,
                };
                self.finish(&snapshot, plan, records, request, &mut response)?;
            }
            Target::Index { handle, created, reduce } => {
                response.index_name = handle.definition.name.clone();
                handle.last_query_time.store(now, Ordering::Relaxed);
                // A query that had to create its index waits for it, as RavenDB does, so the first query
                // of a kind does not answer from an empty index.
                if request.wait_for_non_stale || *created {
                    self.wait_for_index(handle, request.wait_timeout.unwrap_or(DEFAULT_WAIT), &request.cancel);
                }
                let processed = handle.processed_etag.load(Ordering::Relaxed);
                let snapshot = self.store.read()?;
                response.is_stale = self.is_stale(&snapshot, handle, processed)?;
                let ts = handle.counters.last_indexing_time.load(Ordering::Relaxed);
                response.index_timestamp = if ts > 0 { ts } else { handle.created_at };
                let search_index = match &handle.index {
                    IndexBackend::Search(index) => Some(&**index),
                    _ => None,
                };
                let filter = index_filter(plan, &snapshot, search_index)?;
                if let (Some(reduce), IndexBackend::Reduce(store)) = (reduce, &handle.index) {
                    self.run_reduce(reduce, store, plan, processed, &mut response)?;
                    return Ok(response);
                }
                if let IndexBackend::StaticReduce { store, results } = &handle.index {
                    self.query_reduce_results(store, results, plan, &filter, processed, &mut response)?;
                    return Ok(response);
                }
                let IndexBackend::Search(index) = &handle.index else {
                    return Err(EngineError::InvalidQuery {
                        message: format!("index '{}' is a map-reduce index; query it with group by", handle.definition.name),
                    });
                };
                if let Some(suggestions) = &plan.suggestions {
                    let mut hasher = VersionHasher::new();
                    hasher.add(&processed.to_be_bytes());
                    for suggestion in suggestions {
                        let result = super::suggestions::run_suggest(index, suggestion)?.to_string();
                        hasher.add(result.as_bytes());
                        response.results.push(result);
                    }
                    response.total_results = response.results.len() as u64;
                    response.result_etag = hasher.finish() >> 11;
                    return Ok(response);
                }
                if let Some(facets) = &plan.facets {
                    let facets = expand_facets(facets, &snapshot, request)?;
                    let (total, results) = super::facets::run_facets(index, &filter, &facets)?;
                    response.total_results = total;
                    let mut hasher = VersionHasher::new();
                    hasher.add(&processed.to_be_bytes());
                    for result in results {
                        let result = result.to_string();
                        hasher.add(result.as_bytes());
                        response.results.push(result);
                    }
                    response.result_etag = hasher.finish() >> 11;
                    return Ok(response);
                }
                // No page is larger than the index itself (clients send "no limit" as the largest integer).
                let (skip, take) = match &plan.document_filter {
                    Some(_) => (0, usize::MAX), // paging applies to the documents that pass the filter
                    None => page_of(plan),
                };
                let take = take.min(index.entries_count() as usize);
                let found = index.search(&filter, &plan.sort, skip, take)?;
                response.total_results = found.total as u64;
                if let Some(document_filter) = &plan.document_filter {
                    let (skip, take) = page_of(plan);
                    let mut page = FilteredPage::new(document_filter, skip, take);
                    let mut load = loader(&snapshot);
                    for key in &found.keys {
                        request.cancel.check()?;
                        // A document deleted after the index saw it is left out until the index catches up.
                        let Some(record) = snapshot.document(key)? else { continue };
                        if !page.offer(record, &mut load)? {
                            break;
                        }
                    }
                    filtered_totals(&page, &mut response);
                    let mut hasher = VersionHasher::new();
                    hasher.add(&processed.to_be_bytes());
                    response.result_etag = hasher.finish();
                    self.finish(&snapshot, plan, page.records, request, &mut response)?;
                    return Ok(response);
                }
                let mut records = Vec::with_capacity(found.keys.len());
                for (i, key) in found.keys.iter().enumerate() {
                    // A document deleted after the index saw it is left out until the index catches up.
                    if let Some(record) = snapshot.document(key)? {
                        if plan.explanations {
                            let score = found.scores.get(i).copied().unwrap_or(0.0);
                            let why = format!(
                                "{score} = relevance (BM25) of the query's full-text terms in this entry; 0 when the query has none"
                            );
                            response.explanations.push((record.id.clone(), vec![why]));
                        }
                        records.push(record);
                    }
                }
                let mut hasher = VersionHasher::new();
                hasher.add(&processed.to_be_bytes());
                response.result_etag = hasher.finish();
                self.finish(&snapshot, plan, records, request, &mut response)?;
            }
        }
        Ok(response)
    }

    /// Every id the query matches, in the query's order (no documents are read for indexed queries).
    pub(crate) fn matching_ids(&self, request: &QueryRequest) -> Result<MatchedIds, EngineError> {
        let resolved = self.plan_query(request)?;
        self.ids_for_plan(&resolved, request)
    }

    fn ids_for_plan(&self, resolved: &ResolvedPlan, request: &QueryRequest) -> Result<MatchedIds, EngineError> {
        let plan = &resolved.plan;
        let (skip, take) = (plan.skip, plan.take);
        match &resolved.target {
            Target::Documents { name } => {
                let snapshot = self.store.read()?;
                let ids = if plan.ids.is_some() {
                    let mut response = QueryResponse::default();
                    self.scan_collection(&snapshot, plan, &mut response)?.into_iter().map(|r| r.id).collect()
                } else {
                    // Only ids are kept: a whole collection may be selected.
                    let mut ids = Vec::new();
                    let mut seen = 0usize;
                    let mut visit = |record: DocumentRecord| {
                        seen += 1;
                        if seen > skip {
                            ids.push(record.id);
                        }
                        ids.len() < take
                    };
                    match &plan.source {
                        Source::AllDocs { .. } => snapshot.documents_after_etag(0, &mut visit)?,
                        _ => snapshot.collection_documents_after_etag(&id_key(name), 0, &mut visit)?,
                    };
                    ids
                };
                Ok(MatchedIds { ids, index_name: format!("collection/{name}"), is_stale: false })
            }
            Target::Index { handle, created, .. } => {
                if request.wait_for_non_stale || *created {
                    self.wait_for_index(handle, request.wait_timeout.unwrap_or(DEFAULT_WAIT), &request.cancel);
                }
                let processed = handle.processed_etag.load(Ordering::Relaxed);
                let snapshot = self.store.read()?;
                let is_stale = self.is_stale(&snapshot, handle, processed)?;
                let IndexBackend::Search(index) = &handle.index else {
                    return Err(EngineError::InvalidQuery {
                        message: format!("index '{}' is a map-reduce index; it cannot select documents to change", handle.definition.name),
                    });
                };
                let filter = index_filter(plan, &snapshot, Some(index))?;
                let take = take.min(index.entries_count() as usize);
                let found = index.search(&filter, &plan.sort, skip, take)?;
                Ok(MatchedIds { ids: found.keys, index_name: handle.definition.name.clone(), is_stale })
            }
        }
    }

    /// Runs a query for `/streams/queries`: `on_stats` first (false stops), then every result in order
    /// through `emit` (false stops: the client went away). Documents are read and rendered in small chunks
    /// from one snapshot, so memory stays flat whatever the number of results.
    pub fn stream_query(
        &self,
        request: &QueryRequest,
        on_stats: impl FnOnce(&QueryResponse) -> bool,
        mut emit: impl FnMut(String) -> bool,
    ) -> Result<(), EngineError> {
        const CHUNK: usize = 256;
        let mut resolved = self.plan_query(request)?;
        let plan = &resolved.plan;
        if plan.group_by.is_some() || plan.needs_all_matches() || plan.document_filter.is_some() {
            // Group-by results, distinct and random orders need every match at once anyway; a filter's
            // total is known only once it has scanned.
            let mut response = self.query(request)?;
            let results = std::mem::take(&mut response.results);
            if on_stats(&response) {
                for result in results {
                    if !emit(result) {
                        break;
                    }
                }
            }
            return Ok(());
        }
        resolved.plan.includes.clear();
        let matched = self.ids_for_plan(&resolved, request)?;
        let snapshot = self.store.read()?;
        let now = now_nanos();
        let stats = QueryResponse {
            total_results: matched.ids.len() as u64,
            index_name: matched.index_name,
            is_stale: matched.is_stale,
            index_timestamp: now,
            last_query_time: now,
            result_etag: snapshot.last_etag()?,
            ..Default::default()
        };
        if !on_stats(&stats) {
            return Ok(());
        }
        for ids in matched.ids.chunks(CHUNK) {
            let mut records = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(record) = snapshot.document(&id_key(id))? {
                    records.push(record);
                }
            }
            let mut chunk = QueryResponse::default();
            self.finish(&snapshot, &resolved.plan, records, request, &mut chunk)?;
            for result in chunk.results {
                if !emit(result) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// A collection query with a `filter`: the collection's documents (or those named by `id()`) in etag
    /// order, each evaluated until `filter_limit` of them were scanned.
    fn filter_collection(
        &self,
        snapshot: &ReadTxn<'_>,
        plan: &Plan,
        filter: &DocumentFilter,
        response: &mut QueryResponse,
    ) -> Result<Vec<DocumentRecord>, EngineError> {
        let (skip, take) = page_of(plan);
        let mut page = FilteredPage::new(filter, skip, take);
        let mut load = loader(snapshot);
        if let Some(ids) = &plan.ids {
            for record in records_by_ids(snapshot, plan, ids)? {
                if !page.offer(record, &mut load)? {
                    break;
                }
            }
        } else {
            let mut failure = None;
            let mut visit = |record: DocumentRecord| match page.offer(record, &mut load) {
                Ok(more) => more,
                Err(e) => {
                    failure = Some(e);
                    false
                }
            };
            match &plan.source {
                Source::AllDocs { .. } => snapshot.documents_after_etag(0, &mut visit)?,
                Source::Collection { name } => snapshot.collection_documents_after_etag(&id_key(name), 0, &mut visit)?,
                Source::Index { .. } | Source::AutoIndex { .. } | Source::AutoReduce { .. } => {}
            };
            if let Some(e) = failure {
                return Err(e);
            }
        }
        filtered_totals(&page, response);
        let mut hasher = VersionHasher::new();
        hasher.add(&snapshot.last_etag()?.to_be_bytes());
        response.result_etag = hasher.finish();
        Ok(page.records)
    }

    fn scan_collection(
        &self,
        snapshot: &ReadTxn<'_>,
        plan: &Plan,
        response: &mut QueryResponse,
    ) -> Result<Vec<DocumentRecord>, EngineError> {
        let (skip, take) = page_of(plan);
        let all_docs = matches!(plan.source, Source::AllDocs { .. });
        let collection = match &plan.source {
            Source::Collection { name } => id_key(name),
            _ => String::new(),
        };
        if let Some(ids) = &plan.ids {
            let found = records_by_ids(snapshot, plan, ids)?;
            response.total_results = found.len() as u64;
            return Ok(found.into_iter().skip(skip).take(take).collect());
        }
        let mut out = Vec::new();
        let mut skipped = 0;
        let mut visit = |record: DocumentRecord| {
            if skipped < skip {
                skipped += 1;
                return true;
            }
            if out.len() >= take {
                return false;
            }
            out.push(record);
            true
        };
        if all_docs {
            snapshot.documents_after_etag(0, &mut visit)?;
            response.total_results = snapshot.count_documents()?;
        } else {
            snapshot.collection_documents_after_etag(&collection, 0, &mut visit)?;
            response.total_results = snapshot.count_collection(&collection)?;
        }
        response.result_etag = {
            let mut hasher = VersionHasher::new();
            hasher.add(&snapshot.last_etag()?.to_be_bytes());
            hasher.finish()
        };
        Ok(out)
    }

    /// Builds results (documents or projections) and includes from the same snapshot.
    fn finish(
        &self,
        snapshot: &ReadTxn<'_>,
        plan: &Plan,
        records: Vec<DocumentRecord>,
        request: &QueryRequest,
        response: &mut QueryResponse,
    ) -> Result<(), EngineError> {
        let mut hasher = VersionHasher::new();
        hasher.add(&response.result_etag.to_be_bytes());
        hasher.add(&response.total_results.to_be_bytes());
        let mut include_ids = Vec::new();
        let mut related_counter_ids: Vec<(String, usize)> = Vec::new();
        let mut compare_exchange_keys = Vec::new();
        let sandbox = match &plan.projection {
            Some(ProjectionPlan::Js { functions, function }) => Some(js_sandbox(functions, function, &request.cancel)?),
            _ => None,
        };
        for record in &records {
            request.cancel.check()?;
            hasher.add(record.change_vector.as_bytes());
            let needs_body = matches!(plan.projection, Some(ProjectionPlan::Fields(_)))
                || !plan.includes.is_empty()
                || !plan.related_counter_includes.is_empty()
                || !plan.compare_exchange_includes.is_empty()
                || !plan.loads.is_empty()
                || !plan.highlights.is_empty();
            let body: Value = if needs_body {
                corvid_types::json::parse(&record.body)
                    .map_err(|e| EngineError::Internal(format!("stored document {} is not JSON: {e}", record.id)))?
            } else {
                Value::Null
            };
            if !plan.includes.is_empty() {
                include_ids.extend(included_ids(&body, &plan.includes));
            }
            if !plan.compare_exchange_includes.is_empty() {
                compare_exchange_keys.extend(included_ids(&body, &plan.compare_exchange_includes));
            }
            for (spec, (path, _)) in plan.related_counter_includes.iter().enumerate() {
                related_counter_ids.extend(included_ids(&body, std::slice::from_ref(path)).into_iter().map(|id| (id, spec)));
            }
            for (h, (_, per_key)) in plan.highlights.iter().zip(response.highlightings.iter_mut()) {
                let value = value_at(&body, &h.field);
                let mut fragments = Vec::new();
                for text in super::highlight::texts(&value) {
                    fragments.extend(h.fragments(text));
                }
                fragments.truncate(h.fragment_count);
                if !fragments.is_empty() {
                    let key = match &h.group_key {
                        Some(group) => match value_at(&body, group) {
                            Value::String(s) => s,
                            Value::Null => record.id.clone(),
                            other => other.to_string(),
                        },
                        None => record.id.clone(),
                    };
                    match per_key.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, existing)) => existing.extend(fragments),
                        None => per_key.push((key, fragments)),
                    }
                }
            }
            // Documents named by `load`, as wire JSON (None where the id is missing or not a string).
            let mut loaded: Vec<Option<String>> = Vec::with_capacity(plan.loads.len());
            for load in &plan.loads {
                let document = match value_at(&body, &load.path) {
                    Value::String(id) => snapshot.document(&id_key(&id))?.map(|d| d.to_json_string(false)),
                    _ => None,
                };
                loaded.push(document);
            }
            match &plan.projection {
                None => response.results.push(record.to_json_string(request.metadata_only)),
                Some(ProjectionPlan::Js { .. }) => {
                    let sandbox = sandbox.as_ref().expect("created for JavaScript projections");
                    let document = record.to_json_string(false);
                    let mut arguments: Vec<&str> = vec![&document];
                    arguments.extend(loaded.iter().map(|l| l.as_deref().unwrap_or("null")));
                    let mut host = ProjectionHost { snapshot, id: &record.id, database_id: self.database_id(), counters: Vec::new() };
                    let output = sandbox.call_with_host(PROJECTION_FUNCTION, &arguments, &mut host).map_err(script_error)?;
                    for value in host.counters {
                        hasher.add(&value.to_be_bytes());
                    }
                    let mut projected = match corvid_types::json::parse(&output) {
                        Ok(Value::Object(map)) => map,
                        Ok(other) => {
                            return Err(EngineError::Script {
                                message: format!("the projection returned {other} for {}; it must return an object", record.id),
                            })
                        }
                        Err(e) => return Err(EngineError::Internal(format!("projection output is not JSON: {e}"))),
                    };
                    projected.insert("@metadata".into(), projection_metadata(record));
                    response.results.push(Value::Object(projected).to_string());
                }
                Some(ProjectionPlan::Fields(fields)) => {
                    let mut projected = project(&body, fields);
                    for field in fields.iter().filter(|f| f.path == ID_PATH) {
                        projected.insert(field.alias.clone(), Value::String(record.id.clone()));
                    }
                    for field in fields {
                        if let Some(position) = time_series_of(&field.path) {
                            let result = time_series::run(snapshot, &id_key(&record.id), &plan.time_series[position], &mut hasher)?;
                            projected.shift_remove(&field.alias);
                            match result {
                                // Alone and unnamed: the sub-query's result is the whole result.
                                Value::Object(whole) if field.alias.is_empty() => projected.extend(whole),
                                other => {
                                    projected.insert(field.alias.clone(), other);
                                }
                            }
                        }
                        if let Some((name, raw)) = counter_of(&field.path) {
                            let value = snapshot.counter(&id_key(&record.id), name)?.map(|c| c.value);
                            hasher.add(&value.unwrap_or(0).to_be_bytes());
                            projected.insert(field.alias.clone(), counter_value(value, raw, self.database_id()));
                        }
                    }
                    // Fields of loaded documents: `c.Name` where `c` is a load alias.
                    for field in fields {
                        let Some((first, rest)) = field.path.split_once('.') else { continue };
                        if let Some(i) = plan.loads.iter().position(|l| l.alias == first) {
                            let value = match &loaded[i] {
                                Some(json) => value_at(&corvid_types::json::parse(json).unwrap_or(Value::Null), rest),
                                None => Value::Null,
                            };
                            projected.insert(field.alias.clone(), value);
                        }
                    }
                    projected.insert("@metadata".into(), projection_metadata(record));
                    response.results.push(Value::Object(projected).to_string());
                }
            }
        }
        if plan.counter_includes.is_some() || !plan.related_counter_includes.is_empty() {
            let mut wanted = CounterWants::default();
            if let Some(names) = &plan.counter_includes {
                for record in &records {
                    wanted.add(&record.id, names);
                }
            }
            for (id, spec) in &related_counter_ids {
                wanted.add(id, &plan.related_counter_includes[*spec].1);
            }
            let mut included = Vec::with_capacity(wanted.entries.len());
            for (id, names) in wanted.entries {
                let key = id_key(&id);
                // A referenced document that does not exist has no counters to include.
                let Some(doc_id) = snapshot.document(&key)?.map(|d| d.id) else { continue };
                let detail =
                    |c: corvid_storage::CounterValue| crate::CounterDetail { document_id: doc_id.clone(), name: c.name, value: c.value };
                let counters = if names.is_empty() {
                    snapshot.counters_of(&key)?.into_iter().map(|c| Some(detail(c))).collect()
                } else {
                    names.iter().map(|n| Ok(snapshot.counter(&key, n)?.map(detail))).collect::<Result<Vec<_>, EngineError>>()?
                };
                for c in counters.iter().flatten() {
                    hasher.add(&c.value.to_be_bytes());
                }
                included.push((doc_id.clone(), counters));
                response.included_counter_names.push((doc_id, names));
            }
            response.counter_includes = Some(included);
        }
        if !plan.time_series_includes.is_empty() {
            let ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
            let series = crate::time_series::series_of_documents(snapshot, &ids, &plan.time_series_includes)?;
            for (_, ranges) in &series {
                // The result etag changes when an included value does, so the session's cache is not stale.
                for entry in ranges.iter().flat_map(|r| &r.entries) {
                    hasher.add(&entry.timestamp.to_be_bytes());
                    for value in &entry.values {
                        hasher.add(&value.to_bits().to_be_bytes());
                    }
                }
            }
            response.time_series_includes = Some(series);
        }
        if !plan.compare_exchange_includes.is_empty() {
            let mut seen = HashSet::new();
            let mut included = Vec::new();
            for key in compare_exchange_keys {
                if key.is_empty() || !seen.insert(id_key(&key)) {
                    continue;
                }
                let value = snapshot.compare_exchange(&key)?.map(crate::CompareExchangeValue::from);
                hasher.add(&value.as_ref().map_or(0, |v| v.index).to_be_bytes());
                included.push((key, value));
            }
            response.compare_exchange_includes = Some(included);
        }
        let mut seen: HashSet<String> = records.iter().map(|r| id_key(&r.id)).collect();
        for id in include_ids {
            let key = id_key(&id);
            if !seen.insert(key.clone()) {
                continue;
            }
            if let Some(doc) = snapshot.document(&key)? {
                hasher.add(doc.change_vector.as_bytes());
                response.includes.push((doc.id.clone(), doc.to_json_string(false)));
            }
        }
        if plan.distinct {
            let mut seen = HashSet::new();
            response.results.retain(|r| seen.insert(without_metadata(r)));
            response.total_results = response.results.len() as u64;
        }
        if let Some(order) = plan.random {
            shuffle(&mut response.results, seed_of(order));
        }
        if plan.needs_all_matches() {
            response.results = std::mem::take(&mut response.results).into_iter().skip(plan.skip).take(plan.take).collect();
        }
        // Kept within 2^53 so JavaScript clients read it exactly.
        response.result_etag = hasher.finish() >> 11;
        Ok(())
    }

    /// A query on a static map-reduce index: the search picks reduce keys, the results are the stored
    /// reduce outputs of those keys.
    fn query_reduce_results(
        &self,
        store: &corvid_storage::MapReduceStore,
        results: &corvid_index::DocumentIndex,
        plan: &Plan,
        filter: &Filter,
        processed: u64,
        response: &mut QueryResponse,
    ) -> Result<(), EngineError> {
        if plan.projection.is_some() || !plan.includes.is_empty() || !plan.loads.is_empty() {
            return Err(EngineError::InvalidQuery {
                message: "projections, includes and load on map-reduce index results are not supported by this server yet".into(),
            });
        }
        // A filter sees every reduce result; paging then applies to those that pass.
        let (skip, take) = if plan.document_filter.is_some() { (0, usize::MAX) } else { (plan.skip, plan.take) };
        let take = take.min(results.entries_count() as usize);
        let found = results.search(filter, &plan.sort, skip, take)?;
        response.total_results = found.total as u64;
        let mut hasher = VersionHasher::new();
        hasher.add(&processed.to_be_bytes());
        let mut counts = super::document_filter::FilterCounts::default();
        let mut no_loads = |_: &str| Ok(None);
        'keys: for key in &found.keys {
            for text in store.results(key)? {
                let mut result: Map<String, Value> = corvid_types::json::parse(&text).unwrap_or_default();
                if let Some(filter) = &plan.document_filter {
                    if filter.limit.is_some_and(|limit| counts.scanned >= limit as u64) {
                        break 'keys;
                    }
                    counts.scanned += 1;
                    if !filter.matches("", &Value::Object(result.clone()), &mut no_loads)? {
                        counts.rejected += 1;
                        continue;
                    }
                    counts.accepted += 1;
                    if counts.accepted <= plan.skip as u64 || response.results.len() >= plan.take {
                        continue;
                    }
                }
                hasher.add(text.as_bytes());
                result.insert("@metadata".into(), serde_json::json!({"@projection": false, "@index-score": 0}));
                response.results.push(Value::Object(result).to_string());
            }
        }
        if plan.document_filter.is_some() {
            response.total_results = counts.accepted;
            response.skipped_results = counts.rejected;
            response.scanned_results = Some(counts.scanned);
        }
        response.result_etag = hasher.finish() >> 11;
        Ok(())
    }

    fn run_reduce(
        &self,
        reduce: &ReducePlan,
        store: &corvid_storage::ReduceStore,
        plan: &Plan,
        processed: u64,
        response: &mut QueryResponse,
    ) -> Result<(), EngineError> {
        let mut rows = Vec::new();
        for row in store.rows()? {
            let groups: Vec<Value> =
                corvid_types::json::parse(&row.reduce_key).map_err(|e| EngineError::Internal(format!("reduce key is not JSON: {e}")))?;
            let row = Row { groups, values: row.values };
            if match &reduce.filter {
                Some(filter) => reduce.matches(&row, filter)?,
                None => true,
            } {
                rows.push(row);
            }
        }
        let rows = reduce.sort_rows(rows)?;
        response.total_results = rows.len() as u64;
        let mut hasher = VersionHasher::new();
        hasher.add(&processed.to_be_bytes());
        for row in rows.iter().skip(plan.skip).take(plan.take) {
            let rendered = reduce.render(row).to_string();
            hasher.add(rendered.as_bytes());
            response.results.push(rendered);
        }
        response.result_etag = hasher.finish() >> 11;
        Ok(())
    }

    /// Waits until the index has processed every write committed when the query started.
    fn wait_for_index(&self, handle: &crate::indexing::IndexHandle, timeout: Duration, cancel: &Cancellation) {
        let deadline = Instant::now() + timeout;
        let cutoff = self.watch.current();
        loop {
            let processed = handle.processed_etag.load(Ordering::Relaxed);
            if processed >= cutoff {
                return;
            }
            if let Ok(snapshot) = self.store.read() {
                if let Ok(false) = self.is_stale(&snapshot, handle, processed) {
                    return;
                }
            }
            if Instant::now() >= deadline || cancel.is_cancelled() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether documents or tombstones newer than `processed` exist for the index's collection.
    pub(crate) fn is_stale(
        &self,
        snapshot: &ReadTxn<'_>,
        handle: &crate::indexing::IndexHandle,
        processed: u64,
    ) -> Result<bool, EngineError> {
        // Documents loaded by the maps can live in any collection: any change may concern the index.
        let has_references = handle.references.as_ref().is_some_and(|r| !r.is_empty().unwrap_or(true));
        // Counters and time-series indexes follow changes that take the database's etags without touching documents.
        if handle.definition.is_all_docs() || has_references || handle.definition.item_source().is_some() {
            return Ok(snapshot.last_etag()? > processed);
        }
        let collection = id_key(&handle.definition.collection);
        if snapshot.last_collection_etag(&collection)? > processed {
            return Ok(true);
        }
        let mut stale = false;
        snapshot.tombstones_after_etag(processed, |t| {
            stale = t.collection.eq_ignore_ascii_case(&handle.definition.collection);
            !stale
        })?;
        Ok(stale)
    }
}
