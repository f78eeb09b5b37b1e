//! `/databases/{db}/cmpxchg`: compare-exchange values by key or key prefix, and their index-checked put
//! and delete. Answers have RavenDB's shapes: `{"Results": [{Key, Value, Index}]}` for reads,
//! `{Index, Value, Successful}` for writes.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{CompareExchangeOutcome, CompareExchangeValue};
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, not_found, written};
use crate::state::AppState;

/// The stored JSON of a value (always an object; written by this server).
fn stored_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

pub(super) fn item_json(key: &str, value: Option<&CompareExchangeValue>) -> Value {
    match value {
        Some(v) => json!({"Key": key, "Value": stored_json(&v.value), "Index": v.index}),
        // RavenDB answers a missing key of several with index -1 and no value.
        None => json!({"Key": key, "Value": null, "Index": -1}),
    }
}

fn outcome_json(outcome: &CompareExchangeOutcome) -> Value {
    json!({
        "Index": outcome.index,
        "Value": outcome.value.as_deref().map(stored_json),
        "Successful": outcome.successful,
    })
}

/// The key and expected index of a put or delete; both are required.
fn key_and_index(params: &QueryParams) -> ApiResult<(String, u64)> {
    let key = params.get_non_empty("key").ok_or_else(|| ApiError::BadRequest("Query string parameter 'key' is required".into()))?;
    let index = params.get("index").ok_or_else(|| ApiError::BadRequest("Query string parameter 'index' is required".into()))?;
    let index = index
        .trim()
        .parse::<i64>()
        .map_err(|_| ApiError::BadRequest(format!("Query string parameter 'index' must be an integer, but was '{index}'")))?;
    let index = u64::try_from(index).map_err(|_| ApiError::BadRequest("Index must be a non-negative number".into()))?;
    Ok((key.to_owned(), index))
}

pub async fn get(State(state): State<AppState>, Path(db): Path<String>, RawQuery(query): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let keys = params.get_all("key");
    let database = state.landlord.database(&db).await?;
    if !keys.is_empty() {
        let lookup = keys.clone();
        let values = blocking(move || Ok(database.compare_exchange_values(&lookup)?)).await?;
        if keys.len() == 1 && values[0].is_none() {
            return Ok(not_found());
        }
        let results: Vec<Value> = keys.iter().zip(&values).map(|(key, value)| item_json(key, value.as_ref())).collect();
        return Ok(json_value(StatusCode::OK, &json!({ "Results": results })));
    }
    let prefix = params.get("startsWith").unwrap_or_default().to_owned();
    let start = params.get_usize("start", 0);
    let page_size = params.get_usize("pageSize", i32::MAX as usize);
    let values = blocking(move || Ok(database.compare_exchange_values_starting_with(&prefix, start, page_size)?)).await?;
    let results: Vec<Value> = values.iter().map(|v| item_json(&v.key, Some(v))).collect();
    Ok(json_value(StatusCode::OK, &json!({ "Results": results })))
}

pub async fn put(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let (key, expected) = key_and_index(&params)?;
    let value = corvid_engine::validate_compare_exchange_value(&read_json(body, &headers, state.config.max_body_bytes).await?)?;
    let database = state.landlord.database(&db).await?;
    let outcome = written(|reply| database.submit_compare_exchange_put(key, value, expected, reply)).await?;
    Ok(json_value(StatusCode::OK, &outcome_json(&outcome)))
}

pub async fn delete(State(state): State<AppState>, Path(db): Path<String>, RawQuery(query): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let (key, expected) = key_and_index(&params)?;
    let database = state.landlord.database(&db).await?;
    let outcome = written(|reply| database.submit_compare_exchange_delete(key, expected, reply)).await?;
    Ok(json_value(StatusCode::OK, &outcome_json(&outcome)))
}

/// `CompareExchangeValueIncludes` of a load or query: per key, `{Key, Index, Value}` (index -1 and no value
/// where missing, so the session knows it without asking).
pub fn includes_json(
    database: &corvid_engine::Database,
    documents: &[&str],
    paths: &[String],
) -> Result<Value, corvid_engine::EngineError> {
    let mut out = serde_json::Map::new();
    for (key, value) in database.compare_exchange_includes(documents, paths)? {
        out.insert(key.clone(), item_json(&key, value.as_ref()));
    }
    Ok(Value::Object(out))
}
