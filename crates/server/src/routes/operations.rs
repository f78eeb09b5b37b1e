//! Long-running operations: patch and delete by query (`PATCH`/`DELETE /queries`), their state, the list
//! of operations, cancellation, and operation ids.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{ByQueryOptions, Operation};
use corvid_types::{format_date, NODE_TAG};
use serde_json::{json, Value};

use super::queries::{parse_timespan, request_from_body};
use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::state::AppState;

fn options(query: &QueryParams) -> ByQueryOptions {
    ByQueryOptions {
        // Absent means false, as in RavenDB (`GetBoolValueQueryString("allowStale") ?? false`): the operation
        // waits for the index to catch up, so documents written just before it are included.
        allow_stale: query.get("allowStale").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        stale_timeout: query.get_non_empty("staleTimeout").and_then(parse_timespan),
        max_ops_per_sec: query.get_non_empty("maxOpsPerSec").and_then(|v| v.trim().parse().ok()),
        details: query.get_bool("details"),
    }
}

fn started(operation: &Operation) -> Response {
    json_value(StatusCode::OK, &json!({"OperationId": operation.id, "OperationNodeTag": NODE_TAG}))
}

/// `PATCH /databases/{db}/queries` with `{"Query": IndexQuery}`.
pub async fn patch_by_query(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let index_query = body.get("Query").filter(|q| q.is_object()).ok_or_else(|| {
        ApiError::BadRequest("The body of a patch by query must be {\"Query\": {\"Query\": \"from ... update { ... }\"}}".into())
    })?;
    let request = request_from_body(index_query, &query)?;
    let options = options(&query);
    let database = state.landlord.database(&db).await?;
    let operation = blocking(move || Ok(database.start_patch_by_query(request, options)?)).await?;
    Ok(started(&operation))
}

/// `DELETE /databases/{db}/queries` with an IndexQuery body.
pub async fn delete_by_query(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = request_from_body(&read_json(body, &headers, state.config.max_body_bytes).await?, &query)?;
    let options = options(&query);
    let database = state.landlord.database(&db).await?;
    let operation = blocking(move || Ok(database.start_delete_by_query(request, options)?)).await?;
    Ok(started(&operation))
}

fn operation_id(query: &QueryParams) -> ApiResult<u64> {
    query.get_u64("id").ok_or_else(|| ApiError::BadRequest("Query string parameter 'id' (an operation id) is required".into()))
}

/// `GET /databases/{db}/operations/state?id=`.
pub async fn operation_state(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let id = operation_id(&QueryParams::parse(raw.as_deref())?)?;
    let database = state.landlord.database(&db).await?;
    let operation = database.operations().get(id).ok_or(ApiError::OperationDoesNotExist(id))?;
    Ok(json_value(StatusCode::OK, &operation.snapshot().state_json()))
}

/// `GET /operations/state?id=`: server-level operations (compaction).
pub async fn server_operation_state(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let id = operation_id(&QueryParams::parse(raw.as_deref())?)?;
    let operation = state.server_operations.get(id).ok_or(ApiError::OperationDoesNotExist(id))?;
    Ok(json_value(StatusCode::OK, &operation.snapshot().state_json()))
}

/// `POST /databases/{db}/operations/kill?id=`.
pub async fn kill_operation(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let id = operation_id(&QueryParams::parse(raw.as_deref())?)?;
    let database = state.landlord.database(&db).await?;
    if !database.operations().kill(id) {
        return Err(ApiError::OperationDoesNotExist(id));
    }
    Ok(no_content())
}

/// `GET /databases/{db}/operations[?id=]`: every known operation with its state (observability).
pub async fn list_operations(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let only = QueryParams::parse(raw.as_deref())?.get_u64("id");
    let database = state.landlord.database(&db).await?;
    let list: Vec<Value> = database
        .operations()
        .list()
        .into_iter()
        .filter(|s| only.is_none_or(|id| id == s.id))
        .map(|s| {
            json!({
                "Id": s.id, "TaskType": s.kind, "Description": {"Description": s.description},
                "StartTime": format_date(s.started_at), "State": s.state_json(), "Killable": true
            })
        })
        .collect();
    Ok(json_value(StatusCode::OK, &json!({ "Results": list })))
}

/// `GET /databases/{db}/operations/next-operation-id`.
pub async fn next_operation_id(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    Ok(json_value(StatusCode::OK, &json!({"Id": database.operations().next_id(), "NodeTag": NODE_TAG})))
}
