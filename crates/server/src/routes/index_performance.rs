//! `/databases/{db}/indexes/performance`: each index's last batches in RavenDB's IndexPerformanceStats shape
//! (`{"Results": [{"Name", "Etag", "Performance": [IndexingPerformanceStats...]}]}`), and its live form, a
//! websocket that sends the batches each second as they finish (the Studio's indexing graph).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::indexing::BatchPerformance;
use corvid_engine::{Database, IndexPerformance};
use corvid_types::format_date;
use serde_json::{json, Value};
use std::sync::Arc;

use crate::error::ApiResult;
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// How often the live feed looks for finished batches.
const LIVE_EVERY: Duration = Duration::from_secs(1);

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e5).round() / 100.0
}

/// One stage of a batch as an IndexingPerformanceOperation.
fn operation(name: &str, duration: Duration) -> Value {
    json!({"Name": name, "DurationInMs": millis(duration), "Operations": []})
}

/// One batch as RavenDB's IndexingPerformanceStats.
pub fn batch_json(batch: &BatchPerformance) -> Value {
    let completed = batch.started.saturating_add(batch.duration.as_nanos() as i64);
    let mut stages = vec![operation("Storage/DocumentRead", batch.read)];
    let mut map = operation("Map", batch.map);
    map["MapDetails"] = json!({
        "BatchCompleteReason": batch.end.describe(), "ProcessPrivateMemory": batch.process_resident_bytes,
        "ProcessWorkingSet": batch.process_resident_bytes, "CurrentlyAllocated": batch.index_memory_bytes, "AllocationBudget": 0
    });
    stages.push(map);
    if batch.reduced_keys > 0 {
        let mut reduce = operation("Reduce", batch.reduce);
        reduce["ReduceDetails"] = json!({
            "ReduceAttempts": batch.reduced_keys, "ReduceSuccesses": batch.reduced_keys - batch.reduce_errors,
            "ReduceErrors": batch.reduce_errors, "ProcessPrivateMemory": batch.process_resident_bytes,
            "ProcessWorkingSet": batch.process_resident_bytes, "CurrentlyAllocated": batch.index_memory_bytes
        });
        stages.push(reduce);
    }
    let mut commit = operation("Storage/Commit", batch.commit);
    commit["CommitDetails"] = json!({"NumberOfModifiedPages": 0, "NumberOf4KbsWrittenToDisk": 0});
    stages.push(commit);
    stages.push(operation("Merge", batch.merge));
    json!({
        "Id": batch.id,
        "Started": format_date(batch.started),
        "Completed": format_date(completed),
        "DurationInMs": millis(batch.duration),
        "InputCount": batch.documents_read + batch.tombstones_read,
        "SuccessCount": batch.mapped + batch.tombstones_read,
        "FailedCount": batch.map_errors + batch.reduce_errors,
        "OutputCount": batch.entries_written,
        "DocumentsSize": batch.documents_bytes,
        "AllocatedBytes": {"SizeInBytes": batch.index_memory_bytes},
        // Corvid's own, beside RavenDB's fields: the split of the input and where the batch ended.
        "DocumentsRead": batch.documents_read,
        "TombstonesRead": batch.tombstones_read,
        "LastEtag": batch.cut,
        "Details": {"Name": "Indexing", "DurationInMs": millis(batch.duration), "Operations": stages}
    })
}

fn index_json(index: &IndexPerformance) -> Value {
    json!({"Name": index.name, "Etag": index.etag, "Performance": index.batches.iter().map(|b| batch_json(b)).collect::<Vec<_>>()})
}

/// `GET /databases/{db}/indexes/performance[?name=...]`.
pub async fn performance(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let names: Vec<String> = query.get_all("name").into_iter().filter(|n| !n.is_empty()).collect();
    let database = state.landlord.database(&db).await?;
    let indexes = blocking(move || Ok(database.index_performance(&names, &|_| 0)?)).await?;
    Ok(json_value(StatusCode::OK, &json!({"Results": indexes.iter().map(index_json).collect::<Vec<_>>()})))
}

/// `GET /databases/{db}/indexes/performance/live[?name=...]`: a websocket; each frame is a JSON array of
/// IndexPerformanceStats with the batches finished since the last frame (the first frame: every kept one).
pub async fn live(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
    upgrade: WebSocketUpgrade,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let names: Vec<String> = query.get_all("name").into_iter().filter(|n| !n.is_empty()).collect();
    let database = state.landlord.database(&db).await?;
    Ok(upgrade.on_upgrade(move |socket| feed(database, names, socket)))
}

async fn feed(database: Arc<Database>, names: Vec<String>, mut socket: WebSocket) {
    let mut sent: HashMap<String, u64> = HashMap::new();
    let mut first = true;
    loop {
        let last = sent.clone();
        let (db, wanted) = (database.clone(), names.clone());
        let fresh = tokio::task::spawn_blocking(move || db.index_performance(&wanted, &|name| last.get(name).copied().unwrap_or(0))).await;
        let Ok(Ok(indexes)) = fresh else { return };
        let changed: Vec<&IndexPerformance> = indexes.iter().filter(|i| first || !i.batches.is_empty()).collect();
        for index in &changed {
            if let Some(newest) = index.batches.last() {
                sent.insert(index.name.clone(), newest.id);
            }
        }
        if !changed.is_empty() {
            let frame = Value::Array(changed.into_iter().map(index_json).collect()).to_string();
            if socket.send(Message::Text(frame.into())).await.is_err() {
                return;
            }
        }
        first = false;
        tokio::select! {
            () = tokio::time::sleep(LIVE_EVERY) => {}
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
