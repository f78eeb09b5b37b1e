//! The last known counts and size of each database (RavenDB's `DatabaseInfoCache`): written durably in
//! `<data dir>/database-info/` when it closes (idle, disabled, shutdown), read by `GET /databases` for a
//! database that is not open, so listing databases never opens one.

use std::io::Write;
use std::path::{Path, PathBuf};

use corvid_engine::{Database, EngineError};
use serde::{Deserialize, Serialize};

/// What a database looked like when it last closed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct DatabaseInfoRecord {
    pub documents_count: u64,
    /// Bytes of the document store and every index.
    pub size_on_disk: u64,
    pub indexes_count: u64,
    pub indexing_errors: u64,
    /// When it was written (RavenDB's date format).
    pub saved_at: String,
}

impl DatabaseInfoRecord {
    /// The record of an open database: table sizes and index counters only, no scan.
    pub fn read(db: &Database) -> Result<DatabaseInfoRecord, EngineError> {
        let counts = db.counts()?;
        let indexes = db.index_infos()?;
        Ok(DatabaseInfoRecord {
            documents_count: counts.documents,
            size_on_disk: counts.size_on_disk + indexes.iter().map(|i| i.size_on_disk).sum::<u64>(),
            indexes_count: indexes.len() as u64,
            indexing_errors: indexes.iter().map(|i| i.errors_count).sum(),
            saved_at: corvid_types::format_date(corvid_types::now_nanos()),
        })
    }
}

/// The record's file: `database-info/<database directory name>.json`, apart from the databases' own
/// directories (tools look for `databases/<name>-*`).
pub fn path_of(data_dir: &Path, directory: &str) -> PathBuf {
    let file_name = Path::new(directory).file_name().map_or_else(|| directory.to_owned(), |n| n.to_string_lossy().into_owned());
    data_dir.join("database-info").join(format!("{file_name}.json"))
}

/// Writes the record durably: a temporary file synced, renamed over the old one, and the directory synced,
/// so a crash leaves the old record or the new one, never a torn one.
pub fn save(path: &Path, record: &DatabaseInfoRecord) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// The saved record, if any (none yet for a database that never closed cleanly).
pub fn load(path: &Path) -> Option<DatabaseInfoRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Reads an open database's record and saves it; failures are logged (the list then shows older numbers).
pub fn save_from(db: &Database, path: &Path) {
    let saved = DatabaseInfoRecord::read(db).map_err(|e| e.to_string()).and_then(|record| save(path, &record).map_err(|e| e.to_string()));
    if let Err(error) = saved {
        tracing::warn!(database = %db.name(), %error, "could not save the database's info record");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads_atomically() {
        let dir = std::env::temp_dir().join(format!("corvid-info-{}", uuid::Uuid::new_v4().simple()));
        let path = path_of(&dir, "databases/a-1234");
        assert_eq!(load(&path), None);
        let record =
            DatabaseInfoRecord { documents_count: 3, size_on_disk: 4096, indexes_count: 1, indexing_errors: 0, saved_at: "x".into() };
        save(&path, &record).unwrap();
        assert_eq!(load(&path), Some(record));
        assert!(!path.with_extension("json.tmp").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
