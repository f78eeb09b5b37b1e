//! Document expiration and refresh: the record's configurations (`POST /admin/expiration/config`,
//! `POST /admin/refresh/config`, read back at `GET /expiration/config` and `GET /refresh/config`) and what the
//! database's expiration thread has done (`GET /debug/expiration`, Corvid's own).

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{SweepConfig, TaskStats};
use corvid_types::format_date;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// Makes the posted configuration the database's (first in the database, which the thread reads, then in the
/// record).
async fn configure(state: AppState, db: String, headers: HeaderMap, body: Body, refresh: bool) -> ApiResult<Response> {
    let sent = read_json(body, &headers, state.config.max_body_bytes).await?;
    let config = SweepConfig::from_json(&sent, refresh)?;
    let database = state.landlord.database(&db).await?;
    let landlord = state.landlord.clone();
    blocking(move || {
        database.set_expiration_config(refresh, &config)?;
        let rendered = Some(config.to_json(refresh));
        landlord.update(&db, |entry| if refresh { entry.refresh = rendered } else { entry.expiration = rendered })?;
        Ok(())
    })
    .await?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index })))
}

/// `POST /databases/{db}/admin/expiration/config` with an `ExpirationConfiguration`.
pub async fn post_expiration(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    configure(state, db, headers, body, false).await
}

/// `POST /databases/{db}/admin/refresh/config` with a `RefreshConfiguration`.
pub async fn post_refresh(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    configure(state, db, headers, body, true).await
}

fn config_reply(state: &AppState, db: &str, refresh: bool) -> ApiResult<Response> {
    let entry = state.landlord.entry(db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.to_owned()))?;
    Ok(match if refresh { entry.refresh } else { entry.expiration } {
        Some(config) => json_value(StatusCode::OK, &config),
        None => StatusCode::NOT_FOUND.into_response(),
    })
}

/// `GET /databases/{db}/expiration/config`: 404 when never configured.
pub async fn get_expiration(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    config_reply(&state, &db, false)
}

/// `GET /databases/{db}/refresh/config`: 404 when never configured.
pub async fn get_refresh(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    config_reply(&state, &db, true)
}

fn task_json(task: &TaskStats) -> Value {
    json!({
        "Passes": task.passes, "Batches": task.batches, "Processed": task.processed, "Stale": task.stale,
        "LastPassAt": task.last_pass_at.map(format_date), "LastPassDurationInMs": task.last_pass_ms, "LastError": task.last_error,
    })
}

/// `GET /databases/{db}/debug/expiration`: the configurations in force and what each task has done since the
/// database opened.
pub async fn stats(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let reply = blocking(move || {
        let stats = database.expiration_stats();
        let expiration = database.expiration_config(false)?.map(|c| c.to_json(false));
        let refresh = database.expiration_config(true)?.map(|c| c.to_json(true));
        Ok(json!({
            "Expiration": {"Configuration": expiration, "Stats": task_json(&stats.expiration)},
            "Refresh": {"Configuration": refresh, "Stats": task_json(&stats.refresh)},
            "CompareExchangeExpiration": task_json(&stats.compare_exchange),
            "QueuedEntries": stats.queued,
            "Backfill": {"QueuedDocuments": stats.backfilled, "Error": stats.backfill_error},
        }))
    })
    .await?;
    Ok(json_value(StatusCode::OK, &reply))
}
