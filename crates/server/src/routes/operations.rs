//! Long-running operations: patch and delete by query (`PATCH`/`DELETE /queries`), their state (rendered
//! here as RavenDB's `OperationState`, a failure through the error table), the list of operations,
//! cancellation, and operation ids.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{ByQueryDetail, ByQueryOptions, ByQueryResult, Operation, OperationResult, OperationSnapshot, OperationState};
use corvid_types::{format_date, NODE_TAG};
use serde_json::{json, Map, Value};

use super::queries::request_from_body;
use crate::body::read_json;
use crate::error::{ApiError, ApiResult, ErrorAnswer};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::state::AppState;
use corvid_types::parse_time_span;

fn options(query: &QueryParams) -> ByQueryOptions {
    ByQueryOptions {
        // Absent means false, as in RavenDB (`GetBoolValueQueryString("allowStale") ?? false`): the operation
        // waits for the index to catch up, so documents written just before it are included.
        allow_stale: query.get("allowStale").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        stale_timeout: query.get_non_empty("staleTimeout").and_then(parse_time_span),
        max_ops_per_sec: query.get_non_empty("maxOpsPerSec").and_then(|v| v.trim().parse().ok()),
        details: query.get_bool("details"),
    }
}

/// RavenDB's `OperationState` JSON: the status, progress while running, the result once completed, and the
/// error table's answer (with its `StatusCode`) once faulted.
pub(crate) fn state_json<R, F>(
    snapshot: &OperationSnapshot<R, F>,
    result_json: impl FnOnce(&R) -> Value,
    answer: impl FnOnce(&F) -> ErrorAnswer,
) -> Value {
    let status = snapshot.state.name();
    match &snapshot.state {
        OperationState::InProgress => {
            let progress = json!({
                "$type": "Raven.Client.Documents.Operations.DeterminateProgress, Raven.Client",
                "Processed": snapshot.processed, "Total": snapshot.total
            });
            json!({"Status": status, "Progress": progress, "Result": null})
        }
        OperationState::Completed(result) => json!({"Status": status, "Progress": null, "Result": result_json(result)}),
        OperationState::Canceled => json!({"Status": status, "Progress": null, "Result": null}),
        OperationState::Faulted(failure) => {
            let answer = answer(failure);
            let mut exception = Map::new();
            exception.insert("$type".into(), json!("Raven.Client.Documents.Operations.OperationExceptionResult, Raven.Client"));
            exception.extend(answer.fields());
            exception.insert("StatusCode".into(), json!(answer.status.as_u16()));
            json!({"Status": status, "Progress": null, "Result": exception})
        }
    }
}

/// The state of an operation of a database.
pub(crate) fn database_state_json(snapshot: &OperationSnapshot) -> Value {
    state_json(snapshot, result_json, |e| ApiError::from(e).answer())
}

/// What a completed operation of a database reports.
fn result_json(result: &OperationResult) -> Value {
    match result {
        OperationResult::ByQuery(result) => by_query_result_json(result),
        OperationResult::BulkInsert(summary) => super::bulk_insert::summary_json(summary),
        OperationResult::Smuggler(result) => super::smuggler::result_json(result),
        OperationResult::Backup(summary) => super::backups::result_json(summary),
        OperationResult::Revert(summary) => json!({
            "$type": "Raven.Server.Documents.Revisions.RevertResult, Raven.Server",
            "ScannedRevisions": summary.scanned_revisions, "ScannedDocuments": summary.scanned_documents,
            "RevertedDocuments": summary.reverted_documents, "Warnings": {}
        }),
    }
}

/// RavenDB's `BulkOperationResult`.
fn by_query_result_json(result: &ByQueryResult) -> Value {
    let details: Vec<Value> = result
        .details
        .iter()
        .map(|detail| match detail {
            ByQueryDetail::Patched { id, change_vector, status } => json!({
                "$type": "Raven.Client.Documents.Operations.BulkOperationResult+PatchDetails, Raven.Client",
                "Id": id, "ChangeVector": change_vector, "Status": status.as_str()
            }),
            ByQueryDetail::Deleted { id } => json!({
                "$type": "Raven.Client.Documents.Operations.BulkOperationResult+DeleteDetails, Raven.Client",
                "Id": id, "Etag": null
            }),
        })
        .collect();
    json!({
        "$type": "Raven.Client.Documents.Operations.BulkOperationResult, Raven.Client",
        "Total": result.changed, "DocumentsProcessed": result.changed, "AttachmentsProcessed": 0, "CountersProcessed": 0,
        "TimeSeriesProcessed": 0, "Query": result.query, "Details": details
    })
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
    Ok(json_value(StatusCode::OK, &database_state_json(&operation.snapshot())))
}

/// `GET /operations/state?id=`: server-level operations (compaction).
pub async fn server_operation_state(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let id = operation_id(&QueryParams::parse(raw.as_deref())?)?;
    let operation = state.server_operations.get(id).ok_or(ApiError::OperationDoesNotExist(id))?;
    Ok(json_value(StatusCode::OK, &state_json(&operation.snapshot(), Value::clone, ApiError::answer)))
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
                "StartTime": format_date(s.started_at), "State": database_state_json(&s), "Killable": true
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

#[cfg(test)]
mod tests {
    use corvid_engine::{EngineError, Operations};

    use super::*;

    #[test]
    fn state_json_shows_progress_then_the_ending() {
        let ops: Operations = Operations::new();
        let op = ops.start(None, "DeleteByQuery", "from Users".into());
        op.set_total(10);
        op.add_processed(4);
        let state = database_state_json(&op.snapshot());
        assert_eq!(state["Status"], "InProgress");
        assert_eq!(state["Progress"]["Processed"], 4);
        assert_eq!(state["Progress"]["Total"], 10);
        op.complete(OperationResult::ByQuery(ByQueryResult { query: "from Users".into(), changed: 3, details: Vec::new() }));
        let state = database_state_json(&op.snapshot());
        assert_eq!(state["Status"], "Completed");
        assert_eq!(state["Result"]["Total"], 3);
        assert_eq!(state["Result"]["Query"], "from Users");
    }

    #[test]
    fn a_failure_is_answered_by_the_error_table() {
        let ops: Operations = Operations::new();
        let op = ops.start(None, "UpdateByQuery", String::new());
        op.fail(EngineError::DocumentDoesNotExist("users/1".into()));
        let state = database_state_json(&op.snapshot());
        assert_eq!(state["Status"], "Faulted");
        let result = state["Result"].as_object().unwrap();
        let keys: Vec<&str> = result.keys().map(String::as_str).collect();
        assert_eq!(keys, ["$type", "Type", "Message", "Error", "StatusCode"]);
        assert_eq!(result["Type"], "Raven.Client.Exceptions.Documents.DocumentDoesNotExistException");
        assert_eq!(result["Message"], "Document 'users/1' does not exist");
        assert_eq!(result["StatusCode"], 404, "the status a request failing with the same error gets");
    }
}
