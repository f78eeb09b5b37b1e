//! The certificate a client presented in the TLS handshake, as the access rules need it: its thumbprint,
//! its validity dates and its subject. Read once per connection.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use sha1::{Digest, Sha1};

/// A client's certificate, attached to every request of its connection.
#[derive(Debug, Clone)]
pub struct PeerCertificate {
    /// SHA-1 of the DER, upper-case hex: how RavenDB names certificates.
    pub thumbprint: String,
    /// Validity, in seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// The subject's common name (or the whole subject when it has none).
    pub subject: String,
    /// The DER bytes (the registration of a certificate by its holder keeps them).
    pub der: Vec<u8>,
}

impl PeerCertificate {
    /// Reads the parts of `der` the access rules use; None when it is not an X.509 certificate.
    pub fn from_der(der: &[u8]) -> Option<PeerCertificate> {
        let (_, parsed) = x509_parser::parse_x509_certificate(der).ok()?;
        let validity = parsed.validity();
        let subject = parsed
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_owned)
            .unwrap_or_else(|| parsed.subject().to_string());
        Some(PeerCertificate {
            thumbprint: thumbprint_of(der),
            not_before: validity.not_before.timestamp(),
            not_after: validity.not_after.timestamp(),
            subject,
            der: der.to_vec(),
        })
    }

    /// Whether the certificate is valid at `now` (seconds since the epoch).
    pub fn is_valid_at(&self, now: i64) -> bool {
        self.not_before <= now && now <= self.not_after
    }
}

/// SHA-1 of a certificate's DER in upper-case hex.
pub fn thumbprint(der: &CertificateDer<'_>) -> String {
    thumbprint_of(der.as_ref())
}

/// SHA-1 of DER bytes in upper-case hex.
pub fn thumbprint_of(der: &[u8]) -> String {
    let digest = Sha1::digest(der);
    digest.iter().map(|b| format!("{b:02X}")).collect()
}

/// The certificate the client presented on this request's connection (none: `None`). Every request of a
/// TLS connection carries one.
#[derive(Debug, Clone)]
pub struct ClientCertificate(pub Option<Arc<PeerCertificate>>);
