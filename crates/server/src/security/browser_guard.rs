//! Defences against requests a browser sends on a web page's behalf, since a Studio lives on the server's
//! origin: a state-changing request whose `Origin` is another site's (CSRF) is refused, and so is, on a
//! server bound to this machine only, a request whose `Host` is not a name of this machine (DNS rebinding).
//! The official clients send no `Origin` and this machine's address as `Host`, so they never trip it.

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Refuses cross-site state-changing requests and rebound host names.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state, &request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

fn check(state: &AppState, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if let Some(host) = host {
        if state.loopback_only && !is_local_host(host) && !same_authority(host, &state.public_url) {
            return Err(ApiError::Authorization(format!(
                "The Host header '{host}' is not a name of this server, which listens on this machine only (a DNS rebinding attempt?)"
            )));
        }
    }
    let changes_state = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let Some(origin) = headers.get(header::ORIGIN).filter(|_| changes_state) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("null");
    let origin_authority = origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'));
    let own = origin_authority.is_some_and(|authority| host == Some(authority) || same_authority(authority, &state.public_url));
    if own {
        Ok(())
    } else {
        Err(ApiError::Authorization(format!(
            "A {} from the web origin '{origin}' is refused: only pages served by this server may change its data (cross-site request)",
            request.method()
        )))
    }
}

/// `127.0.0.1`, `localhost` or `[::1]`, with any port.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map(|(name, _)| name).unwrap_or(host),
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
}

/// Whether `authority` (`host:port`) is the authority of `url`.
fn same_authority(authority: &str, url: &str) -> bool {
    url.split_once("://").is_some_and(|(_, rest)| rest.trim_end_matches('/').eq_ignore_ascii_case(authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names() {
        assert!(is_local_host("127.0.0.1:8080"));
        assert!(is_local_host("localhost"));
        assert!(is_local_host("[::1]:80"));
        assert!(!is_local_host("attacker.example:8080"));
        assert!(same_authority("db.example:443", "https://db.example:443"));
        assert!(!same_authority("evil.example", "https://db.example:443"));
    }
}
