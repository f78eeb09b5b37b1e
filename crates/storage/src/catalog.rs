//! The server-level catalog: which databases exist, where their files are, and their settings. Listing and
//! statistics read it without opening any database.

use std::path::Path;
use std::sync::Mutex;

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions, WithoutTls};
use serde::{Deserialize, Serialize};

use crate::read_only::open_read_only_env;
use crate::tables::DATA_FILE;
use crate::StorageError;

/// Directory of the catalog inside the server's data directory.
pub const CATALOG_DIR: &str = "catalog";

const DATABASES: &str = "databases";
/// Server-level records other than databases (client certificates), kept with the same durability.
const CERTIFICATES: &str = "certificates";

/// One database of the server, as the catalog keeps it (JSON, PascalCase keys).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct CatalogEntry {
    /// The name as the user wrote it.
    pub name: String,
    /// Directory of the database, relative to the data directory.
    pub directory: String,
    /// When it was created, in RavenDB's date format.
    pub created_at: String,
    /// A disabled database refuses requests until enabled.
    #[serde(default)]
    pub disabled: bool,
    /// The database record's settings (string -> string), kept as sent.
    #[serde(default)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Connection strings by type (`Raven`, `Sql`, ...) and name, each kept as the client sent it.
    #[serde(default)]
    pub connection_strings: serde_json::Map<String, serde_json::Value>,
    /// The record's `Revisions` (`RevisionsConfiguration`), as the engine rendered it; None when not set.
    #[serde(default)]
    pub revisions: Option<serde_json::Value>,
    /// The record's `RevisionsForConflicts` (`RevisionsCollectionConfiguration`); None when not set.
    #[serde(default)]
    pub revisions_for_conflicts: Option<serde_json::Value>,
    /// The record's `TimeSeries` configuration (`TimeSeriesConfiguration`: named values), as last configured.
    #[serde(default)]
    pub time_series: Option<serde_json::Value>,
    /// The record's `Expiration` configuration as the engine rendered it; None when never configured.
    #[serde(default)]
    pub expiration: Option<serde_json::Value>,
    /// The record's `Refresh` configuration as the engine rendered it; None when never configured.
    #[serde(default)]
    pub refresh: Option<serde_json::Value>,
    /// The record's `PeriodicBackups` (`PeriodicBackupConfiguration`s as the client sent them, with `TaskId`).
    #[serde(default)]
    pub periodic_backups: Vec<serde_json::Value>,
    /// The latest backup runs of the database (newest last, a bounded number), as status JSON.
    #[serde(default)]
    pub backup_history: Vec<serde_json::Value>,
}

/// The server's catalog: an LMDB environment with one table, lower-cased database name -> entry.
pub struct Catalog {
    pub(crate) env: Env<WithoutTls>,
    databases: Database<Bytes, Bytes>,
    /// Thumbprint -> the certificate's record (JSON the server renders). None in a read-only catalog
    /// written before the table existed.
    pub(crate) certificates: Option<Database<Bytes, Bytes>>,
    pub(crate) write_lock: Mutex<()>,
}

impl Catalog {
    /// Opens the catalog in `path`, creating it if needed.
    pub fn open(path: &Path) -> Result<Catalog, StorageError> {
        std::fs::create_dir_all(path).map_err(|source| StorageError::Io { path: path.to_owned(), source })?;
        let mut open = EnvOpenOptions::new().read_txn_without_tls();
        open.map_size(1 << 30).max_dbs(4);
        // SAFETY (heed's contract): opened once per process, never modified outside LMDB.
        #[allow(unsafe_code)]
        let env = unsafe { open.open(path)? };
        let mut wtxn = env.write_txn()?;
        let databases = env.create_database(&mut wtxn, Some(DATABASES))?;
        let certificates = env.create_database(&mut wtxn, Some(CERTIFICATES))?;
        wtxn.commit()?;
        Ok(Catalog { env, databases, certificates: Some(certificates), write_lock: Mutex::new(()) })
    }

    /// Opens an existing catalog without writing to it (offline tools); None when `path` holds none.
    pub fn open_read_only(path: &Path) -> Result<Option<Catalog>, StorageError> {
        if !path.join(DATA_FILE).is_file() {
            return Ok(None);
        }
        let env = open_read_only_env(path, 4)?;
        let rtxn = env.read_txn()?;
        let databases = env.open_database(&rtxn, Some(DATABASES))?;
        let databases = databases.ok_or_else(|| StorageError::corrupted("catalog.databases", "table is missing"))?;
        let certificates = env.open_database(&rtxn, Some(CERTIFICATES))?;
        // Committing the opening transaction keeps the table handle for the next ones.
        rtxn.commit()?;
        Ok(Some(Catalog { env, databases, certificates, write_lock: Mutex::new(()) }))
    }

    fn decode(bytes: &[u8]) -> Result<CatalogEntry, StorageError> {
        serde_json::from_slice(bytes).map_err(|e| StorageError::corrupted("catalog.databases", e.to_string()))
    }

    /// The entry of the lower-cased name `key`.
    pub fn get(&self, key: &str) -> Result<Option<CatalogEntry>, StorageError> {
        let rtxn = self.env.read_txn()?;
        self.databases.get(&rtxn, key.as_bytes())?.map(Self::decode).transpose()
    }

    /// Every entry, by lower-cased name.
    pub fn list(&self) -> Result<Vec<CatalogEntry>, StorageError> {
        let rtxn = self.env.read_txn()?;
        let mut out = Vec::new();
        for entry in self.databases.iter(&rtxn)? {
            out.push(Self::decode(entry?.1)?);
        }
        Ok(out)
    }

    /// Adds an entry; false (and nothing written) when `key` already exists.
    pub fn insert(&self, key: &str, entry: &CatalogEntry) -> Result<bool, StorageError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wtxn = self.env.write_txn()?;
        if self.databases.get(&wtxn, key.as_bytes())?.is_some() {
            return Ok(false);
        }
        let bytes = serde_json::to_vec(entry).map_err(|e| StorageError::corrupted("catalog.databases", e.to_string()))?;
        self.databases.put(&mut wtxn, key.as_bytes(), &bytes)?;
        wtxn.commit()?;
        Ok(true)
    }

    /// Changes an existing entry in place; returns the changed entry, or None when `key` does not exist.
    pub fn update(&self, key: &str, change: impl FnOnce(&mut CatalogEntry)) -> Result<Option<CatalogEntry>, StorageError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wtxn = self.env.write_txn()?;
        let Some(mut entry) = self.databases.get(&wtxn, key.as_bytes())?.map(Self::decode).transpose()? else {
            return Ok(None);
        };
        change(&mut entry);
        let bytes = serde_json::to_vec(&entry).map_err(|e| StorageError::corrupted("catalog.databases", e.to_string()))?;
        self.databases.put(&mut wtxn, key.as_bytes(), &bytes)?;
        wtxn.commit()?;
        Ok(Some(entry))
    }

    /// Removes an entry; returns it if it existed.
    pub fn remove(&self, key: &str) -> Result<Option<CatalogEntry>, StorageError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wtxn = self.env.write_txn()?;
        let existing = self.databases.get(&wtxn, key.as_bytes())?.map(Self::decode).transpose()?;
        if existing.is_some() {
            self.databases.delete(&mut wtxn, key.as_bytes())?;
            wtxn.commit()?;
        }
        Ok(existing)
    }
}
