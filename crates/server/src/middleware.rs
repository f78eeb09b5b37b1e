//! The edge every request passes: the concurrency limit, the request log line, the server version header,
//! and the request URL in error bodies.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::BodyRate;
use crate::error::{ApiError, ErrorBody};
use crate::memory_budget::ReservedBody;
use crate::state::AppState;
use crate::timed_body::{SlowBodyFlag, TimedBody};

/// RavenDB version we answer as; the Python client refuses cluster transactions below 4.1.
pub const SERVER_VERSION: &str = "7.0.0.70000";

pub async fn edge(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let number = state.request_counter.fetch_add(1, Ordering::Relaxed) + 1;
    let method = request.method().clone();
    // A clone shares the URI's bytes: nothing is copied unless an error body or the log needs it.
    let uri = request.uri().clone();
    state.database_traffic.record(uri.path());
    let started = Instant::now();
    let (request, slow_body) = timed_body(request, state.config.body_rate);
    let mut response = match state.request_slots.clone().try_acquire_owned() {
        Ok(permit) => {
            let needs = crate::memory_budget::estimate(&request);
            let response = match state.memory_budget.admit(needs).await {
                // The reservation is held until the response is sent: results are in memory until then.
                Ok(Some(reserved)) => next.run(request).await.map(|body| ReservedBody::wrap(body, reserved)),
                Ok(None) => next.run(request).await,
                Err(e) => e.into_response(),
            };
            drop(permit);
            response
        }
        Err(_) => {
            state.rejected_requests.fetch_add(1, Ordering::Relaxed);
            ApiError::ServerTooBusy(format!(
                "{} requests are already in progress (limit: max_concurrent_requests)",
                state.config.max_concurrent_requests
            ))
            .into_response()
        }
    };
    if slow_body.is_some_and(|flag| flag.is_set()) {
        response = too_slow(state.config.body_rate);
    }
    let mut response = crate::error::as_error_json(response).await;
    if let Some(error) = response.extensions_mut().remove::<ErrorBody>() {
        let body = serde_json::json!({
            "Url": path_and_query(&uri),
            "Type": error.type_name,
            "Message": error.message,
            "Error": format!("{}: {}", error.type_name, error.message),
        });
        response.headers_mut().remove("content-length");
        *response.body_mut() = Body::from(body.to_string());
    }
    response.headers_mut().insert("Raven-Server-Version", HeaderValue::from_static(SERVER_VERSION));
    if let Some(log) = &state.request_log {
        log.record(number, &method, started.elapsed(), response.status().as_u16(), path_and_query(&uri));
    }
    response
}

fn path_and_query(uri: &Uri) -> &str {
    uri.path_and_query().map(|p| p.as_str()).unwrap_or("")
}

fn timed_body(request: Request, rate: BodyRate) -> (Request, Option<SlowBodyFlag>) {
    if !rate.is_enabled() {
        return (request, None);
    }
    let (parts, body) = request.into_parts();
    let (body, flag) = TimedBody::wrap(body, rate);
    (Request::from_parts(parts, body), Some(flag))
}

/// Whatever the handler answered, a body cut off for being too slow is a 408, and the connection is closed
/// (the rest of the body is never read).
fn too_slow(rate: BodyRate) -> Response {
    let mut response = ApiError::Timeout(format!(
        "The request body arrived too slowly: less than {} bytes in {} ms of waiting (request_body_min_rate, request_body_timeout_ms)",
        rate.min_bytes_per_window(),
        rate.window.as_millis()
    ))
    .into_response();
    response.headers_mut().insert(axum::http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}
