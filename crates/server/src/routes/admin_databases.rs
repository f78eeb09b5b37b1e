//! Creating, listing, reading and deleting databases (`/admin/databases`, `/databases`).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use corvid_engine::CatalogEntry;
use corvid_types::{push_json_string, NODE_TAG};
use serde_json::{json, Value};

use crate::body::{parse_json, read_body};
use crate::database_info_cache::{self, DatabaseInfoRecord};
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json, json_value};
use crate::security::access::Access;
use crate::security::authorization::Caller;
use crate::state::AppState;

pub async fn create(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery, body: Body) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let bytes = read_body(body, &headers, state.config.max_body_bytes).await?;
    let record = if bytes.is_empty() { json!({}) } else { parse_json(&bytes)? };
    let name = query
        .get_non_empty("name")
        .map(str::to_owned)
        .or_else(|| record.get("DatabaseName").and_then(Value::as_str).map(str::to_owned))
        .ok_or_else(|| ApiError::BadRequest("Creating a database requires its name ('name' or DatabaseName)".into()))?;
    let settings = record.get("Settings").and_then(Value::as_object).cloned().unwrap_or_default();
    let landlord = state.landlord.clone();
    let revisions = match record.get("Revisions").filter(|r| !r.is_null()) {
        Some(config) => Some(corvid_engine::RevisionsConfig::from_json(config)?),
        None => None,
    };
    let entry = blocking(move || landlord.create(&name, settings)).await?;
    if let Some(config) = revisions {
        super::revisions::apply_config(&state, &entry.name, config).await?;
    }
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::CREATED, &json!({"RaftCommandIndex": index, "Name": entry.name, "NodesAddedTo": [state.public_url]})))
}

pub async fn delete(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery, body: Body) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let bytes = read_body(body, &headers, state.config.max_body_bytes).await?;
    let request = if bytes.is_empty() { json!({}) } else { parse_json(&bytes)? };
    let mut names: Vec<String> = request
        .get("DatabaseNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    names.extend(query.get_all("name").into_iter().filter(|n| !n.is_empty()));
    if names.is_empty() {
        return Err(ApiError::BadRequest("Deleting databases requires DatabaseNames".into()));
    }
    let hard = request.get("HardDelete").and_then(Value::as_bool).unwrap_or(true);
    let landlord = state.landlord.clone();
    blocking(move || {
        for name in &names {
            landlord.delete(name, hard)?;
        }
        Ok(())
    })
    .await?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({"RaftCommandIndex": index, "PendingDeletes": []})))
}

/// The record's settings without their secrets: passwords, keys and tokens are write-only.
fn readable_settings(settings: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    settings.iter().filter(|(name, _)| !is_secret_setting(name)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Names of settings that hold secrets.
fn is_secret_setting(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "secret", "apikey", "api.key", "accesskey", "access.key", "token", "connectionstring", "privatekey"]
        .iter()
        .any(|marker| name.contains(marker))
}

/// A database record in the shape the clients parse strictly (see protocol.md 3.3).
fn record_json(entry: &CatalogEntry, etag: u64) -> Value {
    json!({
        "DatabaseName": entry.name, "Disabled": entry.disabled, "Encrypted": false, "EtagForBackup": 0,
        "DeletionInProgress": {}, "RollingIndexes": {}, "DatabaseState": "Normal", "LockMode": "Unlock",
        "Topology": {"Members": [NODE_TAG], "Promotables": [], "Rehabs": [], "PredefinedMentors": {}, "DemotionReasons": {},
                     "PromotablesStatus": {}, "ReplicationFactor": 1, "DynamicNodesDistribution": false,
                     "Stamp": {"Index": 1, "Term": 1, "LeadersTicks": 0}, "DatabaseTopologyIdBase64": null, "PriorityOrder": []},
        "Sorters": {}, "Analyzers": {}, "Indexes": {}, "AutoIndexes": {}, "Settings": readable_settings(&entry.settings),
        "PeriodicBackups": entry.periodic_backups, "ExternalReplications": [], "SinkPullReplications": [], "HubPullReplications": [],
        "RavenConnectionStrings": {}, "SqlConnectionStrings": {}, "OlapConnectionStrings": {}, "RavenEtls": [], "SqlEtls": [],
        "OlapEtls": [], "Client": null, "Studio": null, "Revisions": entry.revisions, "RevisionsForConflicts": entry.revisions_for_conflicts,
        "Expiration": entry.expiration, "Refresh": entry.refresh,
        "TimeSeries": entry.time_series,
        "Etag": etag
    })
}

/// An automatic index as the database record lists it (`AutoIndexDefinition`).
fn auto_index_json(info: &corvid_engine::IndexInfo) -> Value {
    let fields: serde_json::Map<String, Value> = info
        .fields
        .iter()
        .map(|f| {
            let mut indexing = vec!["Default"];
            if f.search {
                indexing.push("Search");
            }
            if f.exact {
                indexing.push("Exact");
            }
            let options = json!({"Storage": "No", "Indexing": indexing.join(", "), "Aggregation": "None", "Spatial": null,
                                 "GroupByArrayBehavior": "NotApplicable", "Suggestions": false, "IsNameQuoted": false});
            (f.path.clone(), options)
        })
        .collect();
    json!({"Type": info.index_type, "Name": info.name, "Priority": info.priority, "State": info.state,
           "Collection": info.collection, "MapFields": fields, "GroupByFields": {}})
}

pub async fn record(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let Some(name) = query.get_non_empty("name") else {
        return Err(ApiError::BadRequest("Reading a database record requires 'name'".into()));
    };
    record_response(&state, name).await
}

/// The database record of `name`, or 404 with `Database-Missing`.
pub async fn record_response(state: &AppState, name: &str) -> ApiResult<Response> {
    match state.landlord.entry(name) {
        Some(entry) => {
            let mut record = record_json(&entry, state.raft_index.load(Ordering::Relaxed));
            // Index definitions come from the database itself when it is open; reading the record never
            // opens a database.
            if let Some(database) = state.landlord.loaded().into_iter().find(|d| d.name().eq_ignore_ascii_case(&entry.name)) {
                let infos = crate::responses::blocking(move || Ok(database.index_infos()?)).await?;
                let (mut statics, mut autos) = (serde_json::Map::new(), serde_json::Map::new());
                for info in &infos {
                    if info.static_definition.is_some() {
                        statics.insert(info.name.clone(), super::indexes::definition_json(info));
                    } else {
                        autos.insert(info.name.clone(), auto_index_json(info));
                    }
                }
                record["Indexes"] = Value::Object(statics);
                record["AutoIndexes"] = Value::Object(autos);
            }
            Ok(json_value(StatusCode::OK, &record))
        }
        None => {
            let mut response = StatusCode::NOT_FOUND.into_response();
            if let Ok(v) = name.parse() {
                response.headers_mut().insert("Database-Missing", v);
            }
            Ok(response)
        }
    }
}

/// Each database's counts: live for an open one, its saved info record (`CachedDatabaseInfo`) otherwise.
async fn database_infos(state: &AppState, entries: &[CatalogEntry]) -> ApiResult<Vec<(Option<DatabaseInfoRecord>, bool)>> {
    let loaded = state.landlord.loaded();
    let work: Vec<_> = entries
        .iter()
        .map(|e| (loaded.iter().find(|db| db.name().eq_ignore_ascii_case(&e.name)).cloned(), state.landlord.info_path(&e.name)))
        .collect();
    blocking(move || {
        Ok(work
            .into_iter()
            .map(|(open, path)| match open {
                Some(db) => (DatabaseInfoRecord::read(&db).ok(), false),
                None => (path.as_deref().and_then(database_info_cache::load), true),
            })
            .collect())
    })
    .await
}

/// `GET /databases`: names from the catalog; never opens a database.
pub async fn list(State(state): State<AppState>, caller: Option<Extension<Caller>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let start = query.get_usize("start", 0);
    let page_size = query.get_usize("pageSize", usize::MAX);
    // On a secured server a certificate sees the databases it may read, as in RavenDB (the Studio's list of a
    // user with one database shows that one); unsecured, there is no caller and every database is listed.
    let visible = |e: &CatalogEntry| caller.as_ref().is_none_or(|c| c.grant.allows(Access::DatabaseRead, Some(&e.name.to_lowercase())));
    let entries: Vec<CatalogEntry> = state.landlord.list().into_iter().filter(visible).skip(start).take(page_size).collect();
    if query.get_bool("namesOnly") {
        let names: Vec<Value> = entries.iter().map(|e| json!(e.name)).collect();
        return Ok(json_value(StatusCode::OK, &json!({ "Databases": names })));
    }
    let infos = database_infos(&state, &entries).await?;
    // Written as text, not built as a serde_json tree: with 1,000 databases the tree's allocations were most
    // of the request's time (the list must stay fast whatever the number of databases).
    let node = {
        let mut members = String::from("{\"Members\":[{\"NodeTag\":");
        push_json_string(&mut members, NODE_TAG);
        members.push_str(",\"NodeUrl\":");
        push_json_string(&mut members, &state.public_url);
        members.push_str(",\"ResponsibleNode\":");
        push_json_string(&mut members, NODE_TAG);
        members.push_str("}],\"Promotables\":[],\"Rehabs\":[],\"Status\":{}}");
        members
    };
    let mut body = String::with_capacity(64 + entries.len() * (700 + node.len()));
    body.push_str("{\"Databases\":[");
    for (i, (e, (info, cached))) in entries.iter().zip(infos).enumerate() {
        let info = info.unwrap_or_default();
        if i > 0 {
            body.push(',');
        }
        body.push_str("{\"Name\":");
        push_json_string(&mut body, &e.name);
        let _ = write!(
            body,
            ",\"Disabled\":{},\"IsEncrypted\":false,\"LoadState\":\"{}\",\"LockMode\":\"Unlock\",\"IsAdmin\":true,\"UpTime\":null,\
             \"CachedDatabaseInfo\":{},\"DocumentsCount\":{},\"IndexesCount\":{},\"IndexingErrors\":{},\
             \"TotalSize\":{{\"SizeInBytes\":{},\"HumaneSize\":\"{}\"}},\"TempBuffersSize\":{{\"SizeInBytes\":0,\"HumaneSize\":\"0 Bytes\"}},\
             \"Alerts\":0,\"PerformanceHints\":0,\"RejectClients\":false,\"IndexingStatus\":\"Running\",\"ReplicationFactor\":1,\"NodesTopology\":{}}}",
            e.disabled,
            state.landlord.load_state(&e.name),
            cached,
            info.documents_count,
            info.indexes_count,
            info.indexing_errors,
            info.size_on_disk,
            super::stats::humane(info.size_on_disk),
            node
        );
    }
    body.push_str("]}");
    Ok(json(StatusCode::OK, body))
}
