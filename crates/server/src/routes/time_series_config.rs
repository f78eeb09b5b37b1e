//! The database record's time-series configuration: `POST /admin/timeseries/config`
//! (`ConfigureTimeSeriesOperation`), `POST /timeseries/names/config` (`ConfigureTimeSeriesValueNamesOperation`)
//! and `GET /timeseries/config`. The configuration (named values, rollup and retention policies) is kept in the
//! catalog entry, checked first (`corvid_engine::time_series_policy`), and its policies handed to the database's
//! policy runner.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Map, Value};

use corvid_engine::time_series_policy::{parse_configuration, policies_of};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// Replaces the record's configuration with what `change` makes of it (checked by the caller), then hands its
/// policies to the database's runner.
pub(crate) async fn store_configuration(
    state: &AppState,
    db: String,
    change: impl FnOnce(Option<Value>) -> Option<Value> + Send + 'static,
) -> ApiResult<()> {
    let database = state.landlord.database(&db).await?;
    let landlord = state.landlord.clone();
    blocking(move || {
        let mut stored = None;
        landlord.update(&db, |entry| {
            entry.time_series = change(entry.time_series.take());
            stored = entry.time_series.clone();
        })?;
        database.set_time_series_policies(policies_of(stored.as_ref()));
        Ok(())
    })
    .await
}

pub(crate) fn answer(state: &AppState) -> Response {
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index }))
}

/// `POST /admin/timeseries/config`: replaces the record's `TimeSeries` configuration.
pub async fn configure(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let sent = read_json(body, &headers, state.config.max_body_bytes).await?;
    let (config, _) = parse_configuration(&sent)?;
    store_configuration(&state, db, move |_| Some(config)).await?;
    Ok(answer(&state))
}

/// `POST /timeseries/names/config`: sets the value names of one series of a collection.
pub async fn configure_names(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let text = |field: &str| -> ApiResult<String> {
        request
            .get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| ApiError::BadRequest(format!("'{field}' is required and must not be empty")))
    };
    let (collection, series) = (text("Collection")?, text("TimeSeries")?);
    let names = request.get("ValueNames").and_then(Value::as_array).filter(|n| !n.is_empty()).cloned();
    let names = names.ok_or_else(|| ApiError::BadRequest("'ValueNames' is required and must not be empty".into()))?;
    if names.len() > corvid_engine::MAX_TIME_SERIES_VALUES {
        return Err(ApiError::BadRequest(format!("A time series can have at most {} named values", corvid_engine::MAX_TIME_SERIES_VALUES)));
    }
    let update = request.get("Update").and_then(Value::as_bool).unwrap_or(false);
    let landlord = state.landlord.clone();
    let conflict = blocking(move || {
        let mut conflict = None;
        landlord.update(&db, |entry| {
            let mut config =
                entry.time_series.take().unwrap_or_else(|| json!({"Collections": {}, "PolicyCheckFrequency": null, "NamedValues": null}));
            if !config.get("NamedValues").is_some_and(Value::is_object) {
                config["NamedValues"] = json!({});
            }
            let named = config["NamedValues"].as_object_mut().expect("made an object above");
            // Collections and series compare case-insensitively; the first spelling stays.
            let key = named.keys().find(|k| k.eq_ignore_ascii_case(&collection)).cloned().unwrap_or(collection.clone());
            let per_series = named.entry(key).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(per_series) = per_series {
                let existing = per_series.keys().find(|k| k.eq_ignore_ascii_case(&series)).cloned();
                match existing {
                    Some(k) if !update => conflict = Some(k),
                    Some(k) => {
                        per_series.insert(k, Value::Array(names));
                    }
                    None => {
                        per_series.insert(series.clone(), Value::Array(names));
                    }
                }
            }
            entry.time_series = Some(config);
        })?;
        Ok(conflict)
    })
    .await?;
    if let Some(name) = conflict {
        return Err(ApiError::BadRequest(format!(
            "Cannot update the value names of time series '{name}': it already has names and 'Update' is not set"
        )));
    }
    Ok(answer(&state))
}

/// `GET /timeseries/config`: the record's `TimeSeries` configuration (null when never configured).
pub async fn get(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    Ok(json_value(StatusCode::OK, &entry.time_series.unwrap_or(Value::Null)))
}
