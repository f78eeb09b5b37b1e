//! `/databases/{db}/indexes` and friends: listing, statistics, errors, delete and `RESET` of indexes.

use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use corvid_engine::IndexInfo;
use corvid_types::format_date;
use serde_json::{json, Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::state::AppState;

pub(crate) fn date_or_null(nanos: i64) -> Value {
    if nanos > 0 {
        Value::String(format_date(nanos))
    } else {
        Value::Null
    }
}

/// The IndexDefinition shape the clients parse strictly (protocol.md 8.2).
pub fn definition_json(info: &IndexInfo) -> Value {
    if let Some(Value::Object(sent)) = &info.static_definition {
        // What the client sent, with every key the clients require present.
        let mut out = sent.clone();
        let defaults = json!({
            "Name": info.name, "Priority": info.priority, "State": info.state, "LockMode": info.lock_mode, "AdditionalSources": {},
            "AdditionalAssemblies": [], "Fields": {}, "Reduce": null, "Configuration": {}, "OutputReduceToCollection": null,
            "ReduceOutputIndex": null, "PatternForOutputReduceToCollectionReferences": null, "PatternReferencesCollectionName": null,
            "DeploymentMode": null
        });
        for (key, value) in defaults.as_object().expect("an object") {
            if out.get(key).is_none_or(Value::is_null) && !value.is_null() || !out.contains_key(key) {
                out.insert(key.clone(), value.clone());
            }
        }
        out.insert("Type".into(), json!(info.index_type));
        out.insert("SourceType".into(), json!(info.source_type));
        // A replacement built side by side is listed under its own name (`ReplacementOf/...`).
        out.insert("Name".into(), json!(info.name));
        return Value::Object(out);
    }
    let fields: Vec<String> = info.fields.iter().map(|f| f.path.clone()).collect();
    json!({
        "Name": info.name, "Priority": "Normal", "State": info.state, "LockMode": "Unlock",
        "AdditionalSources": {}, "AdditionalAssemblies": [],
        "Maps": [format!("from doc in docs.{} select new {{ {} }}", info.collection, fields.join(", "))],
        "Fields": {}, "Reduce": null, "Configuration": {}, "OutputReduceToCollection": null, "ReduceOutputIndex": null,
        "PatternForOutputReduceToCollectionReferences": null, "PatternReferencesCollectionName": null,
        "Type": "AutoMap", "SourceType": "Documents", "DeploymentMode": null
    })
}

pub fn stats_json(info: &IndexInfo) -> Value {
    let definition_key = |key: &str| info.static_definition.as_ref().and_then(|d| d.get(key)).cloned().unwrap_or(Value::Null);
    let mut collections = Map::new();
    collections.insert(
        info.collection.clone(),
        json!({"LastProcessedDocumentEtag": info.processed_etag, "LastProcessedTombstoneEtag": info.processed_etag,
               "DocumentLag": info.collection_last_etag.saturating_sub(info.processed_etag), "TombstoneLag": 0}),
    );
    json!({
        "Name": info.name, "MapAttempts": info.map_attempts, "MapSuccesses": info.map_successes, "MapErrors": info.map_errors,
        "MapReferenceAttempts": 0, "MapReferenceSuccesses": 0, "MapReferenceErrors": 0,
        "ReduceAttempts": null, "ReduceSuccesses": null, "ReduceErrors": null,
        "ReduceOutputCollection": definition_key("OutputReduceToCollection"),
        "ReduceOutputReferencePattern": definition_key("PatternForOutputReduceToCollectionReferences"),
        "PatternReferencesCollectionName": definition_key("PatternReferencesCollectionName"),
        "MappedPerSecondRate": 0.0, "ReducedPerSecondRate": 0.0, "MaxNumberOfOutputsPerDocument": 1,
        "Collections": collections, "LastQueryingTime": date_or_null(info.last_query_time), "State": info.state,
        "Priority": info.priority, "CreatedTimestamp": date_or_null(info.created_at), "LastIndexingTime": date_or_null(info.last_indexing_time),
        "IsStale": info.is_stale, "LockMode": info.lock_mode, "Type": info.index_type, "Status": info.run_status,
        "EntriesCount": info.entries, "ErrorsCount": info.errors_count, "SourceType": info.source_type,
        "IsInvalidIndex": false, "WorkerStatus": info.status, "SizeOnDisk": info.size_on_disk
    })
}

/// The entry of `/stats` `Indexes[]`.
pub fn summary_json(info: &IndexInfo) -> Value {
    json!({"Name": info.name, "IsStale": info.is_stale, "State": info.state, "LockMode": info.lock_mode, "Priority": info.priority,
           "Type": info.index_type, "SourceType": info.source_type, "LastIndexingTime": date_or_null(info.last_indexing_time)})
}

async fn infos(state: &AppState, db: &str) -> ApiResult<Vec<IndexInfo>> {
    let database = state.landlord.database(db).await?;
    blocking(move || Ok(database.index_infos()?)).await
}

/// GET lists definitions, DELETE removes one, and the custom `RESET` verb rebuilds one.
pub async fn indexes(
    State(state): State<AppState>,
    Path(db): Path<String>,
    method: Method,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    match method.as_str() {
        "GET" => {
            let all = infos(&state, &db).await?;
            if let Some(name) = query.get_non_empty("name") {
                let Some(info) = all.iter().find(|i| i.name.eq_ignore_ascii_case(name)) else {
                    return Err(ApiError::IndexDoesNotExist(name.to_owned()));
                };
                return Ok(json_value(StatusCode::OK, &json!({"Results": [definition_json(info)]})));
            }
            let start = query.get_usize("start", 0);
            let page = query.get_usize("pageSize", usize::MAX);
            let page: Vec<&IndexInfo> = all.iter().skip(start).take(page).collect();
            let results: Vec<Value> = if query.get_bool("namesOnly") {
                page.iter().map(|i| json!(i.name)).collect()
            } else {
                page.iter().map(|i| definition_json(i)).collect()
            };
            Ok(json_value(StatusCode::OK, &json!({ "Results": results })))
        }
        "DELETE" | "RESET" => {
            let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("'name' is required".into()))?.to_owned();
            let database = state.landlord.database(&db).await?;
            let reset = method.as_str() == "RESET";
            let found = blocking(move || if reset { Ok(database.reset_index(&name)?) } else { Ok(database.delete_index(&name)) }).await?;
            if !found {
                let name = query.get("name").unwrap_or_default().to_owned();
                return Err(ApiError::IndexDoesNotExist(name));
            }
            Ok(no_content())
        }
        other => Err(ApiError::RouteNotFound { method: other.to_owned(), path: format!("/databases/{db}/indexes") }),
    }
}

pub async fn index_stats(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let all = infos(&state, &db).await?;
    let selected: Vec<&IndexInfo> = match query.get_non_empty("name") {
        Some(name) => {
            let found: Vec<&IndexInfo> = all.iter().filter(|i| i.name.eq_ignore_ascii_case(name)).collect();
            if found.is_empty() {
                return Err(ApiError::IndexDoesNotExist(name.to_owned()));
            }
            found
        }
        None => all.iter().collect(),
    };
    Ok(json_value(StatusCode::OK, &json!({"Results": selected.iter().map(|i| stats_json(i)).collect::<Vec<_>>()})))
}

pub async fn index_errors(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("name").map(str::to_owned);
    let database = state.landlord.database(&db).await?;
    let errors = blocking(move || Ok(database.index_errors(name.as_deref())?)).await?;
    let results: Vec<Value> = errors
        .into_iter()
        .map(|(name, errors)| {
            let errors: Vec<Value> = errors
                .into_iter()
                .map(|e| json!({"Error": e.message, "Timestamp": format_date(e.at), "Document": e.document, "Action": e.action}))
                .collect();
            json!({"Name": name, "Errors": errors})
        })
        .collect();
    Ok(json_value(StatusCode::OK, &json!({ "Results": results })))
}

pub async fn clear_index_errors(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let names = query.get_all("name").into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>();
    let database = state.landlord.database(&db).await?;
    blocking(move || Ok(database.clear_index_errors(&names)?)).await?;
    Ok(no_content())
}

pub async fn index_status(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let all = infos(&state, &db).await?;
    let indexes: Vec<Value> = all.iter().map(|i| json!({"Name": i.name, "Status": i.run_status})).collect();
    let paused = state.landlord.database(&db).await?.indexing_paused();
    let overall = if paused { "Paused" } else { "Running" };
    Ok(json_value(StatusCode::OK, &json!({"Status": overall, "Indexes": indexes})))
}

/// The stats summary of every index, and the latest time any of them indexed (0 when none has).
pub async fn stats_summaries(state: &AppState, db: &str) -> ApiResult<(Vec<Value>, i64)> {
    let infos = infos(state, db).await?;
    let last_indexing_time = infos.iter().map(|i| i.last_indexing_time).max().unwrap_or(0);
    Ok((infos.iter().map(summary_json).collect(), last_indexing_time))
}

/// `PUT /databases/{db}/admin/indexes` with `{"Indexes": [IndexDefinition, ...]}`: creates or replaces static
/// indexes. Definitions are compiled first; an invalid one is refused and nothing is stored.
pub async fn put_indexes(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    let request = crate::body::read_json(body, &headers, state.config.max_body_bytes).await?;
    let definitions = request
        .get("Indexes")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| ApiError::BadRequest("The body must be {\"Indexes\": [IndexDefinition, ...]}".into()))?;
    let database = state.landlord.database(&db).await?;
    let names = blocking(move || Ok(database.put_indexes(&definitions)?)).await?;
    let raft = state.raft_index.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let results: Vec<Value> = names.into_iter().map(|n| json!({"Index": n, "RaftCommandIndex": raft})).collect();
    Ok(json_value(StatusCode::CREATED, &json!({ "Results": results })))
}

/// Which control action a `POST` on an index control route performs.
#[derive(Clone, Copy)]
pub enum ControlAction {
    Disable,
    Enable,
    Stop,
    Start,
}

async fn control(state: AppState, db: String, raw: Option<String>, action: ControlAction) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let names: Vec<String> = query.get_all("name").into_iter().filter(|n| !n.is_empty()).collect();
    if names.is_empty() && matches!(action, ControlAction::Disable | ControlAction::Enable) {
        return Err(ApiError::BadRequest("'name' is required".into()));
    }
    let database = state.landlord.database(&db).await?;
    blocking(move || {
        let done = match action {
            ControlAction::Disable => database.set_indexes_disabled(&names, true),
            ControlAction::Enable => database.set_indexes_disabled(&names, false),
            ControlAction::Stop => database.set_indexes_paused(&names, true),
            ControlAction::Start => database.set_indexes_paused(&names, false),
        };
        Ok(done?)
    })
    .await?;
    Ok(no_content())
}

pub async fn disable(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    control(state, db, raw, ControlAction::Disable).await
}

pub async fn enable(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    control(state, db, raw, ControlAction::Enable).await
}

pub async fn stop(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    control(state, db, raw, ControlAction::Stop).await
}

pub async fn start(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    control(state, db, raw, ControlAction::Start).await
}

/// `{"IndexNames": [...], <field>: "..."}` of set-lock and set-priority.
fn names_and(body: &Value, field: &str) -> ApiResult<(Vec<String>, String)> {
    let names = body
        .get("IndexNames")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::BadRequest("'IndexNames' (a list of index names) is required".into()))?
        .iter()
        .map(|n| n.as_str().map(str::to_owned).ok_or_else(|| ApiError::BadRequest("every index name must be a string".into())))
        .collect::<ApiResult<Vec<String>>>()?;
    let value = body.get(field).and_then(Value::as_str).ok_or_else(|| ApiError::BadRequest(format!("'{field}' is required")))?;
    Ok((names, value.to_owned()))
}

/// `POST /indexes/set-lock` and `/indexes/set-priority`: read `{"IndexNames", <field>}` and apply `set`.
async fn set_for_names(
    state: AppState,
    db: String,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
    field: &'static str,
    set: fn(&corvid_engine::Database, &[String], &str) -> Result<(), corvid_engine::EngineError>,
) -> ApiResult<Response> {
    let body = crate::body::read_json(body, &headers, state.config.max_body_bytes).await?;
    let (names, value) = names_and(&body, field)?;
    let database = state.landlord.database(&db).await?;
    blocking(move || Ok(set(&database, &names, &value)?)).await?;
    Ok(no_content())
}

pub async fn set_lock(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    set_for_names(state, db, headers, body, "Mode", corvid_engine::Database::set_indexes_lock_mode).await
}

pub async fn set_priority(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    set_for_names(state, db, headers, body, "Priority", corvid_engine::Database::set_indexes_priority).await
}

/// `POST /indexes/has-changed` with an IndexDefinition: whether storing it would change the index.
pub async fn has_changed(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    let definition = crate::body::read_json(body, &headers, state.config.max_body_bytes).await?;
    let database = state.landlord.database(&db).await?;
    let changed = blocking(move || Ok(database.index_definition_changed(&definition)?)).await?;
    Ok(json_value(StatusCode::OK, &json!({ "Changed": changed })))
}

/// `GET /indexes/terms?name=&field=&fromValue=&pageSize=`.
pub async fn terms(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("'name' is required".into()))?.to_owned();
    let field = query.get_non_empty("field").ok_or_else(|| ApiError::BadRequest("'field' is required".into()))?.to_owned();
    let from = query.get_non_empty("fromValue").map(str::to_owned);
    let page_size = query.get_usize("pageSize", 1024);
    let database = state.landlord.database(&db).await?;
    let index_name = name.clone();
    let terms = blocking(move || Ok(database.index_terms(&name, &field, from.as_deref(), page_size)?)).await?;
    Ok(json_value(StatusCode::OK, &json!({"IndexName": index_name, "Terms": terms, "ResultEtag": 0})))
}
