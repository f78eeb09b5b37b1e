//! Client certificates the server generates (`POST /admin/certificates`): a new key, a certificate for
//! client authentication signed by the server's own, and the zip RavenDB answers with (`<name>.crt` and
//! `<name>.key` in PEM, `<name>.pfx`).

use std::io::Write;

use rcgen::{CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::CertificateDer;

use super::server_certificate::{pem_text, ServerCertificate};

/// A new client certificate and its key.
pub struct GeneratedCertificate {
    pub der: Vec<u8>,
    pub key_pkcs8_der: Vec<u8>,
}

/// Why a certificate could not be generated.
#[derive(Debug, thiserror::Error)]
#[error("cannot generate the client certificate: {0}")]
pub struct GenerationError(String);

fn failed(e: impl std::fmt::Display) -> GenerationError {
    GenerationError(e.to_string())
}

/// A client certificate named `name`, valid from now for `valid_days`, signed by the server's certificate.
pub fn generate(server: &ServerCertificate, name: &str, valid_days: i64) -> Result<GeneratedCertificate, GenerationError> {
    let issuer_key = KeyPair::try_from(server.key()).map_err(failed)?;
    let issuer = Issuer::from_ca_cert_der(&CertificateDer::from(server.leaf_der()), issuer_key).map_err(failed)?;
    let key = KeyPair::generate().map_err(failed)?;
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, name);
    params.distinguished_name = subject;
    let now = time::OffsetDateTime::now_utc();
    // A little slack for clocks that run behind the server's.
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + time::Duration::days(valid_days);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.signed_by(&key, &issuer).map_err(failed)?;
    Ok(GeneratedCertificate { der: certificate.der().to_vec(), key_pkcs8_der: key.serialize_der() })
}

/// The zip RavenDB answers: `<name>.crt` and `<name>.key` (PEM) and `<name>.pfx` (protected by `password`).
pub fn zip_bundle(name: &str, certificate: &GeneratedCertificate, password: &str) -> Result<Vec<u8>, GenerationError> {
    let file_name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_. ".contains(c) { c } else { '_' }).collect();
    let pfx = pfx(certificate, password)?;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let files: [(String, Vec<u8>); 3] = [
        (format!("{file_name}.crt"), pem_text("CERTIFICATE", &certificate.der).into_bytes()),
        (format!("{file_name}.key"), pem_text("PRIVATE KEY", &certificate.key_pkcs8_der).into_bytes()),
        (format!("{file_name}.pfx"), pfx),
    ];
    for (path, bytes) in files {
        zip.start_file(path, options).map_err(failed)?;
        zip.write_all(&bytes).map_err(failed)?;
    }
    Ok(zip.finish().map_err(failed)?.into_inner())
}

fn pfx(certificate: &GeneratedCertificate, password: &str) -> Result<Vec<u8>, GenerationError> {
    let key = p12_keystore::PrivateKey::from_der(&certificate.key_pkcs8_der).map_err(failed)?;
    let cert = p12_keystore::Certificate::from_der(&certificate.der).map_err(failed)?;
    let chain = p12_keystore::PrivateKeyChain::new(b"1".as_slice(), key, [cert]);
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry("client", p12_keystore::KeyStoreEntry::PrivateKeyChain(chain));
    store.writer(password).write().map_err(failed)
}
