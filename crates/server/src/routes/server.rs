//! Server-level bootstrap endpoints: version, topologies, client configuration, operation ids.

use std::sync::atomic::Ordering;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_types::NODE_TAG;
use serde_json::json;

use crate::error::ApiResult;
use crate::query::QueryParams;
use crate::responses::json_value;
use crate::state::AppState;

pub async fn build_version() -> Response {
    json_value(
        StatusCode::OK,
        &json!({"ProductVersion": "7.0", "BuildVersion": 70000, "CommitHash": env!("CARGO_PKG_VERSION"), "FullVersion": "7.0.0-corvid"}),
    )
}

/// The configured public URL (`PublicServerUrl`), else the URL the client reached us by, so it keeps talking
/// to the same address.
fn node_url(state: &AppState, headers: &HeaderMap) -> ApiResult<String> {
    if state.config.public_server_url.is_some() {
        return Ok(state.public_url.clone());
    }
    Ok(match crate::request_headers::text(headers, "host")? {
        Some(host) if !host.is_empty() => {
            let scheme = if state.security.is_some() { "https" } else { "http" };
            format!("{scheme}://{host}")
        }
        _ => state.public_url.clone(),
    })
}

pub async fn topology(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let url = node_url(&state, &headers)?;
    let database = match query.get_non_empty("name") {
        Some(name) => {
            let entry = state.landlord.entry(name).ok_or_else(|| crate::error::ApiError::DatabaseDoesNotExist(name.to_owned()))?;
            Some(entry.name)
        }
        None => None,
    };
    Ok(json_value(
        StatusCode::OK,
        &json!({"Etag": 1, "Nodes": [{"Url": url, "ClusterTag": NODE_TAG, "ServerRole": "Member", "Database": database}], "Promotables": []}),
    ))
}

pub async fn cluster_topology(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let url = node_url(&state, &headers)?;
    Ok(json_value(
        StatusCode::OK,
        &json!({
            "Topology": {"TopologyId": "corvid", "AllNodes": {NODE_TAG: url}, "Members": {NODE_TAG: url}, "Promotables": {},
                         "Watchers": {}, "LastNodeId": NODE_TAG, "Etag": 1},
            "Etag": 1, "Leader": NODE_TAG, "LeaderShipDuration": 0, "CurrentState": "Leader", "NodeTag": NODE_TAG,
            "CurrentTerm": 1, "NodeLicenseDetails": {}, "LastStateChangeReason": null, "Status": {}
        }),
    ))
}

pub async fn client_configuration(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    state.landlord.database(&db).await?;
    Ok(json_value(StatusCode::OK, &json!({"Etag": 0, "Configuration": null})))
}

pub async fn server_client_configuration() -> Response {
    json_value(StatusCode::OK, &json!({"Etag": 0, "Configuration": null}))
}

pub async fn next_operation_id_server(State(state): State<AppState>) -> Response {
    next_operation_id_response(&state)
}

fn next_operation_id_response(state: &AppState) -> Response {
    let id = state.operation_ids.fetch_add(1, Ordering::Relaxed);
    json_value(StatusCode::OK, &json!({"Id": id, "NodeTag": NODE_TAG}))
}
