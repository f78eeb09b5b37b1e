//! Replacing the server's certificate through RavenDB's operation (`ReplaceClusterCertificateOperation`:
//! `POST /admin/certificates/replace-cluster-cert`). The new PFX is checked first, then written over the
//! configured certificate file in that file's own format (so a restart keeps it), then served to new
//! connections at once; open connections keep the certificate they were made with. A certificate that
//! cannot be used changes nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::certificate_watch;
use super::server_certificate::{CertificateError, ServerCertificate};
use super::server_security::ServerSecurity;

/// One replacement at a time: two at once could leave a PEM certificate beside the other's key.
static REPLACING: Mutex<()> = Mutex::new(());

/// Why the certificate was not replaced; the one in use stays.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    #[error("Unable to load the provided certificate: {0}")]
    Unloadable(CertificateError),
    #[error("cannot write the new certificate to {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the new certificate was written but could not be served: {0}")]
    NotServed(String),
}

/// Replaces the server's certificate with `pfx` (opened with `password`); the new thumbprint.
/// Blocking (file writes).
pub fn replace(security: &ServerSecurity, pfx: &[u8], password: &str) -> Result<String, ReplaceError> {
    let certificate =
        ServerCertificate::from_pfx(Path::new("the provided certificate"), pfx, password).map_err(ReplaceError::Unloadable)?;
    let _one_at_a_time = REPLACING.lock();
    let source = &security.source;
    if is_pem(&source.path, source.key_path.as_deref()) {
        match &source.key_path {
            // The key first: a watch that looks in between fails once and keeps the old certificate.
            Some(key_path) => {
                write_atomically(key_path, certificate.key_pem().as_bytes())?;
                write_atomically(&source.path, certificate.chain_pem().as_bytes())?;
            }
            None => write_atomically(&source.path, (certificate.chain_pem() + &certificate.key_pem()).as_bytes())?,
        }
    } else {
        let configured = source.password.as_deref().unwrap_or("");
        let bytes = if configured == password { pfx.to_vec() } else { with_password(pfx, password, configured)? };
        write_atomically(&source.path, &bytes)?;
    }
    certificate_watch::reload(security, "replaced through the API").map_err(ReplaceError::NotServed)
}

/// The configured file is PEM when it has a separate key or its text starts like PEM.
fn is_pem(path: &Path, key_path: Option<&Path>) -> bool {
    key_path.is_some() || std::fs::read(path).is_ok_and(|bytes| bytes.trim_ascii_start().starts_with(b"-----BEGIN"))
}

/// The PFX under the password the server is configured with (`Security.Certificate.Password`).
fn with_password(pfx: &[u8], password: &str, configured: &str) -> Result<Vec<u8>, ReplaceError> {
    let unloadable =
        |reason: String| ReplaceError::Unloadable(CertificateError::Pkcs12 { path: PathBuf::from("the provided certificate"), reason });
    let store = p12_keystore::KeyStore::from_pkcs12(pfx, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)
        .map_err(|e| unloadable(e.to_string()))?;
    store.writer(configured).write().map_err(|e| unloadable(e.to_string()))
}

/// Writes beside `path` and renames over it, so a reader (the watch, a restart) sees the old file or the new
/// one, never half of one. The old file's permissions are kept (a key file stays private).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReplaceError> {
    let failed = |source| ReplaceError::Write { path: path.to_owned(), source };
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".replacing");
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::File::create(&temporary).map_err(failed)?;
    if let Ok(metadata) = std::fs::metadata(path) {
        file.set_permissions(metadata.permissions()).map_err(failed)?;
    }
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(failed)?;
    if let Some(directory) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(directory).and_then(|d| d.sync_all()).map_err(failed)?;
    }
    Ok(())
}
