//! The client certificates the server knows: registered ones (kept in the server catalog, mirrored here so
//! a request's lookup never touches disk), the well-known admin thumbprints of the settings, and the
//! server's own certificate.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::access::{Clearance, DatabaseAccess, Grant};
use super::peer_certificate::PeerCertificate;
use corvid_engine::DatabaseCatalog;

/// A registered client certificate, as stored and as `GET /admin/certificates` answers it (RavenDB's
/// `CertificateDefinition`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct CertificateRecord {
    pub name: String,
    pub thumbprint: String,
    /// The certificate's DER, base64.
    pub certificate: String,
    pub security_clearance: Clearance,
    /// Database name (as written) -> access.
    #[serde(default)]
    pub permissions: BTreeMap<String, DatabaseAccess>,
    pub not_before: String,
    pub not_after: String,
    #[serde(default)]
    pub public_key_pinning_hash: String,
    #[serde(default)]
    pub disabled: bool,
    /// RavenDB's certificate collections (renewals sharing a key); Corvid keeps each certificate alone.
    #[serde(default)]
    pub collection_primary_key: String,
    #[serde(default)]
    pub collection_secondary_keys: Vec<String>,
}

impl CertificateRecord {
    /// What the certificate may do; None when disabled.
    pub fn grant(&self) -> Option<Grant> {
        if self.disabled {
            return None;
        }
        let databases = self.permissions.iter().map(|(name, access)| (name.to_lowercase(), *access)).collect();
        Some(Grant { clearance: self.security_clearance, databases })
    }
}

/// How a request's certificate is known.
#[derive(Debug, Clone)]
pub enum Identity {
    /// Registered (or well known): its grant and name.
    Known { grant: Arc<Grant>, name: String },
    /// Presented, but nobody registered it.
    Unknown,
}

/// A failure to persist a change; the change is not applied.
#[derive(Debug, thiserror::Error)]
#[error("cannot store the certificate in the catalog: {0}")]
pub struct RegistryError(String);

/// A registered certificate and its grant (None while disabled).
type Registered = (CertificateRecord, Option<Arc<Grant>>);

/// Registered certificates by thumbprint, and the fixed cluster admins.
pub struct CertificateRegistry {
    registered: RwLock<HashMap<String, Registered>>,
    /// Thumbprints that are cluster admins without registration (`Security.WellKnownCertificates.Admin`).
    well_known_admins: Vec<String>,
    /// The server's own certificate's thumbprint, a cluster admin as a RavenDB node's is; it changes when
    /// the certificate is replaced or reloaded.
    server_certificate: RwLock<String>,
}

impl CertificateRegistry {
    /// Loads the registered certificates from `catalog`. Blocking.
    pub fn load(catalog: &DatabaseCatalog, well_known_admins: Vec<String>) -> std::io::Result<CertificateRegistry> {
        let mut registered = HashMap::new();
        for bytes in catalog.certificates().map_err(std::io::Error::other)? {
            let record: CertificateRecord = serde_json::from_slice(&bytes)
                .map_err(|e| std::io::Error::other(format!("a certificate record in the catalog is unreadable: {e}")))?;
            let grant = record.grant().map(Arc::new);
            registered.insert(record.thumbprint.clone(), (record, grant));
        }
        let well_known_admins = well_known_admins.into_iter().map(|t| t.trim().to_ascii_uppercase()).filter(|t| !t.is_empty()).collect();
        Ok(CertificateRegistry { registered: RwLock::new(registered), well_known_admins, server_certificate: RwLock::default() })
    }

    /// Makes `thumbprint` (the server's certificate now) the server's own cluster admin, in place of the
    /// previous one.
    pub fn set_server_certificate(&self, thumbprint: &str) {
        *self.server_certificate.write() = thumbprint.trim().to_ascii_uppercase();
    }

    /// Who the holder of `certificate` is.
    pub fn identify(&self, certificate: &PeerCertificate) -> Identity {
        if self.well_known_admins.contains(&certificate.thumbprint) || *self.server_certificate.read() == certificate.thumbprint {
            let grant = Grant { clearance: Clearance::ClusterAdmin, databases: BTreeMap::new() };
            return Identity::Known { grant: Arc::new(grant), name: certificate.subject.clone() };
        }
        match self.registered.read().get(&certificate.thumbprint) {
            Some((record, Some(grant))) => Identity::Known { grant: grant.clone(), name: record.name.clone() },
            _ => Identity::Unknown,
        }
    }

    /// The record of `thumbprint`.
    pub fn get(&self, thumbprint: &str) -> Option<CertificateRecord> {
        self.registered.read().get(&thumbprint.to_ascii_uppercase()).map(|(record, _)| record.clone())
    }

    /// Every record, by name then thumbprint.
    pub fn list(&self) -> Vec<CertificateRecord> {
        let mut all: Vec<CertificateRecord> = self.registered.read().values().map(|(record, _)| record.clone()).collect();
        all.sort_by(|a, b| (a.name.as_str(), a.thumbprint.as_str()).cmp(&(b.name.as_str(), b.thumbprint.as_str())));
        all
    }

    /// Whether `thumbprint` is one of the fixed cluster admins.
    pub fn is_well_known_admin(&self, thumbprint: &str) -> bool {
        self.well_known_admins.iter().any(|t| t.eq_ignore_ascii_case(thumbprint))
    }

    /// Stores `record` (durably) and then serves it. Blocking. The lock is held across the write so
    /// concurrent changes of one thumbprint land in the catalog in the order they are served.
    pub fn put(&self, catalog: &DatabaseCatalog, record: CertificateRecord) -> Result<(), RegistryError> {
        let bytes = serde_json::to_vec(&record).map_err(|e| RegistryError(e.to_string()))?;
        let mut registered = self.registered.write();
        catalog.put_certificate(&record.thumbprint, &bytes).map_err(|e| RegistryError(e.to_string()))?;
        let grant = record.grant().map(Arc::new);
        registered.insert(record.thumbprint.clone(), (record, grant));
        Ok(())
    }

    /// Removes `thumbprint`; the removed record. Blocking.
    pub fn delete(&self, catalog: &DatabaseCatalog, thumbprint: &str) -> Result<Option<CertificateRecord>, RegistryError> {
        let thumbprint = thumbprint.to_ascii_uppercase();
        let mut registered = self.registered.write();
        catalog.delete_certificate(&thumbprint).map_err(|e| RegistryError(e.to_string()))?;
        Ok(registered.remove(&thumbprint).map(|(record, _)| record))
    }
}
