//! `POST /admin/compact` (the clients' `CompactDatabaseOperation`): compacts a database's data file as a
//! server-level operation, which the clients wait on through `GET /operations/state?id=`.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::json_value;
use crate::state::AppState;

pub async fn compact(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let settings = read_json(body, &headers, state.config.max_body_bytes).await?;
    let name = settings
        .get("DatabaseName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::BadRequest("Compacting requires a DatabaseName".into()))?;
    let entry = state.landlord.entry(name).ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
    let id = state.operation_ids.fetch_add(1, Ordering::Relaxed);
    let operation = state.server_operations.start(Some(id), "DatabaseCompact", format!("Compacting database {}", entry.name));
    let landlord = state.landlord.clone();
    let spawned = std::thread::Builder::new().name(format!("compact:{}", entry.name)).spawn(move || {
        match landlord.compact(&entry.name) {
            Ok(done) => {
                let megabytes = |bytes: u64| bytes / (1 << 20);
                operation.complete(json!({
                    "Message": format!("Compacted database {}: {} bytes -> {} bytes", entry.name, done.bytes_before, done.bytes_after),
                    "SizeBeforeCompactionInMb": megabytes(done.bytes_before),
                    "SizeAfterCompactionInMb": megabytes(done.bytes_after),
                    "Processed": true,
                    "Skipped": false,
                    // Index files are tantivy's segments, which merge on their own: nothing to compact.
                    "IndexesResults": {}
                }));
            }
            Err(e) => operation.fail(e),
        }
    });
    spawned.map_err(|e| ApiError::Internal(format!("could not start the compaction: {e}")))?;
    Ok(json_value(StatusCode::OK, &json!({"OperationId": id, "OperationNodeTag": NODE_TAG})))
}
