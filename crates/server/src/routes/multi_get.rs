//! `POST /databases/{db}/multi_get`: several GET (or query POST) requests in one round trip, the client's
//! lazy operations. Each sub-request is dispatched through the same router, so it behaves exactly like the
//! request sent alone (status, ETag, errors).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use axum::response::Response;
use serde_json::{json, Map, Value};
use tower::ServiceExt;

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::responses::json_value;
use crate::security::peer_certificate::ClientCertificate;
use crate::state::AppState;

/// Most sub-requests one multi_get may carry.
const MAX_REQUESTS: usize = 1024;

pub async fn multi_get(
    State(state): State<AppState>,
    Path(db): Path<String>,
    certificate: Option<axum::Extension<ClientCertificate>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let requests = request
        .get("Requests")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::BadRequest("The body must be {\"Requests\": [...]}".into()))?;
    if requests.len() > MAX_REQUESTS {
        return Err(ApiError::BadRequest(format!("A multi_get may carry at most {MAX_REQUESTS} requests, not {}", requests.len())));
    }
    state.landlord.database(&db).await?;
    let router = state.router.get().cloned().ok_or_else(|| ApiError::Internal("the router is not ready".into()))?;
    let mut results = Vec::with_capacity(requests.len());
    for (i, sub) in requests.iter().enumerate() {
        let mut sub_request = build_request(i, sub, &db)?;
        // Each sub-request is authorized as the client that sent the multi_get.
        if let Some(axum::Extension(certificate)) = &certificate {
            sub_request.extensions_mut().insert(certificate.clone());
        }
        let response = router.clone().oneshot(sub_request).await.map_err(|e| ApiError::Internal(format!("sub-request failed: {e}")))?;
        results.push(response_json(response).await?);
    }
    Ok(json_value(StatusCode::OK, &json!({ "Results": results })))
}

fn build_request(index: usize, sub: &Value, db: &str) -> ApiResult<Request<Body>> {
    let bad = |what: &str| ApiError::BadRequest(format!("Request #{index} of the multi_get: {what}"));
    let url = sub.get("Url").and_then(Value::as_str).ok_or_else(|| bad("'Url' is required"))?;
    // Sub-requests stay inside the database the multi_get was sent to.
    let prefix = format!("/databases/{db}/");
    let rest = url.get(..prefix.len()).filter(|head| head.eq_ignore_ascii_case(&prefix)).map(|_| &url[prefix.len()..]);
    if rest.is_none_or(|rest| rest.starts_with("multi_get")) {
        return Err(bad(&format!("'Url' must be a path of database '{db}' (got '{url}')")));
    }
    let query = sub.get("Query").and_then(Value::as_str).unwrap_or("");
    let query = query.trim_start_matches('?');
    let uri = if query.is_empty() { url.to_owned() } else { format!("{url}?{query}") };
    let method = match sub.get("Method").and_then(Value::as_str).unwrap_or("GET") {
        m if m.eq_ignore_ascii_case("GET") => Method::GET,
        m if m.eq_ignore_ascii_case("POST") => Method::POST,
        other => return Err(bad(&format!("method '{other}' is not allowed (GET or POST)"))),
    };
    let body = match sub.get("Content") {
        None | Some(Value::Null) => Body::empty(),
        Some(Value::String(text)) => Body::from(text.clone()),
        Some(other) => Body::from(other.to_string()),
    };
    let mut request = Request::builder().method(method).uri(&uri).body(body).map_err(|e| bad(&format!("invalid request: {e}")))?;
    if let Some(Value::Object(headers)) = sub.get("Headers") {
        for (name, value) in headers {
            let Some(value) = value.as_str() else { continue };
            // A header the sub-request cannot carry is refused, never dropped (it may be an If-Match).
            let header = HeaderName::from_bytes(name.as_bytes()).ok().zip(HeaderValue::from_str(value).ok());
            let (name, value) = header.ok_or_else(|| bad(&format!("header '{name}' is not valid")))?;
            request.headers_mut().insert(name, value);
        }
    }
    Ok(request)
}

async fn response_json(response: Response) -> ApiResult<Value> {
    let status = response.status();
    let mut headers = Map::new();
    for name in ["etag", "content-type"] {
        if let Some(value) = response.headers().get(name).and_then(|v| v.to_str().ok()) {
            let key = if name == "etag" { "ETag" } else { "Content-Type" };
            headers.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| ApiError::Internal(format!("could not read a sub-response: {e}")))?;
    // A 404 carries no result, as for a direct request (the clients read a missing index or document from
    // the null result, and would take an error body for a result).
    let result = if bytes.is_empty() || status == StatusCode::NOT_FOUND {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    Ok(json!({"Result": result, "StatusCode": status.as_u16(), "Headers": headers}))
}
