//! One policy at a time: `PUT /admin/timeseries/policy?collection=` (`ConfigureTimeSeriesPolicyOperation`, and
//! `ConfigureRawTimeSeriesPolicyOperation` when the policy is `rawpolicy`), `DELETE /admin/timeseries/policy?
//! collection=&name=` (`RemoveTimeSeriesPolicyOperation`), each a change of the record's `TimeSeries`
//! configuration checked as a whole; and what the database's policy runner has done (`GET /debug/timeseries/
//! policies`, Corvid's own).

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::time_series_policy::{collection_json, parse_configuration, parse_policy, TimeSeriesPolicies, RAW_POLICY_NAME};
use corvid_types::format_date;
use serde_json::{json, Map, Value};

use super::time_series_config::{answer, store_configuration};
use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::{blocking, json_value};
use crate::state::AppState;

fn required<'a>(query: &'a HashMap<String, String>, name: &str) -> ApiResult<&'a str> {
    query
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest(format!("Query string '{name}' is mandatory, but wasn't specified.")))
}

/// The configuration with `edit` applied to the collection's entry (created when missing), checked and normalized.
fn edited(current: Option<Value>, collection: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> ApiResult<Value> {
    let mut config =
        current.filter(Value::is_object).unwrap_or_else(|| json!({"Collections": {}, "PolicyCheckFrequency": null, "NamedValues": null}));
    if !config.get("Collections").is_some_and(Value::is_object) {
        config["Collections"] = json!({});
    }
    let collections = config["Collections"].as_object_mut().expect("made an object above");
    let key = collections.keys().find(|k| k.eq_ignore_ascii_case(collection)).cloned().unwrap_or_else(|| collection.to_owned());
    let entry = collections.entry(key).or_insert_with(|| json!({"Disabled": false, "Policies": [], "RawPolicy": null}));
    if !entry.is_object() {
        *entry = json!({"Disabled": false, "Policies": [], "RawPolicy": null});
    }
    edit(entry.as_object_mut().expect("made an object above"));
    Ok(parse_configuration(&config)?.0)
}

/// Applies `edit` to the record's configuration: checked in full before anything is stored.
async fn change(
    state: &AppState,
    db: String,
    collection: String,
    edit: impl FnOnce(&mut Map<String, Value>) + Send + 'static,
) -> ApiResult<()> {
    let current = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?.time_series;
    let config = edited(current, &collection, edit)?;
    store_configuration(state, db, move |_| Some(config)).await
}

/// `PUT /databases/{db}/admin/timeseries/policy?collection=`: adds or replaces a policy (by name), or sets the
/// raw policy's retention.
pub async fn put(
    State(state): State<AppState>,
    Path(db): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let collection = required(&query, "collection")?.to_owned();
    let sent = read_json(body, &headers, state.config.max_body_bytes).await?;
    let policy = parse_policy(&sent)?;
    let raw = policy.name == RAW_POLICY_NAME;
    change(&state, db, collection, move |entry| {
        if raw {
            entry.insert("RawPolicy".into(), json!({"Name": RAW_POLICY_NAME, "RetentionTime": policy.retention.to_json()}));
            return;
        }
        let mut policies: Vec<Value> = entry.get("Policies").and_then(Value::as_array).cloned().unwrap_or_default();
        policies.retain(|p| !p.get("Name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(&policy.name)));
        policies.push(
            json!({"Name": policy.name, "AggregationTime": policy.aggregation.to_json(), "RetentionTime": policy.retention.to_json()}),
        );
        entry.insert("Policies".into(), Value::Array(policies));
    })
    .await?;
    Ok(answer(&state))
}

/// `DELETE /databases/{db}/admin/timeseries/policy?collection=&name=`: removes a policy (`rawpolicy` resets
/// the raw retention to unlimited). Nothing to remove is not an error.
pub async fn delete(
    State(state): State<AppState>,
    Path(db): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let collection = required(&query, "collection")?.to_owned();
    let name = required(&query, "name")?.to_owned();
    let current = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?.time_series;
    let configured = current
        .as_ref()
        .and_then(|c| c.get("Collections"))
        .and_then(Value::as_object)
        .is_some_and(|c| c.keys().any(|k| k.eq_ignore_ascii_case(&collection)));
    if configured {
        change(&state, db, collection, move |entry| {
            if name.eq_ignore_ascii_case(RAW_POLICY_NAME) {
                entry.insert("RawPolicy".into(), Value::Null);
                return;
            }
            if let Some(Value::Array(policies)) = entry.get_mut("Policies") {
                policies.retain(|p| !p.get("Name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(&name)));
            }
        })
        .await?;
    }
    Ok(answer(&state))
}

fn configuration_json(policies: &TimeSeriesPolicies) -> Value {
    let collections: Map<String, Value> = policies.collections.iter().map(|c| (c.collection.clone(), collection_json(c))).collect();
    json!({"PolicyCheckFrequencyInMs": policies.check_frequency.as_millis() as u64, "Collections": collections})
}

/// `GET /databases/{db}/debug/timeseries/policies`: the policies the runner applies and what it has done since
/// the database opened.
pub async fn stats(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let reply = blocking(move || {
        let stats = database.time_series_policy_stats();
        let config = database.time_series_policies();
        Ok(json!({
            "Configuration": config.as_deref().map(configuration_json),
            "Passes": stats.passes,
            "LastPassAt": stats.last_pass_at.map(format_date),
            "LastPassDurationInMs": stats.last_pass_ms,
            "SeriesRolledUp": stats.series_rolled_up,
            "RollupEntriesWritten": stats.rollup_entries_written,
            "SeriesRetained": stats.series_retained,
            "EntriesDeleted": stats.entries_deleted,
            "PendingSeries": stats.pending_series,
            "Errors": stats.errors,
            "LastError": stats.last_error,
        }))
    })
    .await?;
    Ok(json_value(StatusCode::OK, &reply))
}
