//! `/admin/logs/configuration` (GET: the level and files in force; POST `{"Logs": {"MinLevel": "Debug"}}`:
//! changes the level until restart) and `/admin/logs/watch`, a websocket that streams every log line as a
//! text frame from the moment it connects.

use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::logs::sink;
use crate::responses::{json_value, no_content};
use crate::state::AppState;

pub async fn configuration() -> Response {
    let files = sink().file_settings();
    let level = sink().level();
    json_value(
        StatusCode::OK,
        &json!({"Logs": {
            "CurrentMinLevel": level, "MinLevel": level,
            "Path": files.path.map(|p| p.display().to_string()),
            "RetentionSizeInMb": files.retention_bytes >> 20,
            "RetentionTimeInHrs": files.retention_time.as_secs() / 3600,
            "MaxFileSizeInMb": files.max_file_bytes >> 20,
            "Json": files.json
        }}),
    )
}

pub async fn set_configuration(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let level = body.pointer("/Logs/MinLevel").or_else(|| body.get("MinLevel")).and_then(Value::as_str);
    let Some(level) = level else {
        return Err(ApiError::BadRequest("the body must hold Logs.MinLevel".into()));
    };
    let filter = match level.to_ascii_lowercase().as_str() {
        "trace" => "trace",
        "debug" => "debug",
        "info" | "information" | "operations" => "info",
        "warn" | "warning" => "warn",
        "error" | "fatal" | "none" | "off" => "error",
        _ => return Err(ApiError::BadRequest(format!("unknown log level '{level}'"))),
    };
    sink().set_level(filter).map_err(ApiError::BadRequest)?;
    Ok(no_content())
}

pub async fn watch(upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(stream_lines)
}

async fn stream_lines(mut socket: WebSocket) {
    let mut lines = sink().watch();
    loop {
        tokio::select! {
            line = lines.recv() => {
                let text = match line {
                    Ok(line) => line.to_string(),
                    Err(RecvError::Lagged(missed)) => format!("({missed} log lines were skipped: the watcher fell behind)"),
                    Err(RecvError::Closed) => return,
                };
                if socket.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
