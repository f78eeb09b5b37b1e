//! A database's configuration kept in its catalog entry: `/admin/record`, `/admin/configuration/settings`,
//! `/admin/connection-strings`; and the configuration RavenDB compiles from C# (custom sorters and analyzers)
//! or ships as data (sample data), which Corvid refuses with a clear NotSupported error.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// The connection-string families of the database record, as `<Type>ConnectionStrings`.
const CONNECTION_STRING_TYPES: &[&str] = &["Raven", "Sql", "Olap", "ElasticSearch", "Queue", "Snowflake", "Ai"];

/// `GET /databases/{db}/admin/record`: the record, as `GET /admin/databases?name=` answers it.
pub async fn record(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    super::admin_databases::record_response(&state, &db).await
}

/// `PUT /databases/{db}/admin/configuration/settings`: the body is the record's new `Settings` object.
pub async fn put_settings(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let Value::Object(settings) = read_json(body, &headers, state.config.max_body_bytes).await? else {
        return Err(ApiError::BadRequest("The body must be an object of setting names and values".into()));
    };
    let landlord = state.landlord.clone();
    blocking(move || landlord.update(&db, |entry| entry.settings = settings).map(|_| ())).await?;
    state.raft_index.fetch_add(1, Ordering::Relaxed);
    // Created without a body, as RavenDB answers (the Node client refuses a body here).
    Ok(StatusCode::CREATED.into_response())
}

/// `GET /databases/{db}/admin/configuration/settings`.
pub async fn get_settings(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    Ok(json_value(StatusCode::OK, &json!({ "Settings": entry.settings })))
}

fn connection_string_type(value: Option<&str>) -> ApiResult<&'static str> {
    let value = value.ok_or_else(|| ApiError::BadRequest("A connection string needs its 'Type'".into()))?;
    CONNECTION_STRING_TYPES.iter().find(|t| t.eq_ignore_ascii_case(value)).copied().ok_or_else(|| {
        ApiError::BadRequest(format!("Unknown connection string type '{value}'; known: {}", CONNECTION_STRING_TYPES.join(", ")))
    })
}

/// `PUT /databases/{db}/admin/connection-strings`: adds or replaces one connection string by type and name.
pub async fn put_connection_string(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let definition = read_json(body, &headers, state.config.max_body_bytes).await?;
    let kind = connection_string_type(definition.get("Type").and_then(Value::as_str))?;
    let name = definition.get("Name").and_then(Value::as_str).filter(|n| !n.trim().is_empty());
    let name = name.ok_or_else(|| ApiError::BadRequest("A connection string needs a 'Name'".into()))?.to_owned();
    let landlord = state.landlord.clone();
    blocking(move || {
        landlord
            .update(&db, |entry| {
                let family = entry.connection_strings.entry(kind).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(family) = family {
                    family.insert(name, definition);
                }
            })
            .map(|_| ())
    })
    .await?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index })))
}

/// `GET /databases/{db}/admin/connection-strings[?connectionStringName=&type=]`.
pub async fn get_connection_strings(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    let only_name = query.get_non_empty("connectionStringName");
    let only_type = match query.get_non_empty("type") {
        Some(t) => Some(connection_string_type(Some(t))?),
        None => None,
    };
    let mut out = Map::new();
    for kind in CONNECTION_STRING_TYPES {
        let mut family = entry.connection_strings.get(*kind).and_then(Value::as_object).cloned().unwrap_or_default();
        if only_type.is_some_and(|t| t != *kind) {
            family.clear();
        }
        if let Some(name) = only_name {
            family.retain(|n, _| n == name);
        }
        out.insert(format!("{kind}ConnectionStrings"), Value::Object(family));
    }
    Ok(json_value(StatusCode::OK, &Value::Object(out)))
}

/// `DELETE /databases/{db}/admin/connection-strings?connectionString=<name>&type=<type>`.
pub async fn delete_connection_string(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name =
        query.get_non_empty("connectionString").ok_or_else(|| ApiError::BadRequest("'connectionString' is required".into()))?.to_owned();
    let kind = connection_string_type(query.get_non_empty("type"))?;
    let landlord = state.landlord.clone();
    blocking(move || {
        landlord
            .update(&db, |entry| {
                if let Some(Value::Object(family)) = entry.connection_strings.get_mut(kind) {
                    family.remove(&name);
                }
            })
            .map(|_| ())
    })
    .await?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index })))
}

/// Custom sorters and analyzers are C# classes RavenDB compiles; Corvid has no C# compiler.
pub async fn custom_sorters() -> ApiResult<Response> {
    Err(ApiError::NotSupported(
        "Custom sorters are C# classes compiled by RavenDB; Corvid cannot run them. Use the built-in sort types (string, long, double, alphaNumeric)"
            .into(),
    ))
}

pub async fn custom_analyzers() -> ApiResult<Response> {
    Err(ApiError::NotSupported(
        "Custom analyzers are C# classes compiled by RavenDB; Corvid cannot run them. Use a built-in analyzer (Standard, Stop, Simple, Whitespace, Keyword, ...)"
            .into(),
    ))
}

pub async fn sample_data() -> ApiResult<Response> {
    Err(ApiError::NotSupported("Corvid does not ship RavenDB's sample data set (Northwind); import your own documents instead".into()))
}
