//! Data subscription definitions (`/databases/{db}/subscriptions…`) and their enable/disable through
//! `/admin/tasks/state`. The workers' batches travel over TCP (`crate::tcp`).

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::subscriptions::{EndReason, Strategy, SubscriptionDefinition, SubscriptionKey, SubscriptionRequest};
use corvid_engine::Database;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::state::AppState;

fn request_of(body: Value) -> ApiResult<SubscriptionRequest> {
    serde_json::from_value(body).map_err(|e| ApiError::BadRequest(format!("Invalid subscription definition: {e}")))
}

/// `SubscriptionState` with the connected workers (RavenDB's `Connection`/`Connections` extras).
fn state_of(database: &Database, definition: &SubscriptionDefinition) -> Value {
    let mut state = definition.state_json();
    let connections: Vec<Value> = database.subscription_connections().of(definition.id).iter().map(|c| c.to_json()).collect();
    state["Connection"] = connections.first().cloned().unwrap_or(Value::Null);
    state["Connections"] = Value::Array(connections);
    if let Some(dispatch) = database.subscription_connections().dispatch_of(definition.id) {
        state["ConcurrentDispatch"] = dispatch.to_json();
    }
    state
}

/// `GET /databases/{db}/subscriptions/connection-details?name=`: RavenDB 6's `SubscriptionConnectionsDetails`,
/// every connected worker and whether the subscription is concurrent; 404 with no body when unknown.
pub async fn connection_details(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("'name' is required".into()))?.to_owned();
    let database = state.landlord.database(&db).await?;
    let found = blocking(move || {
        let Some(definition) = database.subscription(&SubscriptionKey::Name(name))? else { return Ok(None) };
        let connections = database.subscription_connections().of(definition.id);
        let concurrent = connections.first().is_some_and(|c| c.strategy == Strategy::Concurrent);
        let results: Vec<Value> = connections
            .iter()
            .map(|c| json!({"ClientUri": c.client_uri, "WorkerId": c.worker_id, "Strategy": c.strategy.name()}))
            .collect();
        Ok(Some(json!({"Results": results, "SubscriptionMode": if concurrent { "Concurrent" } else { "Single" }})))
    })
    .await?;
    Ok(match found {
        Some(details) => json_value(StatusCode::OK, &details),
        None => StatusCode::NOT_FOUND.into_response(),
    })
}

/// `PUT /databases/{db}/subscriptions`: 201 `{"Name"}`; a query that does not parse is refused with 400 and
/// nothing is stored.
pub async fn create(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = request_of(read_json(body, &headers, state.config.max_body_bytes).await?)?;
    let database = state.landlord.database(&db).await?;
    let definition = blocking(move || Ok(database.create_subscription(request)?)).await?;
    Ok(json_value(StatusCode::CREATED, &json!({"Name": definition.name, "RaftCommandIndex": definition.id})))
}

/// `POST /databases/{db}/subscriptions/update`: 201 `{"Name"}`, or 304 when nothing changed.
pub async fn update(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = request_of(read_json(body, &headers, state.config.max_body_bytes).await?)?;
    let database = state.landlord.database(&db).await?;
    match blocking(move || Ok(database.update_subscription(request)?)).await? {
        Some(definition) => Ok(json_value(StatusCode::CREATED, &json!({"Name": definition.name, "RaftCommandIndex": definition.id}))),
        None => Ok(StatusCode::NOT_MODIFIED.into_response()),
    }
}

/// `DELETE /databases/{db}/subscriptions?taskName=`: 204; connected workers are told it no longer exists.
pub async fn delete(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("taskName").ok_or_else(|| ApiError::BadRequest("'taskName' is required".into()))?.to_owned();
    let database = state.landlord.database(&db).await?;
    blocking(move || Ok(database.delete_subscription(&name)?)).await?;
    Ok(no_content())
}

/// `GET /databases/{db}/subscriptions?start=&pageSize=` (or one, with `name=` / `id=`): `{"Results":[…]}`.
pub async fn list(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let key = match (query.get_non_empty("name"), query.get_u64("id")) {
        (Some(name), _) => Some(SubscriptionKey::Name(name.to_owned())),
        (None, Some(id)) => Some(SubscriptionKey::Id(id)),
        (None, None) => None,
    };
    let start = query.get_usize("start", 0);
    let page_size = query.get_usize("pageSize", usize::MAX);
    let running_only = query.get_bool("running");
    let database = state.landlord.database(&db).await?;
    let results = blocking(move || {
        let definitions = match &key {
            Some(key) => match database.subscription(key)? {
                Some(found) => vec![found],
                None => return Ok(None),
            },
            None => database.subscriptions()?,
        };
        let results: Vec<Value> = definitions
            .iter()
            .filter(|d| !running_only || !database.subscription_connections().of(d.id).is_empty())
            .skip(start)
            .take(page_size)
            .map(|d| state_of(&database, d))
            .collect();
        Ok(Some(results))
    })
    .await?;
    match results {
        Some(results) => Ok(json_value(StatusCode::OK, &json!({"Results": results}))),
        None => Ok(StatusCode::NOT_FOUND.into_response()),
    }
}

/// `GET /databases/{db}/subscriptions/state?name=`: the state, or 404 with no body.
pub async fn subscription_state(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("'name' is required".into()))?.to_owned();
    let database = state.landlord.database(&db).await?;
    let found =
        blocking(move || Ok(database.subscription(&SubscriptionKey::Name(name))?.map(|definition| state_of(&database, &definition))))
            .await?;
    Ok(match found {
        Some(state) => json_value(StatusCode::OK, &state),
        None => StatusCode::NOT_FOUND.into_response(),
    })
}

/// `POST /databases/{db}/subscriptions/drop?name=[&workerId=]`: ends every worker of the subscription, or the
/// one named; their slots are free before the 204, so a new worker can connect at once. A `workerId` that
/// names no connected worker is a 404 (both clients take it as done), as in RavenDB 6.
pub async fn drop_connections(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let key = match (query.get_non_empty("name"), query.get_u64("id")) {
        (Some(name), _) => SubscriptionKey::Name(name.to_owned()),
        (None, Some(id)) => SubscriptionKey::Id(id),
        (None, None) => return Err(ApiError::BadRequest("'name' or 'id' is required".into())),
    };
    let worker_id = query.get_non_empty("workerId").map(str::to_owned);
    let database = state.landlord.database(&db).await?;
    let found = blocking(move || {
        let Some(definition) = database.subscription(&key)? else { return Ok(false) };
        let connections = database.subscription_connections();
        Ok(match &worker_id {
            Some(worker_id) => connections.end_worker(definition.id, worker_id, EndReason::Dropped),
            None => {
                connections.end_all(definition.id, EndReason::Dropped);
                true
            }
        })
    })
    .await?;
    Ok(if found { no_content() } else { StatusCode::NOT_FOUND.into_response() })
}

/// `POST /databases/{db}/admin/tasks/state?type=Subscription&disable=true|false&taskName=`: enables or
/// disables a subscription (other task types are not supported).
pub async fn toggle_task(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    if !query.get("type").is_some_and(|t| t.eq_ignore_ascii_case("Subscription")) {
        return Err(ApiError::NotSupported(
            "Corvid has no ongoing tasks besides data subscriptions (replication, ETL and backups are not supported)".into(),
        ));
    }
    let name = query.get_non_empty("taskName").ok_or_else(|| ApiError::BadRequest("'taskName' is required".into()))?.to_owned();
    let disable = query.get_bool("disable");
    let database = state.landlord.database(&db).await?;
    let what = name.clone();
    let definition = blocking(move || Ok(database.set_subscription_disabled(&name, disable)?)).await?;
    let definition = definition.ok_or_else(|| {
        ApiError::from(corvid_engine::EngineError::SubscriptionDoesNotExist(format!(
            "Subscription with name '{what}' was not found in server store"
        )))
    })?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({"TaskId": definition.id, "RaftCommandIndex": index, "ResponsibleNode": "A"})))
}
