//! A secured server's state: its certificate, the TLS acceptor built from it, and the client certificates
//! it knows.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use super::audit_log::AuditLog;
use super::certificate_registry::CertificateRegistry;
use super::security_settings::SecuritySettings;
use super::server_certificate::{CertificateSource, ServerCertificate};
use super::tls_acceptor::TlsAcceptor;
use crate::landlord::Landlord;

/// Everything a server with a certificate needs to authenticate its clients.
pub struct ServerSecurity {
    pub source: CertificateSource,
    certificate: RwLock<Arc<ServerCertificate>>,
    pub tls: Arc<TlsAcceptor>,
    pub registry: CertificateRegistry,
    /// Set when `Security.AuditLog.FolderPath` is.
    pub audit: Option<Arc<AuditLog>>,
    pub reload_stats: ReloadStats,
}

impl ServerSecurity {
    /// Loads the certificate of `settings` (None when there is none) and the registered client certificates.
    pub fn start(
        settings: &SecuritySettings,
        landlord: &Landlord,
        handshake_timeout: Duration,
        https_url: String,
    ) -> std::io::Result<Option<ServerSecurity>> {
        let Some(source) = &settings.certificate else {
            return Ok(None);
        };
        let certificate =
            ServerCertificate::load(source).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let audit = settings.audit_log_dir.as_deref().map(AuditLog::start).transpose()?.map(Arc::new);
        let tls = Arc::new(TlsAcceptor::new(
            certificate.tls_config().map_err(std::io::Error::other)?,
            handshake_timeout,
            https_url,
            audit.clone(),
        ));
        let registry = CertificateRegistry::load(landlord.catalog(), settings.well_known_admins.clone())?;
        // The server's own certificate is a cluster admin, as a RavenDB node's is.
        registry.set_server_certificate(&certificate.thumbprint);
        Ok(Some(ServerSecurity {
            source: source.clone(),
            certificate: RwLock::new(Arc::new(certificate)),
            tls,
            registry,
            audit,
            reload_stats: ReloadStats::default(),
        }))
    }

    /// The certificate in use now.
    pub fn certificate(&self) -> Arc<ServerCertificate> {
        self.certificate.read().clone()
    }

    /// Reads the certificate file again and serves new connections with it. Blocking (use
    /// `certificate_watch::reload`, which counts it).
    pub fn reload(&self) -> Result<Arc<ServerCertificate>, String> {
        let certificate = ServerCertificate::load(&self.source).map_err(|e| e.to_string())?;
        let config = certificate.tls_config().map_err(|e| e.to_string())?;
        let certificate = Arc::new(certificate);
        self.tls.replace(config);
        self.registry.set_server_certificate(&certificate.thumbprint);
        *self.certificate.write() = certificate.clone();
        Ok(certificate)
    }
}

/// Reloads done and failed (a file half-written, a wrong password: the old certificate stays in use).
#[derive(Debug, Default)]
pub struct ReloadStats {
    pub reloads: AtomicU64,
    pub failures: AtomicU64,
}
