//! `/databases/{db}/docs`: load by id(s) with includes, list by prefix, and single-document PUT, DELETE
//! and HEAD.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{BatchCommand, BatchReply, ExpectedChangeVector, IncomingDocument, PageRequest};
use corvid_types::push_json_string;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::request_headers;
use crate::responses::{blocking, json, json_value, no_content, not_found, written};
use crate::state::AppState;

const DEFAULT_PAGE_SIZE: usize = 1024 * 1024;
/// Loads of at most this many ids run on the async worker; more go to the blocking pool.
const INLINE_READ_IDS: usize = 64;

pub async fn get_docs(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let ids = query.get_all("id");
    load(state, db, headers, query, ids).await
}

/// Long id lists arrive as `POST /docs` with `{"Ids": [...]}`.
pub async fn post_docs(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let ids = request
        .get("Ids")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::BadRequest("The body must be {\"Ids\": [...]}".into()))?
        .iter()
        // RavenDB skips null ids (the Node client sends the ids it was given, nulls included).
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| ApiError::BadRequest("Every entry of Ids must be a string or null".into())))
        .collect::<Result<Vec<_>, _>>()?;
    load(state, db, headers, query, ids).await
}

fn etag_header(hash: u64) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{hash}\"")).expect("digits are a valid header value")
}

fn not_modified(headers: &HeaderMap, hash: u64) -> ApiResult<bool> {
    Ok(request_headers::tag(headers, "if-none-match")?.is_some_and(|tag| tag == hash.to_string()))
}

async fn load(state: AppState, db: String, headers: HeaderMap, query: QueryParams, ids: Vec<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let metadata_only = query.get_bool("metadataOnly");
    if ids.is_empty() {
        let request = PageRequest {
            starts_with: query.get("startsWith").map(str::to_owned),
            matches: query.get_non_empty("matches").map(str::to_owned),
            exclude: query.get_non_empty("exclude").map(str::to_owned),
            start_after: query.get_non_empty("startAfter").map(str::to_owned),
            start: query.get_usize("start", 0),
            page_size: query.get_usize("pageSize", DEFAULT_PAGE_SIZE),
            metadata_only,
        };
        let (docs, hash) = blocking(move || Ok(database.load_page(&request)?)).await?;
        if not_modified(&headers, hash)? {
            return Ok(StatusCode::NOT_MODIFIED.into_response());
        }
        let mut body = String::with_capacity(docs.iter().map(String::len).sum::<usize>() + 32);
        body.push_str("{\"Results\":[");
        body.push_str(&docs.join(","));
        body.push_str("]}");
        let mut response = json(StatusCode::OK, body);
        response.headers_mut().insert("ETag", etag_header(hash));
        return Ok(response);
    }
    let includes = query.get_all("include");
    let counter_names = query.get_all("counter");
    let counter_ids = if counter_names.is_empty() { Vec::new() } else { ids.clone() };
    let counter_db = database.clone();
    let cmpxchg_paths = query.get_all("cmpxchg");
    let cmpxchg_db = database.clone();
    let series_includes = super::time_series::load_includes(&query)?;
    let (series_db, series_ids) = (database.clone(), if series_includes.is_empty() { Vec::new() } else { ids.clone() });
    let single = ids.len() == 1;
    // Point reads are a few B-tree lookups on the memory map: run them in place (see
    // docs/decisions/0004-inline-point-reads.md); long id lists go to the blocking pool.
    let loaded = if ids.len() <= INLINE_READ_IDS {
        database.load(&ids, &includes, metadata_only)?
    } else {
        blocking(move || Ok(database.load(&ids, &includes, metadata_only)?)).await?
    };
    if single && loaded.results[0].is_none() {
        return Ok(not_found());
    }
    // One document without includes: its change vector is the ETag (conditional loads read it back).
    let single_cv = if single && loaded.includes.is_empty() { loaded.change_vectors[0].clone() } else { None };
    let etag = match &single_cv {
        Some(cv) => HeaderValue::from_str(&format!("\"{cv}\"")).unwrap_or_else(|_| etag_header(loaded.version_hash)),
        None => etag_header(loaded.version_hash),
    };
    let unchanged = match &single_cv {
        Some(cv) => request_headers::tag(&headers, "if-none-match")?.is_some_and(|tag| &tag == cv),
        None => not_modified(&headers, loaded.version_hash)?,
    };
    // The hash covers documents only: a load that includes compare-exchange values is always answered in full.
    if unchanged && cmpxchg_paths.is_empty() {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    let mut body = String::with_capacity(256);
    body.push_str("{\"Results\":[");
    for (i, doc) in loaded.results.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(doc.as_deref().unwrap_or("null"));
    }
    body.push_str("],\"Includes\":{");
    for (i, (id, doc)) in loaded.includes.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        push_json_string(&mut body, id);
        body.push(':');
        body.push_str(doc);
    }
    body.push('}');
    if !counter_ids.is_empty() {
        let counters = blocking(move || Ok(super::counters::includes_json(&counter_db, &counter_ids, &counter_names)?)).await?;
        body.push_str(",\"CounterIncludes\":");
        body.push_str(&counters.to_string());
    }
    if !cmpxchg_paths.is_empty() {
        let documents: Vec<String> = loaded.results.iter().flatten().cloned().collect();
        let values = blocking(move || {
            let documents: Vec<&str> = documents.iter().map(String::as_str).collect();
            Ok(super::compare_exchange::includes_json(&cmpxchg_db, &documents, &cmpxchg_paths)?)
        })
        .await?;
        body.push_str(",\"CompareExchangeValueIncludes\":");
        body.push_str(&values.to_string());
    }
    if !series_ids.is_empty() {
        let series = blocking(move || Ok(super::time_series::load_includes_json(&series_db, &series_ids, &series_includes)?)).await?;
        body.push_str(",\"TimeSeriesIncludes\":");
        body.push_str(&series.to_string());
    }
    body.push('}');
    let mut response = json(StatusCode::OK, body);
    response.headers_mut().insert("ETag", etag);
    Ok(response)
}

pub(super) fn required_id(query: &QueryParams) -> ApiResult<String> {
    query
        .get_non_empty("id")
        .map(str::to_owned)
        .ok_or_else(|| ApiError::BadRequest("Query string parameter 'id' is required and must not be empty".into()))
}

pub async fn head_doc(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = required_id(&query)?;
    let database = state.landlord.database(&db).await?;
    let change_vector = database.change_vector(&id)?; // a point read: in place, like `load`
    let Some(cv) = change_vector else {
        return Ok(not_found());
    };
    let status = if request_headers::tag(&headers, "if-none-match")?.is_some_and(|tag| tag == cv) {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut response = status.into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("\"{cv}\"")) {
        response.headers_mut().insert("ETag", v);
    }
    Ok(response)
}

async fn run_single(state: &AppState, db: &str, command: BatchCommand) -> ApiResult<BatchReply> {
    let database = state.landlord.database(db).await?;
    let mut replies = written(|reply| database.submit_batch(vec![command], reply)).await?;
    replies.pop().ok_or_else(|| ApiError::Internal("the batch returned no reply".into()))
}

pub async fn put_doc(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = required_id(&query)?;
    let document = IncomingDocument::from_value(read_json(body, &headers, state.config.max_body_bytes).await?)?;
    let expected = ExpectedChangeVector::from_wire(request_headers::tag(&headers, "if-match")?.as_deref());
    match run_single(&state, &db, BatchCommand::Put { id, expected, document }).await? {
        BatchReply::Put { id, change_vector, .. } => Ok(json_value(StatusCode::CREATED, &json!({"Id": id, "ChangeVector": change_vector}))),
        _ => Err(ApiError::Internal("PUT answered with another reply".into())),
    }
}

pub async fn delete_doc(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = required_id(&query)?;
    let expected = ExpectedChangeVector::from_wire(request_headers::tag(&headers, "if-match")?.as_deref());
    run_single(&state, &db, BatchCommand::Delete { id, expected }).await?;
    Ok(no_content())
}
