//! `/databases/{db}/debug/io-metrics`: the recent journal writes and syncs, commits and checkpoints of the
//! database's store and of each index, in RavenDB's IoMetrics shape
//! (`{"Environments":[{"Path","Type","Files":[{"File","Status","Recent":[...],"History":[...]}]}]}`), and its
//! live form, a websocket sending each second the operations recorded since the last frame.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::{Database, IoEnvironment};
use corvid_types::format_date;
use corvid_types::io_metrics::{FileIo, IoEvent, IoSummary};
use serde_json::{json, Value};

use super::stats::humane;
use crate::error::ApiResult;
use crate::responses::json_value;
use crate::state::AppState;

/// How often the live feed looks for new operations.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// Milliseconds rounded to two decimals, as RavenDB writes durations.
fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e5).round() / 100.0
}

fn event_json(event: &IoEvent) -> Value {
    json!({
        "Start": format_date(event.start),
        "Size": event.size,
        "HumaneSize": humane(event.size),
        "FileSize": event.file_size,
        "HumaneFileSize": humane(event.file_size),
        "Duration": millis(event.duration),
        "Type": event.kind.name(),
    })
}

fn summary_json(summary: &IoSummary) -> Value {
    json!({
        "Start": format_date(summary.start),
        "End": format_date(summary.end),
        "Count": summary.count,
        "Size": summary.size,
        "HumaneSize": humane(summary.size),
        "FileSize": summary.file_size,
        "HumaneFileSize": humane(summary.file_size),
        "Duration": millis(Duration::from_nanos((summary.end - summary.start).max(0) as u64)),
        "ActiveDuration": millis(summary.active),
        "MaxDuration": millis(summary.max),
        "MinDuration": millis(summary.min),
        "Type": summary.kind.name(),
    })
}

fn file_json(name: &str, io: &FileIo) -> Value {
    json!({
        "File": name,
        "Status": "InUse",
        "Recent": io.recent.iter().map(event_json).collect::<Vec<_>>(),
        "History": io.summaries().iter().map(summary_json).collect::<Vec<_>>(),
    })
}

fn environment_json(environment: &IoEnvironment, files: Vec<Value>) -> Value {
    json!({
        "Path": environment.path.display().to_string(),
        "Type": environment.kind.name(),
        "Index": environment.index,
        "Files": files,
    })
}

/// Every environment with every file's recent operations and summaries.
pub fn io_metrics_json(database: &Database) -> Value {
    let environments: Vec<Value> = database
        .io_environments()
        .iter()
        .map(|environment| {
            let files = environment.metrics.files().iter().map(|(name, io)| file_json(name, io)).collect();
            environment_json(environment, files)
        })
        .collect();
    json!({"Environments": environments, "Performances": []})
}

/// `GET /databases/{db}/debug/io-metrics`.
pub async fn io_metrics(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    Ok(json_value(StatusCode::OK, &io_metrics_json(&database)))
}

/// `GET /databases/{db}/debug/io-metrics/live`: a websocket; the first frame is the whole record, each next
/// one (every second, when there is something new) the environments and files with the operations
/// recorded since, under `Recent`.
pub async fn live(State(state): State<AppState>, Path(db): Path<String>, upgrade: WebSocketUpgrade) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    Ok(upgrade.on_upgrade(move |socket| feed(database, socket)))
}

async fn feed(database: Arc<Database>, mut socket: WebSocket) {
    let mut sent: HashMap<String, u64> = HashMap::new();
    let mut first = true;
    loop {
        let mut environments = Vec::new();
        for environment in database.io_environments() {
            let key = environment.path.display().to_string();
            let after = sent.get(&key).copied().unwrap_or(0);
            // The newest operation sent: the next frame starts after it (an operation recorded while this frame
            // is read is in this one or the next, never lost).
            let mut newest = after;
            let files: Vec<Value> = if first {
                let files = environment.metrics.files();
                newest = files.values().flat_map(|io| io.recent.iter().map(|e| e.seq)).max().unwrap_or(after);
                files.iter().map(|(name, io)| file_json(name, io)).collect()
            } else {
                let fresh = environment.metrics.events_after(after);
                newest = fresh.values().flat_map(|events| events.iter().map(|e| e.seq)).max().unwrap_or(newest);
                fresh
                    .iter()
                    .map(|(name, events)| json!({"File": name, "Status": "InUse", "Recent": events.iter().map(event_json).collect::<Vec<_>>(), "History": []}))
                    .collect()
            };
            sent.insert(key, newest);
            if first || !files.is_empty() {
                environments.push(environment_json(&environment, files));
            }
        }
        if !environments.is_empty() {
            let frame = json!({"Environments": environments, "Performances": []}).to_string();
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
