//! Where the TCP listener is (`/info/tcp`, `/info/remote-task/tcp`, `/databases/{db}/info/tcp`): the clients
//! ask before opening a subscription worker's connection.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::json_value;
use crate::state::AppState;

/// `tcp://host:port`: the host the client reached us by (unless a public URL is configured), so it keeps
/// talking to the same address, with the TCP listener's port.
fn tcp_url(state: &AppState, headers: &HeaderMap) -> ApiResult<String> {
    if state.config.public_server_url.is_some() || state.config.tcp_url.is_some() {
        return Ok(state.tcp_url.clone());
    }
    let port = state.tcp_url.rsplit_once(':').map(|(_, port)| port).unwrap_or_default();
    Ok(match crate::request_headers::text(headers, "host")? {
        // `host:port` or `[v6]:port`: keep the host part only.
        Some(host) if !host.is_empty() => {
            let host = match host.rsplit_once(':') {
                Some((name, p)) if p.bytes().all(|b| b.is_ascii_digit()) => name,
                _ => host,
            };
            format!("tcp://{host}:{port}")
        }
        _ => state.tcp_url.clone(),
    })
}

/// The URL, and the server's certificate (base64 DER) when the listener speaks TLS: the clients pin it.
fn answer(state: &AppState, url: String) -> Response {
    use base64::Engine;
    let certificate = state.security.as_ref().map(|s| base64::engine::general_purpose::STANDARD.encode(s.certificate().leaf_der()));
    json_value(StatusCode::OK, &json!({"Url": url, "Certificate": certificate}))
}

/// `GET /info/tcp`
pub async fn server_tcp_info(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    Ok(answer(&state, tcp_url(&state, &headers)?))
}

/// `GET /info/remote-task/tcp?database=&remote-task=&verify-database=true`: what the clients call first.
pub async fn remote_task_tcp_info(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    if query.get("verify-database").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        let database = query.get_non_empty("database").ok_or_else(|| ApiError::BadRequest("'database' is required".into()))?;
        state.landlord.entry(database).ok_or_else(|| ApiError::DatabaseDoesNotExist(database.to_owned()))?;
    }
    Ok(answer(&state, tcp_url(&state, &headers)?))
}

/// `GET /databases/{db}/info/tcp`: the clients' fallback when the remote-task call is refused.
pub async fn database_tcp_info(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    state.landlord.entry(&db).ok_or(ApiError::DatabaseDoesNotExist(db))?;
    Ok(answer(&state, tcp_url(&state, &headers)?))
}
