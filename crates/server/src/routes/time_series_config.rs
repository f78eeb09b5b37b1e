//! The database record's time-series configuration: `POST /admin/timeseries/config`
//! (`ConfigureTimeSeriesOperation`), `POST /timeseries/names/config` (`ConfigureTimeSeriesValueNamesOperation`)
//! and `GET /timeseries/config`. Named values are kept in the catalog entry; rollup and retention policies
//! are refused until a policy runner executes them (accepting them would promise work nothing does).

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Map, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// Whether a collection's configuration asks for rollups or a raw retention (a `Policies` entry, or a
/// `RawPolicy` whose retention is not the unlimited `MaxValue`).
pub(crate) fn has_policies(collection: &Value) -> bool {
    let policies = collection.get("Policies").and_then(Value::as_array).is_some_and(|p| !p.is_empty());
    let retention = collection.get("RawPolicy").and_then(|p| p.get("RetentionTime"));
    let limited =
        retention.is_some_and(|r| !r.is_null() && r.get("Value").and_then(Value::as_i64).is_some_and(|v| v != i64::from(i32::MAX)));
    policies || limited
}

fn answer(state: &AppState) -> Response {
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index }))
}

/// `POST /admin/timeseries/config`: replaces the record's `TimeSeries` configuration.
pub async fn configure(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let config = read_json(body, &headers, state.config.max_body_bytes).await?;
    if !config.is_object() {
        return Err(ApiError::BadRequest("The time series configuration must be a JSON object".into()));
    }
    let collections = config.get("Collections").and_then(Value::as_object).into_iter().flat_map(|c| c.values());
    if collections.clone().any(has_policies) {
        return Err(ApiError::NotSupported("Time series rollup and retention policies are not supported by this server yet".into()));
    }
    let landlord = state.landlord.clone();
    blocking(move || landlord.update(&db, |entry| entry.time_series = Some(config)).map(|_| ())).await?;
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
