//! RavenDB's security model: the server's certificate (HTTPS and TLS on the TCP listener), the client
//! certificates it knows and their clearances, and the one table of the access every route needs.

pub mod access;
pub mod access_table;
pub mod active_content;
pub mod audit_log;
pub mod authorization;
pub mod browser_guard;
pub mod certificate_registry;
pub mod certificate_replacement;
pub mod certificate_watch;
pub mod client_certificate_factory;
pub mod client_verifier;
pub mod peer_certificate;
#[cfg(test)]
mod router_access_audit;
pub mod security_settings;
pub mod server_certificate;
pub mod server_security;
pub mod tls_acceptor;
pub mod unsecured_access;

/// The `Security` section of `/admin/metrics`: the certificate in use, its reloads, the audit log's writes.
pub fn metrics(state: &crate::state::AppState) -> serde_json::Value {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(security) = &state.security else {
        return serde_json::json!({"Https": false, "UnsecuredAccessAllowed": state.config.security.unsecured_access.describe()});
    };
    let audit = security.audit.as_ref().map(
        |a| serde_json::json!({"LinesWritten": a.stats.lines_written.load(Relaxed), "WriteErrors": a.stats.write_errors.load(Relaxed)}),
    );
    serde_json::json!({
        "Https": true,
        "ServerCertificate": security.certificate().thumbprint,
        "CertificateReloads": security.reload_stats.reloads.load(Relaxed),
        "CertificateReloadFailures": security.reload_stats.failures.load(Relaxed),
        "RegisteredCertificates": security.registry.list().len(),
        "AuditLog": audit,
    })
}
