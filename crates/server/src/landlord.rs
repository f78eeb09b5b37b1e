//! The landlord owns every database of the server. A database opens on first use on its own thread (a
//! request that gives up never cancels the open); requests for other databases never wait on it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_engine::{CatalogEntry, Compaction, Database, DatabaseCatalog, DatabaseOptions};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::error::ApiError;

#[derive(Clone)]
enum SlotState {
    Loading,
    Ready(Arc<Database>),
    Failed(String),
}

struct Slot {
    state: watch::Receiver<SlotState>,
}

pub struct Landlord {
    data_dir: PathBuf,
    catalog: DatabaseCatalog,
    /// Known databases by lower-cased name: a mirror of the catalog, so lookups never touch disk.
    entries: Mutex<HashMap<String, CatalogEntry>>,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    options: DatabaseOptions,
    load_timeout: Duration,
    slow_open: Option<(String, Duration)>,
}

pub fn database_key(name: &str) -> String {
    name.to_lowercase()
}

/// RavenDB's rule: letters, digits, `_`, `-` and `.`, at most 128 characters.
pub fn validate_database_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::BadRequest(format!("Database name '{name}' must be 1 to 128 characters long")));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(ApiError::BadRequest(format!(
            "Database name '{name}' contains '{bad}'; only letters, digits, '_', '-' and '.' are allowed"
        )));
    }
    Ok(())
}

impl Landlord {
    pub fn open(config: &ServerConfig) -> std::io::Result<Landlord> {
        std::fs::create_dir_all(config.data_dir.join("databases"))?;
        let catalog = DatabaseCatalog::open(&config.data_dir).map_err(std::io::Error::other)?;
        let entries = catalog.list().map_err(std::io::Error::other)?.into_iter().map(|e| (database_key(&e.name), e)).collect();
        Ok(Landlord {
            data_dir: config.data_dir.clone(),
            catalog,
            entries: Mutex::new(entries),
            slots: Mutex::new(HashMap::new()),
            options: config.database.clone(),
            load_timeout: config.database_load_timeout,
            slow_open: config.slow_open.clone(),
        })
    }

    /// The server's catalog (server-level records such as client certificates). Its calls block.
    pub fn catalog(&self) -> &DatabaseCatalog {
        &self.catalog
    }

    pub fn entry(&self, name: &str) -> Option<CatalogEntry> {
        self.entries.lock().get(&database_key(name)).cloned()
    }

    pub fn list(&self) -> Vec<CatalogEntry> {
        let mut all: Vec<CatalogEntry> = self.entries.lock().values().cloned().collect();
        all.sort_by_key(|e| e.name.to_lowercase());
        all
    }

    /// Databases open right now.
    pub fn loaded(&self) -> Vec<Arc<Database>> {
        self.slots
            .lock()
            .values()
            .filter_map(|slot| match &*slot.state.borrow() {
                SlotState::Ready(db) => Some(db.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether the database is open, loading, or not loaded.
    pub fn load_state(&self, name: &str) -> &'static str {
        match self.slots.lock().get(&database_key(name)) {
            None => "Unloaded",
            Some(slot) => match &*slot.state.borrow() {
                SlotState::Loading => "Loading",
                SlotState::Ready(_) => "Loaded",
                SlotState::Failed(_) => "Error",
            },
        }
    }

    /// The open database, opening it if needed. Waits at most the configured load timeout.
    pub async fn database(&self, name: &str) -> Result<Arc<Database>, ApiError> {
        let key = database_key(name);
        let slot = {
            let mut slots = self.slots.lock();
            match slots.get(&key) {
                Some(slot) => slot.clone(),
                None => {
                    let entry = self.entries.lock().get(&key).cloned().ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
                    if entry.disabled {
                        return Err(ApiError::DatabaseDisabled(entry.name));
                    }
                    let slot = self.start_loading(&entry);
                    slots.insert(key.clone(), slot.clone());
                    slot
                }
            }
        };
        let mut state = slot.state.clone();
        if let SlotState::Ready(db) = &*state.borrow() {
            return Ok(db.clone());
        }
        let started = Instant::now();
        let waited = tokio::time::timeout(self.load_timeout, state.wait_for(|s| !matches!(s, SlotState::Loading))).await;
        match waited {
            Err(_) => Err(ApiError::DatabaseLoading { name: name.to_owned(), waited_ms: started.elapsed().as_millis() }),
            Ok(Err(_)) => Err(ApiError::DatabaseLoadFailed { name: name.to_owned(), reason: "the loader stopped".into() }),
            Ok(Ok(s)) => match &*s {
                SlotState::Ready(db) => Ok(db.clone()),
                SlotState::Failed(reason) => {
                    let reason = reason.clone();
                    drop(s);
                    // Forget the failure so a later request retries the open.
                    self.slots.lock().remove(&key);
                    Err(ApiError::DatabaseLoadFailed { name: name.to_owned(), reason })
                }
                SlotState::Loading => unreachable!("waited until not loading"),
            },
        }
    }

    fn start_loading(&self, entry: &CatalogEntry) -> Arc<Slot> {
        let (sender, receiver) = watch::channel(SlotState::Loading);
        let path = self.data_dir.join(&entry.directory);
        let name = entry.name.clone();
        let options = self.options.clone();
        let delay = self.slow_open.as_ref().filter(|(prefix, _)| database_key(&name).starts_with(&database_key(prefix))).map(|(_, d)| *d);
        let spawned = std::thread::Builder::new().name(format!("open:{name}")).spawn(move || {
            let started = Instant::now();
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
            let state = match Database::open(&name, &path, &options) {
                Ok(db) => {
                    tracing::info!(database = %name, ms = started.elapsed().as_millis() as u64, "database opened");
                    SlotState::Ready(Arc::new(db))
                }
                Err(e) => {
                    tracing::error!(database = %name, error = %e, "database failed to open");
                    SlotState::Failed(e.to_string())
                }
            };
            sender.send_replace(state);
        });
        if let Err(e) = spawned {
            let (sender, receiver) = watch::channel(SlotState::Failed(format!("cannot start the loader thread: {e}")));
            drop(sender);
            return Arc::new(Slot { state: receiver });
        }
        Arc::new(Slot { state: receiver })
    }

    /// Creates a database (and starts opening it). Blocking: call from a blocking thread.
    pub fn create(&self, name: &str, settings: serde_json::Map<String, serde_json::Value>) -> Result<CatalogEntry, ApiError> {
        validate_database_name(name)?;
        let key = database_key(name);
        let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect();
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let entry = CatalogEntry {
            name: name.to_owned(),
            directory: format!("databases/{safe}-{}", &unique[..8]),
            created_at: corvid_types::format_date(corvid_types::now_nanos()),
            disabled: false,
            settings,
            connection_strings: serde_json::Map::new(),
            revisions: None,
            revisions_for_conflicts: None,
            time_series: None,
        };
        let mut entries = self.entries.lock();
        if entries.contains_key(&key) {
            return Err(ApiError::DatabaseAlreadyExists(name.to_owned()));
        }
        let inserted = self.catalog.insert(&key, &entry).map_err(|e| ApiError::Internal(e.to_string()))?;
        if !inserted {
            return Err(ApiError::DatabaseAlreadyExists(name.to_owned()));
        }
        entries.insert(key.clone(), entry.clone());
        drop(entries);
        let slot = self.start_loading(&entry);
        self.slots.lock().insert(key, slot);
        Ok(entry)
    }

    /// Changes a database's catalog entry (record settings, connection strings). Blocking.
    pub fn update(&self, name: &str, change: impl FnOnce(&mut CatalogEntry)) -> Result<CatalogEntry, ApiError> {
        let key = database_key(name);
        let mut entries = self.entries.lock();
        let updated = self.catalog.update(&key, change).map_err(|e| ApiError::Internal(e.to_string()))?;
        let entry = updated.ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
        entries.insert(key, entry.clone());
        Ok(entry)
    }

    /// Disables (closes, and refuses requests until enabled) or enables a database. Blocking. False when it
    /// already was in that state.
    pub fn set_disabled(&self, name: &str, disabled: bool) -> Result<bool, ApiError> {
        let before = self.entry(name).ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
        if before.disabled == disabled {
            return Ok(false);
        }
        self.update(name, |e| e.disabled = disabled)?;
        if disabled {
            let slot = self.slots.lock().remove(&database_key(name));
            if let Some(db) = slot.and_then(|slot| self.wait_for_load(&slot)) {
                db.close();
            }
        }
        tracing::info!(database = %before.name, disabled, "database state changed");
        Ok(true)
    }

    /// Compacts a database's data file (LMDB's compacting copy). The database is closed for the copy, as
    /// RavenDB takes it offline, and opens again on its next request unless it was disabled before. Blocking.
    pub fn compact(&self, name: &str) -> Result<Compaction, ApiError> {
        let entry = self.entry(name).ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
        let closed_here = self.set_disabled(name, true)?;
        let result = corvid_engine::compact_closed_database(&self.data_dir.join(&entry.directory), self.load_timeout);
        if closed_here {
            self.set_disabled(name, false)?;
        }
        result.map_err(ApiError::from)
    }

    /// The database of a slot once any load in progress has finished (bounded by the load timeout).
    fn wait_for_load(&self, slot: &Slot) -> Option<Arc<Database>> {
        let mut state = slot.state.clone();
        let deadline = Instant::now() + self.load_timeout;
        while matches!(&*state.borrow_and_update(), SlotState::Loading) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let ready = match &*state.borrow() {
            SlotState::Ready(db) => Some(db.clone()),
            _ => None,
        };
        ready
    }

    /// Deletes a database and (with `hard_delete`) its files. Blocking. False when it did not exist.
    pub fn delete(&self, name: &str, hard_delete: bool) -> Result<bool, ApiError> {
        let key = database_key(name);
        let Some(entry) = self.catalog.remove(&key).map_err(|e| ApiError::Internal(e.to_string()))? else {
            self.entries.lock().remove(&key);
            return Ok(false);
        };
        self.entries.lock().remove(&key);
        let slot = self.slots.lock().remove(&key);
        // Wait for a load in progress so its files are not removed under it.
        if let Some(db) = slot.and_then(|slot| self.wait_for_load(&slot)) {
            db.close();
        }
        if hard_delete {
            remove_dir(&self.data_dir.join(&entry.directory));
        }
        tracing::info!(database = %entry.name, hard_delete, "database deleted");
        Ok(true)
    }

    /// Closes every open database in parallel, waiting at most `deadline`. Blocking.
    pub fn close_all(&self, deadline: Duration) {
        let databases = self.loaded();
        let started = Instant::now();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        for db in &databases {
            let db = db.clone();
            let done = done_tx.clone();
            let _ = std::thread::Builder::new().name(format!("close:{}", db.name())).spawn(move || {
                db.close();
                let _ = done.send(db.name().to_owned());
            });
        }
        drop(done_tx);
        let mut closed = 0;
        while closed < databases.len() {
            let left = deadline.saturating_sub(started.elapsed());
            match done_rx.recv_timeout(left) {
                Ok(_) => closed += 1,
                Err(_) => {
                    tracing::warn!(closed, total = databases.len(), "shutdown deadline reached before every database closed");
                    return;
                }
            }
        }
        tracing::info!(databases = closed, ms = started.elapsed().as_millis() as u64, "all databases closed");
    }
}

fn remove_dir(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "could not remove database files");
        }
    }
}
