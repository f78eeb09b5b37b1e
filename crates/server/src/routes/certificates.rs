//! Client certificates: `GET/PUT/POST/DELETE /admin/certificates`, `POST /admin/certificates/edit` and
//! `GET /certificates/whoami`, as RavenDB answers them. Operators manage certificates, but only cluster
//! admins may create, change or delete a cluster admin's.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content};
use crate::security::access::{Clearance, DatabaseAccess};
use crate::security::authorization::Caller;
use crate::security::certificate_registry::CertificateRecord;
use crate::security::client_certificate_factory;
use crate::security::peer_certificate::PeerCertificate;
use crate::security::server_security::ServerSecurity;
use crate::state::AppState;

/// RavenDB's default lifetime of a generated client certificate: five years.
const GENERATED_VALID_DAYS: i64 = 5 * 365;

fn security(state: &AppState) -> ApiResult<Arc<ServerSecurity>> {
    state.security.clone().ok_or_else(|| {
        ApiError::BadRequest(
            "This server has no certificate (Security.Certificate.Path): client certificates are used only over HTTPS".into(),
        )
    })
}

fn date(unix_seconds: i64) -> String {
    corvid_types::format_date_ms(unix_seconds.saturating_mul(1000))
}

/// `GET /certificates/whoami`: the caller's certificate record (204 without a certificate).
pub async fn whoami(State(state): State<AppState>, caller: Option<Extension<Caller>>) -> ApiResult<Response> {
    let Some(Extension(caller)) = caller else {
        return Ok(no_content());
    };
    let security = security(&state)?;
    let record = security.registry.get(&caller.certificate.thumbprint).unwrap_or_else(|| unregistered_admin(&caller.certificate));
    Ok(json_value(StatusCode::OK, &serde_json::to_value(record).map_err(|e| ApiError::Internal(e.to_string()))?))
}

/// The record shown for the server's own certificate or a well-known admin's.
fn unregistered_admin(certificate: &PeerCertificate) -> CertificateRecord {
    CertificateRecord {
        name: certificate.subject.clone(),
        thumbprint: certificate.thumbprint.clone(),
        certificate: base64::engine::general_purpose::STANDARD.encode(&certificate.der),
        security_clearance: Clearance::ClusterAdmin,
        permissions: BTreeMap::new(),
        not_before: date(certificate.not_before),
        not_after: date(certificate.not_after),
        public_key_pinning_hash: String::new(),
        disabled: false,
        collection_primary_key: String::new(),
        collection_secondary_keys: Vec::new(),
    }
}

/// `GET /admin/certificates?thumbprint=&name=&metadataOnly=&start=&pageSize=`
pub async fn list(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let security = security(&state)?;
    let query = QueryParams::parse(raw.as_deref())?;
    let metadata_only = query.get_bool("metadataOnly");
    let records = match query.get_non_empty("thumbprint") {
        Some(thumbprint) => match security.registry.get(thumbprint) {
            Some(record) => vec![record],
            None => return Ok(crate::responses::not_found()),
        },
        None => {
            let name = query.get_non_empty("name");
            let all = security.registry.list().into_iter().filter(|r| name.is_none_or(|n| r.name == n));
            all.skip(query.get_usize("start", 0)).take(query.get_usize("pageSize", usize::MAX)).collect()
        }
    };
    let results: Vec<Value> = records
        .into_iter()
        .map(|record| {
            let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
            if metadata_only {
                if let Some(fields) = value.as_object_mut() {
                    fields.remove("Certificate");
                }
            }
            value
        })
        .collect();
    let body = json!({
        "Results": results,
        "LoadedServerCert": security.certificate().thumbprint,
        "WellKnownAdminCerts": state.config.security.well_known_admins,
    });
    Ok(json_value(StatusCode::OK, &body))
}

/// What a request to register, generate or edit a certificate asks for.
struct Definition {
    name: String,
    clearance: Clearance,
    permissions: BTreeMap<String, DatabaseAccess>,
}

fn definition(body: &Value) -> ApiResult<Definition> {
    let name = body.get("Name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty());
    let name = name.ok_or_else(|| ApiError::BadRequest("A certificate needs a 'Name'".into()))?.to_owned();
    let clearance = match body.get("SecurityClearance").and_then(Value::as_str).unwrap_or("ValidUser") {
        "ClusterAdmin" => Clearance::ClusterAdmin,
        "Operator" => Clearance::Operator,
        "ValidUser" => Clearance::ValidUser,
        other => {
            return Err(ApiError::BadRequest(format!(
                "'{other}' is not a clearance a client certificate can have (ClusterAdmin, Operator, ValidUser)"
            )))
        }
    };
    let mut permissions = BTreeMap::new();
    if let Some(Value::Object(entries)) = body.get("Permissions") {
        for (database, access) in entries {
            let access = match access.as_str() {
                Some("Admin") => DatabaseAccess::Admin,
                Some("ReadWrite") => DatabaseAccess::ReadWrite,
                Some("Read") => DatabaseAccess::Read,
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "The permission on '{database}' must be Admin, ReadWrite or Read (got {access})"
                    )))
                }
            };
            if database.trim().is_empty() {
                return Err(ApiError::BadRequest("A permission names an empty database".into()));
            }
            permissions.insert(database.clone(), access);
        }
    }
    Ok(Definition { name, clearance, permissions })
}

/// Operators manage certificates below cluster admin; only cluster admins touch cluster admins.
fn may_manage(caller: Option<&Caller>, clearance: Clearance) -> ApiResult<()> {
    let Some(caller) = caller else { return Ok(()) };
    if clearance == Clearance::ClusterAdmin && caller.grant.clearance != Clearance::ClusterAdmin {
        return Err(ApiError::Authorization(format!(
            "Bad security clearance: '{}' is an Operator and cannot register, change or delete a ClusterAdmin certificate.",
            caller.name
        )));
    }
    Ok(())
}

/// The certificate of a `Certificate` field: base64 of DER, or of PEM text (what `.crt` files hold).
fn certificate_der(text: &str) -> ApiResult<Vec<u8>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| ApiError::BadRequest(format!("'Certificate' is not base64: {e}")))?;
    if bytes.trim_ascii_start().starts_with(b"-----BEGIN") {
        let der = CertificateDer::from_pem_slice(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("'Certificate' holds no PEM certificate: {e}")))?;
        return Ok(der.to_vec());
    }
    Ok(bytes)
}

fn record_of(definition: Definition, der: &[u8]) -> ApiResult<CertificateRecord> {
    let certificate = PeerCertificate::from_der(der)
        .ok_or_else(|| ApiError::BadRequest("Unable to load the provided certificate: it is not an X.509 certificate".into()))?;
    Ok(CertificateRecord {
        name: definition.name,
        thumbprint: certificate.thumbprint.clone(),
        certificate: base64::engine::general_purpose::STANDARD.encode(der),
        security_clearance: definition.clearance,
        permissions: definition.permissions,
        not_before: date(certificate.not_before),
        not_after: date(certificate.not_after),
        public_key_pinning_hash: String::new(),
        disabled: false,
        collection_primary_key: String::new(),
        collection_secondary_keys: Vec::new(),
    })
}

async fn store(state: &AppState, security: Arc<ServerSecurity>, record: CertificateRecord) -> ApiResult<()> {
    let landlord = state.landlord.clone();
    blocking(move || security.registry.put(landlord.catalog(), record).map_err(|e| ApiError::Internal(e.to_string()))).await
}

/// `PUT /admin/certificates`: registers a client certificate (its public part) with a clearance.
pub async fn register(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let security = security(&state)?;
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let definition = definition(&body)?;
    let caller = caller.map(|Extension(c)| c);
    may_manage(caller.as_ref(), definition.clearance)?;
    let text =
        body.get("Certificate").and_then(Value::as_str).ok_or_else(|| ApiError::BadRequest("'Certificate' (base64) is required".into()))?;
    let record = record_of(definition, &certificate_der(text)?)?;
    if let Some(existing) = security.registry.get(&record.thumbprint) {
        may_manage(caller.as_ref(), existing.security_clearance)?;
    }
    store(&state, security, record).await?;
    Ok(StatusCode::CREATED.into_response())
}

/// `POST /admin/certificates`: generates a client certificate signed by the server's, registers it and
/// answers the zip of its files.
pub async fn generate(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let security = security(&state)?;
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let definition = definition(&body)?;
    may_manage(caller.as_ref().map(|Extension(c)| c), definition.clearance)?;
    let password = body.get("Password").and_then(Value::as_str).unwrap_or("").to_owned();
    let name = definition.name.clone();
    let server = security.certificate();
    let (record, zip) = blocking(move || {
        let generated =
            client_certificate_factory::generate(&server, &name, GENERATED_VALID_DAYS).map_err(|e| ApiError::Internal(e.to_string()))?;
        let zip = client_certificate_factory::zip_bundle(&name, &generated, &password).map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok((record_of(definition, &generated.der)?, zip))
    })
    .await?;
    store(&state, security, record).await?;
    let mut response = Response::new(Body::from(zip));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    response.headers_mut().insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"certificate.zip\""));
    Ok(response)
}

/// `DELETE /admin/certificates?thumbprint=`
pub async fn delete(State(state): State<AppState>, caller: Option<Extension<Caller>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let security = security(&state)?;
    let query = QueryParams::parse(raw.as_deref())?;
    let thumbprint =
        query.get_non_empty("thumbprint").ok_or_else(|| ApiError::BadRequest("'thumbprint' is required".into()))?.to_ascii_uppercase();
    let caller = caller.map(|Extension(c)| c);
    if caller.as_ref().is_some_and(|c| c.certificate.thumbprint == thumbprint) {
        return Err(ApiError::BadRequest("You cannot delete the certificate you are using to authenticate".into()));
    }
    if security.registry.is_well_known_admin(&thumbprint) {
        return Err(ApiError::BadRequest(format!(
            "{thumbprint} is the server's certificate or a well-known admin certificate (settings): it cannot be deleted"
        )));
    }
    if let Some(existing) = security.registry.get(&thumbprint) {
        may_manage(caller.as_ref(), existing.security_clearance)?;
    }
    let landlord = state.landlord.clone();
    blocking(move || security.registry.delete(landlord.catalog(), &thumbprint).map_err(|e| ApiError::Internal(e.to_string()))).await?;
    Ok(no_content())
}

/// `POST /admin/certificates/edit`: a registered certificate's name, clearance, permissions, disabled flag.
pub async fn edit(State(state): State<AppState>, caller: Option<Extension<Caller>>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let security = security(&state)?;
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let thumbprint =
        body.get("Thumbprint").and_then(Value::as_str).ok_or_else(|| ApiError::BadRequest("'Thumbprint' is required".into()))?;
    let existing = security
        .registry
        .get(thumbprint)
        .ok_or_else(|| ApiError::BadRequest(format!("There is no registered certificate with thumbprint {thumbprint}")))?;
    let definition = definition(&body)?;
    let caller = caller.map(|Extension(c)| c);
    may_manage(caller.as_ref(), existing.security_clearance)?;
    may_manage(caller.as_ref(), definition.clearance)?;
    let record = CertificateRecord {
        name: definition.name,
        security_clearance: definition.clearance,
        permissions: definition.permissions,
        disabled: body.get("Disabled").and_then(Value::as_bool).unwrap_or(false),
        ..existing
    };
    store(&state, security, record).await?;
    Ok(no_content())
}

/// `POST /admin/certificates/reload` (Corvid's): reads the server's certificate file again now (the file
/// watch does it by itself within seconds of a change) and answers the thumbprint in use.
pub async fn reload(State(state): State<AppState>) -> ApiResult<Response> {
    let security = security(&state)?;
    let thumbprint = blocking(move || {
        crate::security::certificate_watch::reload(&security, "asked through the API")
            .map_err(|e| ApiError::BadRequest(format!("The certificate was not reloaded: {e}")))
    })
    .await?;
    Ok(json_value(StatusCode::OK, &json!({"Thumbprint": thumbprint})))
}

/// `POST /admin/certificates/refresh` (RavenDB's refresh cycle, here without Let's Encrypt): reads the
/// configured certificate file again now.
pub async fn refresh(State(state): State<AppState>) -> ApiResult<Response> {
    let security = security(&state)?;
    blocking(move || {
        crate::security::certificate_watch::reload(&security, "a refresh asked through the API")
            .map_err(|e| ApiError::BadRequest(format!("Failed to trigger a certificate refresh cycle: {e}")))
    })
    .await?;
    Ok(no_content())
}

/// `POST /admin/certificates/replace-cluster-cert?replaceImmediately=` (`ReplaceClusterCertificateOperation`):
/// `{"Certificate": base64 PFX, "Password"?}` becomes the server's certificate, written over its file and
/// served to new connections at once (one node: `replaceImmediately` changes nothing). 201 as RavenDB.
pub async fn replace_server_certificate(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let security = security(&state)?;
    let body = read_json(body, &headers, state.config.max_body_bytes).await?;
    let failed = |why: String| ApiError::BadRequest(format!("Failed to replace the server certificate. {why}"));
    let text = body
        .get("Certificate")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| failed("Certificate is a required field in the certificate definition.".into()))?;
    let pfx = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| failed(format!("Unable to load the provided certificate: it is not base64 ({e}).")))?;
    let password = body.get("Password").and_then(Value::as_str).unwrap_or("").to_owned();
    blocking(move || crate::security::certificate_replacement::replace(&security, &pfx, &password).map_err(|e| failed(e.to_string())))
        .await?;
    Ok(StatusCode::CREATED.into_response())
}
