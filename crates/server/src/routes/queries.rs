//! `/databases/{db}/queries`: RQL queries (POST with an IndexQuery body, or GET with the query string).

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{Cancellation, QueryRequest, QueryResponse};
use corvid_types::{format_date, parse_time_span, push_json_string, NODE_TAG};
use serde_json::{Map, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::request_headers;
use crate::responses::{json, json_value};
use crate::state::AppState;

pub fn request_from_body(body: &Value, query: &QueryParams) -> ApiResult<QueryRequest> {
    let text = body
        .get("Query")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::BadRequest("The query body must have a 'Query' string".into()))?;
    let parameters = match body.get("QueryParameters") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(ApiError::BadRequest("QueryParameters must be an object".into())),
    };
    let usize_field = |name: &str| body.get(name).and_then(Value::as_u64).map(|v| v as usize);
    Ok(QueryRequest {
        query: text.to_owned(),
        parameters,
        start: usize_field("Start"),
        page_size: usize_field("PageSize"),
        wait_for_non_stale: body.get("WaitForNonStaleResults").and_then(Value::as_bool).unwrap_or(false),
        wait_timeout: body.get("WaitForNonStaleResultsTimeout").and_then(Value::as_str).and_then(parse_time_span),
        metadata_only: query.get_bool("metadataOnly"),
        for_operation: false,
        cancel: Cancellation::default(),
    })
}

pub fn request_from_query_string(query: &QueryParams) -> ApiResult<QueryRequest> {
    let text = query.get_non_empty("query").ok_or_else(|| ApiError::BadRequest("Query string parameter 'query' is required".into()))?;
    let parameters = match query.get_non_empty("parameters") {
        Some(p) => match serde_json::from_str(p) {
            Ok(Value::Object(map)) => map,
            _ => return Err(ApiError::BadRequest("'parameters' must be a JSON object".into())),
        },
        None => Map::new(),
    };
    Ok(QueryRequest {
        query: text.to_owned(),
        parameters,
        start: query.get_u64("start").map(|v| v as usize),
        page_size: query.get_u64("pageSize").map(|v| v as usize),
        wait_for_non_stale: query.get_bool("waitForNonStaleResults"),
        wait_timeout: query.get_u64("waitForNonStaleResultsTimeoutInMs").map(Duration::from_millis),
        metadata_only: query.get_bool("metadataOnly"),
        for_operation: false,
        cancel: Cancellation::default(),
    })
}

pub async fn post_query(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = request_from_body(&read_json(body, &headers, state.config.max_body_bytes).await?, &query)?;
    if explain_requested(&query) {
        return explain(state, db, request).await;
    }
    run(state, db, headers, request).await
}

pub async fn get_query(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = request_from_query_string(&query)?;
    if explain_requested(&query) {
        return explain(state, db, request).await;
    }
    run(state, db, headers, request).await
}

/// `?debug=explain`: the query is not run; the answer says which index it would use and why.
fn explain_requested(query: &QueryParams) -> bool {
    query.get_non_empty("debug").is_some_and(|d| d.eq_ignore_ascii_case("explain"))
}

async fn explain(state: AppState, db: String, request: QueryRequest) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let cancel = request.cancel.clone();
    let explained = state.queries.run(&cancel, move || database.explain_query(&request)).await?;
    let results: Vec<Value> = explained.explanations.iter().map(|e| serde_json::json!({"Index": e.index, "Reason": e.reason})).collect();
    Ok(json_value(StatusCode::OK, &serde_json::json!({"IndexName": explained.index_name, "Results": results})))
}

async fn run(state: AppState, db: String, headers: HeaderMap, request: QueryRequest) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let started = Instant::now();
    // Queries may create an index, wait for indexing, or scan: never on the async workers, and only as
    // many at once as the gate admits.
    let cancel = request.cancel.clone();
    let result = state.queries.run(&cancel, move || database.query(&request)).await?;
    if request_headers::tag(&headers, "if-none-match")?.is_some_and(|tag| tag == result.result_etag.to_string()) {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    let mut response = json(StatusCode::OK, response_json(&result, started.elapsed().as_millis()));
    if let Ok(v) = HeaderValue::from_str(&result.result_etag.to_string()) {
        response.headers_mut().insert("ETag", v);
    }
    Ok(response)
}

fn response_json(result: &QueryResponse, duration_ms: u128) -> String {
    let mut out = String::with_capacity(256 + result.results.iter().map(String::len).sum::<usize>());
    out.push_str(&format!(
        "{{\"TotalResults\":{},\"LongTotalResults\":{},\"SkippedResults\":{},\"DurationInMs\":{duration_ms},\"IncludedPaths\":",
        result.total_results, result.total_results, result.skipped_results
    ));
    out.push_str(&Value::from(result.included_paths.clone()).to_string());
    if let Some(scanned) = result.scanned_results {
        out.push_str(&format!(",\"ScannedResults\":{scanned}"));
    }
    out.push_str(",\"IndexName\":");
    push_json_string(&mut out, &result.index_name);
    out.push_str(",\"Results\":[");
    out.push_str(&result.results.join(","));
    out.push_str("],\"Includes\":{");
    for (i, (id, doc)) in result.includes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, id);
        out.push(':');
        out.push_str(doc);
    }
    out.push('}');
    if !result.highlightings.is_empty() {
        let mut fields = Map::new();
        for (field, per_key) in &result.highlightings {
            let keys: Map<String, Value> = per_key.iter().map(|(k, f)| (k.clone(), Value::from(f.clone()))).collect();
            fields.insert(field.clone(), Value::Object(keys));
        }
        out.push_str(",\"Highlightings\":");
        out.push_str(&Value::Object(fields).to_string());
    }
    if !result.explanations.is_empty() {
        let explanations: Map<String, Value> = result.explanations.iter().map(|(k, e)| (k.clone(), Value::from(e.clone()))).collect();
        out.push_str(",\"Explanations\":");
        out.push_str(&Value::Object(explanations).to_string());
    }
    if result.timings {
        let timings =
            serde_json::json!({"DurationInMs": duration_ms, "Timings": {"Query": {"DurationInMs": duration_ms, "Timings": null}}});
        out.push_str(",\"Timings\":");
        out.push_str(&timings.to_string());
    }
    if let Some(counters) = &result.counter_includes {
        let mut includes = serde_json::Map::new();
        for (id, list) in counters {
            includes.insert(id.clone(), Value::Array(list.iter().map(super::counters::detail_json).collect()));
        }
        let names: serde_json::Map<String, Value> =
            result.included_counter_names.iter().map(|(id, n)| (id.clone(), Value::from(n.clone()))).collect();
        out.push_str(",\"CounterIncludes\":");
        out.push_str(&Value::Object(includes).to_string());
        out.push_str(",\"IncludedCounterNames\":");
        out.push_str(&Value::Object(names).to_string());
    }
    if let Some(series) = &result.time_series_includes {
        out.push_str(",\"TimeSeriesIncludes\":");
        out.push_str(&super::time_series::series_includes_json(series).to_string());
    }
    if let Some(values) = &result.compare_exchange_includes {
        let includes: serde_json::Map<String, Value> =
            values.iter().map(|(key, value)| (key.clone(), super::compare_exchange::item_json(key, value.as_ref()))).collect();
        out.push_str(",\"CompareExchangeValueIncludes\":");
        out.push_str(&Value::Object(includes).to_string());
    }
    out.push_str(&format!(
        ",\"IndexTimestamp\":\"{}\",\"LastQueryTime\":\"{}\",\"IsStale\":{},\"ResultEtag\":{},\"NodeTag\":\"{NODE_TAG}\"}}",
        format_date(result.index_timestamp),
        format_date(result.last_query_time),
        result.is_stale,
        result.result_etag
    ));
    out
}
