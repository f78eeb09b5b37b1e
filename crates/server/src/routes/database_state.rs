//! A database's state and placement on the (single-node) cluster: `/admin/databases/disable`, `/enable`,
//! `/promote`, `/reorder` and `PUT /admin/databases/node`, answered as a one-node RavenDB answers them.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::state::AppState;

pub async fn disable(state: State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    toggle(state, headers, body, true).await
}

pub async fn enable(state: State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    toggle(state, headers, body, false).await
}

/// `{"DatabaseNames": [...]}` → `{"Status": [{"Name", "Success", "Disabled", "Reason"}, ...]}`, one entry per
/// name; a database already in the asked state is a failed entry, not an error (RavenDB's answer).
async fn toggle(State(state): State<AppState>, headers: HeaderMap, body: Body, disable: bool) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let names: Vec<String> = request
        .get("DatabaseNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if names.is_empty() {
        return Err(ApiError::BadRequest("Changing a database's state requires DatabaseNames".into()));
    }
    let landlord = state.landlord.clone();
    let status = blocking(move || {
        let word = if disable { "disabled" } else { "enabled" };
        let mut status = Vec::new();
        for name in names {
            let entry = match landlord.set_disabled(&name, disable) {
                Ok(true) => {
                    json!({"Name": name, "Success": true, "Disabled": disable, "Reason": format!("Database state={disable} was applied")})
                }
                Ok(false) => json!({"Name": name, "Success": false, "Disabled": disable, "Reason": format!("Database already {word}")}),
                Err(ApiError::DatabaseDoesNotExist(_)) => {
                    json!({"Name": name, "Success": false, "Disabled": disable, "Reason": "Database doesn't exist"})
                }
                Err(e) => return Err(e),
            };
            status.push(entry);
        }
        Ok(status)
    })
    .await?;
    Ok(json_value(StatusCode::OK, &json!({ "Status": status })))
}

fn existing_name(state: &AppState, query: &QueryParams) -> ApiResult<String> {
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("'name' is required".into()))?;
    state.landlord.entry(name).map(|e| e.name).ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))
}

/// Promoting the one node, already a member: nothing changes.
pub async fn promote(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = existing_name(&state, &query)?;
    let node = query.get_non_empty("node").unwrap_or(NODE_TAG);
    if node != NODE_TAG {
        return Err(ApiError::InvalidOperation(format!(
            "Node {node} is not part of the topology of database '{name}' (its only node is {NODE_TAG})"
        )));
    }
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    Ok(json_value(StatusCode::OK, &json!({"Name": name, "RaftCommandIndex": index})))
}

/// `{"MembersOrder": [...], "Fixed": bool}`: the only order of one member is that member.
pub async fn reorder(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery, body: Body) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = existing_name(&state, &query)?;
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let order: Vec<&str> =
        request.get("MembersOrder").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if order != [NODE_TAG] {
        return Err(ApiError::BadRequest(format!(
            "The new order of members of '{name}' must list its current members exactly ({NODE_TAG}), got {order:?}"
        )));
    }
    Ok(no_content())
}

/// Adding a node: the database already lives on the only node there is.
pub async fn add_node(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let name = existing_name(&state, &query)?;
    Err(match query.get_non_empty("node") {
        Some(node) if node == NODE_TAG => {
            ApiError::InvalidOperation(format!("Can't add node {node} to the topology of '{name}' because it is already part of it"))
        }
        Some(node) => ApiError::InvalidOperation(format!("Node {node} is not part of the cluster (a single node, {NODE_TAG})")),
        None => {
            ApiError::InvalidOperation(format!("Database '{name}' is already on every node of the cluster (a single node, {NODE_TAG})"))
        }
    })
}
