//! HiLo ranges and identities.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::HiloRequest;
use serde_json::{json, Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content, written};
use crate::state::AppState;

pub async fn next(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = HiloRequest {
        tag: query.get_non_empty("tag").ok_or_else(|| ApiError::BadRequest("HiLo requires 'tag'".into()))?.to_owned(),
        last_batch_size: query.get_u64("lastBatchSize").unwrap_or(0),
        last_range_at: query.get_non_empty("lastRangeAt").map(str::to_owned),
        separator: query.get_non_empty("identityPartsSeparator").unwrap_or("/").to_owned(),
        last_max: query.get_u64("lastMax").unwrap_or(0),
    };
    let database = state.landlord.database(&db).await?;
    let range = written(|reply| database.submit_hilo_next(request, reply)).await?;
    Ok(json_value(
        StatusCode::CREATED,
        &json!({"Prefix": range.prefix, "Low": range.low, "High": range.high, "LastSize": range.last_size,
                "ServerTag": range.server_tag, "LastRangeAt": range.last_range_at}),
    ))
}

pub async fn return_range(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let tag = query.get_non_empty("tag").ok_or_else(|| ApiError::BadRequest("HiLo return requires 'tag'".into()))?.to_owned();
    let end = query.get_u64("end").ok_or_else(|| ApiError::BadRequest("HiLo return requires 'end'".into()))?;
    let last = query.get_u64("last").ok_or_else(|| ApiError::BadRequest("HiLo return requires 'last'".into()))?;
    let database = state.landlord.database(&db).await?;
    written(|reply| database.submit_hilo_return(tag, end, last, reply)).await?;
    Ok(no_content())
}

fn identity_name(query: &QueryParams) -> ApiResult<String> {
    query.get_non_empty("name").map(str::to_owned).ok_or_else(|| ApiError::BadRequest("Identities require 'name'".into()))
}

pub async fn identity_next(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = identity_name(&query)?;
    let database = state.landlord.database(&db).await?;
    let value = written(|reply| database.submit_identity_next(name, reply)).await?;
    Ok(json_value(StatusCode::OK, &json!({ "NewIdentityValue": value })))
}

pub async fn identity_seed(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = identity_name(&query)?;
    let value = query.get_u64("value").ok_or_else(|| ApiError::BadRequest("Seeding an identity requires a numeric 'value'".into()))?;
    let force = query.get_bool("force");
    let database = state.landlord.database(&db).await?;
    let value = written(|reply| database.submit_identity_seed(name, value, force, reply)).await?;
    Ok(json_value(StatusCode::OK, &json!({ "NewSeedValue": value })))
}

pub async fn identities(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let all = blocking(move || Ok(database.identities()?)).await?;
    let map: Map<String, Value> = all.into_iter().map(|(k, v)| (k, json!(v))).collect();
    Ok(json_value(StatusCode::OK, &Value::Object(map)))
}
