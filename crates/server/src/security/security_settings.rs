//! The security settings (RavenDB's `Security.*` names; see README).

use std::path::PathBuf;

use super::server_certificate::CertificateSource;
use super::unsecured_access::UnsecuredAccess;

/// HTTPS, client certificates and the unsecured access rules.
#[derive(Debug, Clone, Default)]
pub struct SecuritySettings {
    /// The server's certificate (`Security.Certificate.Path`): set, the server speaks only HTTPS and TLS.
    pub certificate: Option<CertificateSource>,
    /// Thumbprints that are cluster admins without registration (`Security.WellKnownCertificates.Admin`).
    pub well_known_admins: Vec<String>,
    /// Without a certificate, the client addresses served (`Security.UnsecuredAccessAllowed`).
    pub unsecured_access: UnsecuredAccess,
    /// Where the audit log is written (`Security.AuditLog.FolderPath`); None: no audit log.
    pub audit_log_dir: Option<PathBuf>,
}
