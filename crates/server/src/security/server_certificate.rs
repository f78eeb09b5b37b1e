//! The server's own certificate: read from a PFX (PKCS#12, RavenDB's `Security.Certificate.Path` and
//! `Security.Certificate.Password`) or from PEM (the certificate chain and its key in one file, or the key
//! in `Security.Certificate.Key.Path`), turned into a rustls configuration that speaks TLS 1.2 and 1.3 only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::client_verifier::AnyClientCertificate;
use super::peer_certificate::thumbprint;

/// Why the server's certificate could not be used; the server does not start.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("cannot read the certificate file {path} (Security.Certificate.Path or its key path): {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a PKCS#12 (PFX) file this server can read, or its password is wrong: {reason}")]
    Pkcs12 { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    Pem { path: PathBuf, reason: String },
    #[error("{path} holds no private key with its certificate")]
    NoKey { path: PathBuf },
    #[error("the certificate or its key cannot be used for TLS: {0}")]
    Tls(#[from] rustls::Error),
}

/// Where the server's certificate comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertificateSource {
    /// A PFX file, or a PEM file holding the certificate chain (and the key, unless `key_path` is set).
    pub path: PathBuf,
    /// The PFX's password (empty when it has none).
    pub password: Option<String>,
    /// The PEM private key, when it is not in `path`.
    pub key_path: Option<PathBuf>,
}

/// The server's certificate chain and key, loaded and checked.
pub struct ServerCertificate {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// The leaf certificate's SHA-1 thumbprint, upper-case hex, as RavenDB shows thumbprints.
    pub thumbprint: String,
}

impl ServerCertificate {
    /// Reads the certificate from `source`.
    pub fn load(source: &CertificateSource) -> Result<ServerCertificate, CertificateError> {
        let path = &source.path;
        let bytes = std::fs::read(path).map_err(|e| CertificateError::Read { path: path.clone(), source: e })?;
        let (chain, key) = if bytes.trim_ascii_start().starts_with(b"-----BEGIN") {
            read_pem(path, &bytes, source.key_path.as_deref())?
        } else {
            read_pfx(path, &bytes, source.password.as_deref().unwrap_or(""))?
        };
        ServerCertificate::checked(path, chain, key)
    }

    /// A PFX given as bytes (the certificate a client sends to replace the server's); `origin` names it in
    /// errors.
    pub fn from_pfx(origin: &Path, bytes: &[u8], password: &str) -> Result<ServerCertificate, CertificateError> {
        let (chain, key) = read_pfx(origin, bytes, password)?;
        ServerCertificate::checked(origin, chain, key)
    }

    fn checked(
        path: &Path,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<ServerCertificate, CertificateError> {
        let leaf =
            chain.first().ok_or_else(|| CertificateError::Pem { path: path.to_owned(), reason: "no certificate in the file".into() })?;
        let thumbprint = thumbprint(leaf);
        let certificate = ServerCertificate { chain, key, thumbprint };
        // Fails early, with the reason, when the key does not fit the certificate or is of an unknown kind.
        certificate.tls_config()?;
        Ok(certificate)
    }

    /// The whole chain as PEM text, leaf first.
    pub fn chain_pem(&self) -> String {
        self.chain.iter().map(|c| pem_text("CERTIFICATE", c.as_ref())).collect()
    }

    /// The private key as PEM text (PKCS#8 when it came from a PFX).
    pub fn key_pem(&self) -> String {
        let label = match &self.key {
            PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
            PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        pem_text(label, self.key.secret_der())
    }

    /// The leaf certificate in DER (`/info/tcp` gives it to the clients, which pin it).
    pub fn leaf_der(&self) -> &[u8] {
        self.chain[0].as_ref()
    }

    /// The chain as PEM text (the CA file a client trusts when the certificate is self-signed).
    pub fn leaf_pem(&self) -> String {
        pem_text("CERTIFICATE", self.leaf_der())
    }

    /// The private key (signing generated client certificates).
    pub fn key(&self) -> &PrivateKeyDer<'static> {
        &self.key
    }

    /// TLS 1.2 and 1.3 with the `ring` provider, HTTP/1.1 offered by ALPN, client certificates asked for
    /// but not required (a request without one is answered by the access rules, not by a failed handshake).
    pub fn tls_config(&self) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_client_cert_verifier(Arc::new(AnyClientCertificate::new(provider)))
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read_pfx(path: &Path, bytes: &[u8], password: &str) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CertificateError> {
    let store = p12_keystore::KeyStore::from_pkcs12(bytes, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)
        .map_err(|e| CertificateError::Pkcs12 { path: path.to_owned(), reason: e.to_string() })?;
    let (_, chain) = store.private_key_chain().ok_or_else(|| CertificateError::NoKey { path: path.to_owned() })?;
    let certificates: Vec<CertificateDer<'static>> = chain.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec())).collect();
    if certificates.is_empty() {
        return Err(CertificateError::NoKey { path: path.to_owned() });
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certificates, key))
}

fn read_pem(
    path: &Path,
    bytes: &[u8],
    key_path: Option<&Path>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CertificateError> {
    let pem_error = |path: &Path, reason: String| CertificateError::Pem { path: path.to_owned(), reason };
    let chain = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, format!("unreadable PEM certificate: {e}")))?;
    let key = match key_path {
        Some(key_path) => {
            let key_bytes = std::fs::read(key_path).map_err(|e| CertificateError::Read { path: key_path.to_owned(), source: e })?;
            PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| pem_error(key_path, format!("no usable private key: {e}")))?
        }
        None => PrivateKeyDer::from_pem_slice(bytes).map_err(|_| CertificateError::NoKey { path: path.to_owned() })?,
    };
    Ok((chain, key))
}

/// `-----BEGIN {label}-----`, base64 in lines of 64, `-----END {label}-----`.
pub fn pem_text(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
