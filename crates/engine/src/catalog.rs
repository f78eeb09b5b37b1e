//! The server's catalog of databases (which exist, where their files are, their settings), reached through
//! the engine so that the server never opens storage itself.

use std::path::Path;

use corvid_storage::{Catalog, StorageError, CATALOG_DIR};

pub use corvid_storage::CatalogEntry;

/// A failure to read or write the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The catalog's storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Every database of a server by lower-cased name, kept in the data directory.
pub struct DatabaseCatalog {
    catalog: Catalog,
}

impl DatabaseCatalog {
    /// Opens the catalog of the data directory `data_dir`, creating it if needed.
    pub fn open(data_dir: &Path) -> Result<DatabaseCatalog, CatalogError> {
        Ok(DatabaseCatalog { catalog: Catalog::open(&data_dir.join(CATALOG_DIR))? })
    }

    /// Opens the catalog of `data_dir` without writing to it (offline tools); None when there is none.
    pub fn open_read_only(data_dir: &Path) -> Result<Option<DatabaseCatalog>, CatalogError> {
        Ok(Catalog::open_read_only(&data_dir.join(CATALOG_DIR))?.map(|catalog| DatabaseCatalog { catalog }))
    }

    /// Every entry, by lower-cased name.
    pub fn list(&self) -> Result<Vec<CatalogEntry>, CatalogError> {
        Ok(self.catalog.list()?)
    }

    /// Adds an entry; false (and nothing written) when `key` already exists.
    pub fn insert(&self, key: &str, entry: &CatalogEntry) -> Result<bool, CatalogError> {
        Ok(self.catalog.insert(key, entry)?)
    }

    /// Changes an existing entry in place; the changed entry, or None when `key` does not exist.
    pub fn update(&self, key: &str, change: impl FnOnce(&mut CatalogEntry)) -> Result<Option<CatalogEntry>, CatalogError> {
        Ok(self.catalog.update(key, change)?)
    }

    /// Removes an entry; returns it if it existed.
    pub fn remove(&self, key: &str) -> Result<Option<CatalogEntry>, CatalogError> {
        Ok(self.catalog.remove(key)?)
    }

    /// Every registered client certificate's record (the server's JSON), in thumbprint order.
    pub fn certificates(&self) -> Result<Vec<Vec<u8>>, CatalogError> {
        Ok(self.catalog.certificates()?)
    }

    /// Stores or replaces a client certificate's record; durable when this returns.
    pub fn put_certificate(&self, thumbprint: &str, record: &[u8]) -> Result<(), CatalogError> {
        Ok(self.catalog.put_certificate(thumbprint, record)?)
    }

    /// Removes a client certificate's record; whether there was one.
    pub fn delete_certificate(&self, thumbprint: &str) -> Result<bool, CatalogError> {
        Ok(self.catalog.delete_certificate(thumbprint)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> CatalogEntry {
        CatalogEntry {
            name: name.to_owned(),
            directory: format!("databases/{name}-0000"),
            created_at: "2026-01-01T00:00:00.0000000Z".to_owned(),
            disabled: false,
            settings: serde_json::Map::new(),
            connection_strings: serde_json::Map::new(),
            revisions: None,
            revisions_for_conflicts: None,
            time_series: None,
            expiration: None,
            refresh: None,
            periodic_backups: Vec::new(),
            backup_history: Vec::new(),
        }
    }

    #[test]
    fn a_read_only_catalog_lists_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DatabaseCatalog::open_read_only(dir.path()).unwrap().is_none());
        {
            let catalog = DatabaseCatalog::open(dir.path()).unwrap();
            assert!(catalog.insert("shop", &entry("Shop")).unwrap());
            assert!(!catalog.insert("shop", &entry("Shop")).unwrap());
            assert!(catalog.insert("blog", &entry("Blog")).unwrap());
            assert!(catalog.update("blog", |e| e.disabled = true).unwrap().unwrap().disabled);
        }
        let catalog = DatabaseCatalog::open_read_only(dir.path()).unwrap().unwrap();
        let names: Vec<(String, bool)> = catalog.list().unwrap().into_iter().map(|e| (e.name, e.disabled)).collect();
        assert_eq!(names, [("Blog".to_owned(), true), ("Shop".to_owned(), false)]);
        assert!(catalog.insert("more", &entry("More")).is_err(), "a read-only catalog refuses writes");
    }
}
