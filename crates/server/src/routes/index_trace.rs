//! `POST /databases/{db}/admin/indexes/trace?name=I&action=start|stop`: records what an index's worker
//! consumes (each batch's documents and tombstones, its commit points) to a file under
//! `<data-dir>/traces/<db>/`, for `corvid replay-trace`. Stopping answers the file, the batches recorded
//! and the live index's entries digest, which a replay of the trace must reproduce.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// The directory of a database's traces.
const TRACES_DIR: &str = "traces";

/// An index name as a file name: letters, digits, `-` and `_` kept, anything else `_`.
fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

pub async fn trace(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("Query string 'name' is mandatory".into()))?.to_owned();
    let action = query.get_non_empty("action").unwrap_or("start").to_ascii_lowercase();
    let database = state.landlord.database(&db).await?;
    match action.as_str() {
        "start" => {
            let dir = state.config.data_dir.join(TRACES_DIR).join(file_stem(database.name()));
            let path = dir.join(format!("{}-{}.trace", file_stem(&name), corvid_types::now_nanos()));
            let file = path.clone();
            blocking(move || {
                std::fs::create_dir_all(&dir).map_err(|e| ApiError::Internal(format!("{}: {e}", dir.display())))?;
                Ok(database.start_index_trace(&name, &file)?)
            })
            .await?;
            Ok(json_value(StatusCode::OK, &json!({"Action": "start", "File": path.display().to_string()})))
        }
        "stop" => {
            let (summary, digest) = blocking(move || {
                let summary = database.stop_index_trace(&name)?;
                Ok((summary, database.index_digest(&name)?))
            })
            .await?;
            Ok(json_value(
                StatusCode::OK,
                &json!({"Action": "stop", "File": summary.path.display().to_string(), "Batches": summary.batches, "Digest": digest}),
            ))
        }
        other => Err(ApiError::BadRequest(format!("action must be 'start' or 'stop', not '{other}'"))),
    }
}
