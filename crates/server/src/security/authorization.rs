//! The one middleware that checks every request of a secured server against the access table: the
//! route's access (by its pattern and method) against what the client's certificate is granted.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::access::{Access, Grant};
use super::access_table;
use super::certificate_registry::Identity;
use super::peer_certificate::ClientCertificate;
use super::peer_certificate::PeerCertificate;
use crate::error::ApiError;
use crate::state::AppState;

/// Who made the request, once authorized (handlers that act on clearances read it).
#[derive(Debug, Clone)]
pub struct Caller {
    pub certificate: Arc<PeerCertificate>,
    pub grant: Arc<Grant>,
    pub name: String,
}

/// Refuses the request unless the client's certificate grants what its route needs.
pub async fn authorize(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let access = match request.extensions().get::<MatchedPath>() {
        // A route missing from the table is for cluster admins only, until it is added.
        Some(pattern) => access_table::required(request.method(), pattern.as_str()).unwrap_or(Access::ClusterAdmin),
        // No route matched: the fallback only answers errors.
        None => Access::ValidUser,
    };
    match check(&state, &request, access) {
        Ok(Some(caller)) => {
            let administrative = matches!(access, Access::DatabaseAdmin | Access::Operator | Access::ClusterAdmin)
                && !matches!(*request.method(), Method::GET | Method::HEAD);
            let audited = administrative.then(|| (caller.clone(), format!("{} {}", request.method(), request.uri())));
            request.extensions_mut().insert(caller);
            let response = next.run(request).await;
            if let (Some((caller, what)), Some(audit)) = (audited, state.security.as_ref().and_then(|s| s.audit.as_ref())) {
                audit.record(&caller.certificate.thumbprint, &caller.name, &format!("{what} -> {}", response.status().as_u16()));
            }
            response
        }
        Ok(None) => next.run(request).await,
        Err(denied) => denied.into_response(),
    }
}

fn check(state: &AppState, request: &Request, access: Access) -> Result<Option<Caller>, ApiError> {
    let certificate = request.extensions().get::<ClientCertificate>().and_then(|c| c.0.clone());
    let Some(certificate) = certificate else {
        if access == Access::Anyone {
            return Ok(None);
        }
        return Err(ApiError::Authorization(
            "This server requires client certificate for authentication, but none was provided by the client.".into(),
        ));
    };
    // Built only for an answer that refuses: the success path of every request allocates nothing here.
    let named = || format!("'{} ({})'", certificate.subject, certificate.thumbprint);
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if !certificate.is_valid_at(now) {
        return Err(ApiError::Authorization(format!(
            "The supplied client certificate {} is not valid now: it is valid from {} to {}.",
            named(),
            corvid_types::format_date_ms(certificate.not_before.saturating_mul(1000)),
            corvid_types::format_date_ms(certificate.not_after.saturating_mul(1000)),
        )));
    }
    let security = state.security.as_ref().ok_or_else(|| ApiError::Internal("security is not configured".into()))?;
    let (grant, name) = match security.registry.identify(&certificate) {
        Identity::Known { grant, name } => (grant, name),
        Identity::Unknown if access == Access::Anyone => return Ok(None),
        Identity::Unknown => {
            return Err(ApiError::Authorization(format!(
                "The supplied client certificate {} is unknown to the server. In order to register your certificate please contact your system administrator.",
                named()
            )))
        }
    };
    let database = database_of(request.uri().path());
    if !grant.allows(access, database.as_deref()) {
        let named = named();
        let what = match (&database, access) {
            (Some(db), Access::DatabaseRead) => format!("access to database '{db}'"),
            (Some(db), Access::DatabaseWrite) => format!("write access to database '{db}'"),
            (Some(db), Access::DatabaseAdmin) => format!("admin access to database '{db}'"),
            (_, Access::ClusterAdmin) => "the ClusterAdmin clearance".to_owned(),
            (_, Access::Operator) => "the Operator clearance".to_owned(),
            _ => "access".to_owned(),
        };
        return Err(ApiError::Authorization(format!(
            "Forbidden: {} {} needs {what}, which the client certificate {named} does not have.",
            request.method(),
            request.uri().path()
        )));
    }
    Ok(Some(Caller { certificate, grant, name }))
}

/// The lower-cased database name of a `/databases/{db}/...` path (borrowed when it needs no decoding).
fn database_of(path: &str) -> Option<Cow<'_, str>> {
    let rest = path.strip_prefix("/databases/")?;
    let name = rest.split('/').next().filter(|name| !name.is_empty())?;
    if !name.bytes().any(|b| b == b'%' || b.is_ascii_uppercase() || !b.is_ascii()) {
        return Some(Cow::Borrowed(name));
    }
    Some(Cow::Owned(percent_encoding::percent_decode_str(name).decode_utf8_lossy().to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_from_paths() {
        assert_eq!(database_of("/databases/Orders/docs").as_deref(), Some("orders"));
        assert_eq!(database_of("/databases/my%20db/stats").as_deref(), Some("my db"));
        assert_eq!(database_of("/databases"), None);
        assert_eq!(database_of("/admin/databases"), None);
    }
}
