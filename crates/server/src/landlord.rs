//! The landlord owns every database of the server. A database opens on first use on its own thread (a
//! request that gives up never cancels the open); requests for other databases never wait on it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_engine::{CatalogEntry, Compaction, Database, DatabaseCatalog, DatabaseOptions};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::database_info_cache;
use crate::error::ApiError;

#[derive(Clone)]
enum SlotState {
    Loading,
    Ready(Arc<Database>),
    Failed(String),
    /// Closing because it was idle: requests wait, then open it again.
    Unloading,
    /// Closed after being idle; a request that sees it starts over (and opens the database again).
    Unloaded,
}

impl SlotState {
    fn is_transient(&self) -> bool {
        matches!(self, SlotState::Loading | SlotState::Unloading)
    }
}

struct Slot {
    state: watch::Receiver<SlotState>,
    /// When a request last asked for the database, in milliseconds since the landlord started.
    last_used_ms: AtomicU64,
}

impl Slot {
    fn new(state: watch::Receiver<SlotState>, now_ms: u64) -> Arc<Slot> {
        Arc::new(Slot { state, last_used_ms: AtomicU64::new(now_ms) })
    }
}

/// What idle unloading has done, for monitoring.
#[derive(Default)]
pub struct IdleUnloadStats {
    /// Databases closed because they were idle.
    pub unloads: AtomicU64,
    /// Idle databases kept open because they had running work (queued writes, stale indexes, open handles).
    pub kept_busy: AtomicU64,
    /// Idle closes running now.
    pub unloading: AtomicUsize,
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
    /// The clock of `Slot::last_used_ms`.
    started: Instant,
    /// Set by `close_all`: no more idle unloading.
    closing: AtomicBool,
    pub idle: IdleUnloadStats,
}

/// A directory for a new database, relative to the data directory: never one used before.
fn new_directory(name: &str) -> String {
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect();
    let unique = uuid::Uuid::new_v4().simple().to_string();
    format!("databases/{safe}-{}", &unique[..8])
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
            started: Instant::now(),
            closing: AtomicBool::new(false),
            idle: IdleUnloadStats::default(),
        })
    }

    /// Where the database's info record is kept (`database_info_cache`).
    pub fn info_path(&self, name: &str) -> Option<PathBuf> {
        self.entry(name).map(|entry| database_info_cache::path_of(&self.data_dir, &entry.directory))
    }

    /// Closes a database and saves its info record (read after the close: queued writes are in it).
    fn close_and_record(&self, db: &Database) {
        db.close();
        if let Some(path) = self.info_path(db.name()) {
            database_info_cache::save_from(db, &path);
        }
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
                SlotState::Unloading | SlotState::Unloaded => "Unloaded",
            },
        }
    }

    /// The open database, opening it if needed. Waits at most the configured load timeout.
    pub async fn database(&self, name: &str) -> Result<Arc<Database>, ApiError> {
        let started = Instant::now();
        loop {
            if let Some(db) = self.database_once(name, started).await? {
                return Ok(db);
            }
            // The database was closed for being idle while this request waited: open it again.
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// One attempt of `database`: `None` when the slot turned out to be closed for idleness.
    async fn database_once(&self, name: &str, started: Instant) -> Result<Option<Arc<Database>>, ApiError> {
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
        // Marked after the lock: the idle unloader also sees the slot handle this request holds.
        slot.last_used_ms.store(self.now_ms(), Ordering::Relaxed);
        let mut state = slot.state.clone();
        if let SlotState::Ready(db) = &*state.borrow() {
            return Ok(Some(db.clone()));
        }
        let left = self.load_timeout.saturating_sub(started.elapsed());
        let waited = tokio::time::timeout(left, state.wait_for(|s| !s.is_transient())).await;
        match waited {
            Err(_) => Err(ApiError::DatabaseLoading { name: name.to_owned(), waited_ms: started.elapsed().as_millis() }),
            Ok(Err(_)) => Err(ApiError::DatabaseLoadFailed { name: name.to_owned(), reason: "the loader stopped".into() }),
            Ok(Ok(s)) => match &*s {
                SlotState::Ready(db) => Ok(Some(db.clone())),
                SlotState::Unloaded => Ok(None),
                SlotState::Failed(reason) => {
                    let reason = reason.clone();
                    drop(s);
                    // Forget the failure so a later request retries the open.
                    self.slots.lock().remove(&key);
                    Err(ApiError::DatabaseLoadFailed { name: name.to_owned(), reason })
                }
                SlotState::Loading | SlotState::Unloading => unreachable!("waited until not loading"),
            },
        }
    }

    fn start_loading(&self, entry: &CatalogEntry) -> Arc<Slot> {
        let (sender, receiver) = watch::channel(SlotState::Loading);
        let path = self.data_dir.join(&entry.directory);
        let name = entry.name.clone();
        let policies = corvid_engine::time_series_policy::policies_of(entry.time_series.as_ref());
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
                    db.set_time_series_policies(policies);
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
            return Slot::new(receiver, self.now_ms());
        }
        Slot::new(receiver, self.now_ms())
    }

    /// Creates a database (and starts opening it). Blocking: call from a blocking thread.
    pub fn create(&self, name: &str, settings: serde_json::Map<String, serde_json::Value>) -> Result<CatalogEntry, ApiError> {
        validate_database_name(name)?;
        let key = database_key(name);
        let entry = CatalogEntry {
            name: name.to_owned(),
            directory: new_directory(name),
            created_at: corvid_types::format_date(corvid_types::now_nanos()),
            disabled: false,
            settings,
            connection_strings: serde_json::Map::new(),
            revisions: None,
            revisions_for_conflicts: None,
            time_series: None,
            expiration: None,
            refresh: None,
            periodic_backups: Vec::new(),
            backup_history: Vec::new(),
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

    /// The options databases are opened with (a restore fills a new database with them).
    pub fn database_options(&self) -> &DatabaseOptions {
        &self.options
    }

    /// Creates a database from files: `fill` writes them into the new database's directory (which does not
    /// exist yet) and returns the record to keep (its name, directory and dates are replaced). The database is
    /// registered only once its files are complete; a failure leaves nothing registered. Blocking.
    pub fn create_from(&self, name: &str, fill: impl FnOnce(&Path) -> Result<CatalogEntry, ApiError>) -> Result<CatalogEntry, ApiError> {
        validate_database_name(name)?;
        let key = database_key(name);
        if self.entries.lock().contains_key(&key) {
            return Err(ApiError::DatabaseAlreadyExists(name.to_owned()));
        }
        let directory = new_directory(name);
        let path = self.data_dir.join(&directory);
        let record = fill(&path)?;
        let entry = CatalogEntry {
            name: name.to_owned(),
            directory,
            created_at: corvid_types::format_date(corvid_types::now_nanos()),
            disabled: false,
            ..record
        };
        let mut entries = self.entries.lock();
        let inserted = !entries.contains_key(&key) && self.catalog.insert(&key, &entry).map_err(|e| ApiError::Internal(e.to_string()))?;
        if !inserted {
            drop(entries);
            remove_dir(&path);
            return Err(ApiError::DatabaseAlreadyExists(name.to_owned()));
        }
        entries.insert(key, entry.clone());
        tracing::info!(database = %entry.name, "database created from files");
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
                self.close_and_record(&db);
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
        while state.borrow_and_update().is_transient() && Instant::now() < deadline {
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
        let _ = std::fs::remove_file(database_info_cache::path_of(&self.data_dir, &entry.directory));
        tracing::info!(database = %entry.name, hard_delete, "database deleted");
        Ok(true)
    }

    /// Closes the databases that had no request for `max_idle` and have no running work (no handle held
    /// outside the landlord: requests, operations, subscription and Changes connections; no queued or
    /// unflushed write; no stale index). Each closes on a `close:<db>` thread; requests that arrive meanwhile
    /// wait and open it again. Blocking: the idle unloader's thread calls it.
    pub fn unload_idle(&self, max_idle: Duration) {
        let idle_before = self.now_ms().saturating_sub(max_idle.as_millis() as u64);
        let candidates: Vec<(String, Arc<Database>)> = self
            .slots
            .lock()
            .iter()
            .filter(|(_, slot)| slot.last_used_ms.load(Ordering::Relaxed) <= idle_before)
            .filter_map(|(key, slot)| match &*slot.state.borrow() {
                SlotState::Ready(db) => Some((key.clone(), db.clone())),
                _ => None,
            })
            .collect();
        for (key, db) in candidates {
            if has_running_work(&db) {
                self.idle.kept_busy.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            drop(db);
            self.unload_if_still_idle(&key, idle_before);
        }
    }

    fn unload_if_still_idle(&self, key: &str, idle_before: u64) {
        let mut slots = self.slots.lock();
        if self.closing.load(Ordering::Relaxed) {
            return;
        }
        let Some(slot) = slots.get(key) else { return };
        // Requests clone the slot under this lock, so a count of one means none is on its way to the
        // database; the database's own count of two (the slot's state and `db` here) means no one holds it.
        let db = match &*slot.state.borrow() {
            SlotState::Ready(db) => db.clone(),
            _ => return,
        };
        if Arc::strong_count(slot) != 1 || Arc::strong_count(&db) != 2 || slot.last_used_ms.load(Ordering::Relaxed) > idle_before {
            return;
        }
        let (sender, receiver) = watch::channel(SlotState::Unloading);
        slots.insert(key.to_owned(), Slot::new(receiver.clone(), self.now_ms()));
        self.idle.unloading.fetch_add(1, Ordering::Relaxed);
        drop(slots);
        let started = Instant::now();
        let name = db.name().to_owned();
        self.close_and_record(&db);
        // The last handle: the store checkpoints its journal and every file closes here.
        drop(db);
        tracing::info!(database = %name, ms = started.elapsed().as_millis() as u64, "idle database closed");
        self.finish_unload(key, &receiver, sender);
        self.idle.unloading.fetch_sub(1, Ordering::Relaxed);
        self.idle.unloads.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets the unloading slot (unless a delete or disable replaced it) and lets its waiters retry.
    fn finish_unload(&self, key: &str, receiver: &watch::Receiver<SlotState>, sender: watch::Sender<SlotState>) {
        let mut slots = self.slots.lock();
        if slots.get(key).is_some_and(|slot| slot.state.same_channel(receiver)) {
            slots.remove(key);
        }
        drop(slots);
        sender.send_replace(SlotState::Unloaded);
    }

    /// Whether the server is shutting down (`close_all` was called).
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Closes every open database in parallel, waiting at most `deadline`. Blocking.
    pub fn close_all(&self, deadline: Duration) {
        self.closing.store(true, Ordering::Relaxed);
        let databases = self.loaded();
        let started = Instant::now();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        for db in &databases {
            let db = db.clone();
            let done = done_tx.clone();
            let info_path = self.info_path(db.name());
            let _ = std::thread::Builder::new().name(format!("close:{}", db.name())).spawn(move || {
                db.close();
                if let Some(path) = info_path {
                    database_info_cache::save_from(&db, &path);
                }
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
        // An idle close in progress finishes before the process exits.
        while self.idle.unloading.load(Ordering::Relaxed) > 0 && started.elapsed() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        tracing::info!(databases = closed, ms = started.elapsed().as_millis() as u64, "all databases closed");
    }
}

/// Work that keeps an idle database open: writes not yet durable, indexes not caught up.
fn has_running_work(db: &Database) -> bool {
    let merger = db.merger_stats();
    if merger.queued_commands > 0 || merger.flush_queue_depth > 0 {
        return true;
    }
    match db.index_infos() {
        Ok(infos) => infos.iter().any(|i| i.is_stale && i.state != "Disabled" && i.state != "Error"),
        Err(_) => true,
    }
}

fn remove_dir(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "could not remove database files");
        }
    }
}
