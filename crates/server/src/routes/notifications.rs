//! A database's notifications: today the slow-I/O performance hint, built from the operations its
//! environments recorded over the slow-I/O threshold (`slow_io_threshold_ms`). Kept while the database
//! is loaded, until dismissed. `GET /databases/{db}/notifications` lists them (Corvid's; RavenDB pushes the
//! same objects through its notification-center websocket), `POST /databases/{db}/notification-center/dismiss?id=`
//! dismisses one, as RavenDB's Studio does.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::Database;
use corvid_types::format_date;
use serde_json::{json, Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{json_value, no_content};
use crate::state::AppState;

/// The id RavenDB gives the slow-I/O hint.
const SLOW_IO_ID: &str = "PerformanceHint/SlowIO";

/// The database's notifications, newest information first.
pub fn notifications(database: &Database) -> Vec<Value> {
    let environments = database.io_environments();
    let mut writes = Map::new();
    let mut newest = i64::MIN;
    let mut total = 0;
    for environment in &environments {
        let (slow, count) = environment.metrics.slow();
        total += count;
        for entry in slow {
            let path = environment.path.join(&entry.file).display().to_string();
            let key = format!("{path}/{}", entry.event.kind.name());
            newest = newest.max(entry.event.start);
            let mb = entry.event.size as f64 / (1024.0 * 1024.0);
            let seconds = entry.event.duration.as_secs_f64();
            let previous = writes.get(&key).and_then(|v| v.get("Count")).and_then(Value::as_u64).unwrap_or(0);
            writes.insert(
                key,
                json!({
                    "Path": path,
                    "Type": entry.event.kind.name(),
                    "Date": format_date(entry.event.start),
                    "Count": previous + 1,
                    "DurationInSec": (seconds * 1000.0).round() / 1000.0,
                    "DataWrittenInMb": (mb * 1000.0).round() / 1000.0,
                    "SpeedInMbPerSec": if seconds > 0.0 { (mb / seconds * 1000.0).round() / 1000.0 } else { 0.0 },
                    "Index": environment.index,
                }),
            );
        }
    }
    if writes.is_empty() {
        return Vec::new();
    }
    let threshold = environments.first().map_or(0, |e| e.metrics.slow_threshold().as_millis());
    vec![json!({
        "Id": SLOW_IO_ID,
        "CreatedAt": format_date(newest),
        "Type": "PerformanceHint",
        "HintType": "SlowIO",
        "Title": "An extremely slow write to disk",
        "Message": format!("{total} disk operation(s) took {threshold} ms or more (slow_io_threshold_ms): the disk may be overloaded or failing"),
        "Severity": "Warning",
        "IsPersistent": true,
        "Database": database.name(),
        "Details": {"Writes": writes},
    })]
}

/// `GET /databases/{db}/notifications`: `{"Results": [notification...]}`.
pub async fn list(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    Ok(json_value(StatusCode::OK, &json!({"Results": notifications(&database)})))
}

/// `POST /databases/{db}/notification-center/dismiss?id=...` (204 also when there is no such notification).
pub async fn dismiss(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = query.get_non_empty("id").ok_or_else(|| ApiError::BadRequest("Query string parameter 'id' is required".into()))?;
    let database = state.landlord.database(&db).await?;
    // As RavenDB: dismissing a notification that is not there does nothing.
    if id == SLOW_IO_ID {
        for environment in database.io_environments() {
            environment.metrics.clear_slow();
        }
    }
    Ok(no_content())
}
