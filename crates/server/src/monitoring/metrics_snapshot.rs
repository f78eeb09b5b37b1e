//! One reading of everything monitoring reports: the server, and each open database with its indexes and
//! collections. Unloaded databases are listed from the landlord's catalog mirror and never opened.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use corvid_engine::{Database, DatabaseCounts, IndexInfo, MergerStatsSnapshot};

use super::process_usage::ProcessUsage;
use crate::error::ApiError;
use crate::responses::blocking;
use crate::state::AppState;

/// RavenDB's version as `/build/version` reports it.
pub const SERVER_VERSION: &str = "7.0";
/// The full version string.
pub const SERVER_FULL_VERSION: &str = "7.0.0-corvid";

/// Which parts a reading gathers (the Prometheus endpoint's `skip*Metrics`, or one JSON endpoint).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sections {
    /// Per-database counts, writes and storage.
    pub databases: bool,
    /// Per-index state and counters.
    pub indexes: bool,
    /// Per-collection document counts (a pass over the collection index of each open database).
    pub collections: bool,
}

/// Server-wide numbers.
pub struct ServerReading {
    pub uptime_seconds: f64,
    pub process_id: u32,
    pub total_requests: u64,
    pub active_requests: u64,
    pub max_concurrent_requests: u64,
    pub rejected_requests: u64,
    pub requests_per_second: f64,
    pub queries_running: u64,
    pub queries_queued: u64,
    pub queries_rejected: u64,
    pub changes_clients: u64,
    pub process: ProcessUsage,
    /// Share of the cores the process used since the previous reading, 0 to 100.
    pub cpu_process_percent: f64,
    /// Share of the machine's cores busy since the previous reading, 0 to 100.
    pub cpu_machine_percent: f64,
    /// Share of the machine's cores waiting for I/O since the previous reading, 0 to 100.
    pub cpu_machine_io_wait_percent: f64,
    pub databases_total: u64,
    pub databases_loaded: u64,
    /// Databases closed for being idle since the server started.
    pub idle_unloads: u64,
    pub public_url: String,
    pub tcp_url: String,
}

/// One index of an open database.
pub struct IndexReading {
    pub info: IndexInfo,
    /// Documents mapped per second since the previous reading.
    pub mapped_per_second: f64,
}

/// One open database.
pub struct DatabaseReading {
    pub name: String,
    pub database_id: String,
    pub counts: DatabaseCounts,
    pub merger: MergerStatsSnapshot,
    /// Commands acknowledged per second since the previous reading.
    pub writes_per_second: f64,
    pub indexes: Vec<IndexReading>,
    /// Bytes every index's files take.
    pub indexes_size_on_disk: u64,
    /// Each collection and its documents (empty unless collections were asked for).
    pub collections: Vec<(String, u64)>,
}

/// Everything one request reports.
pub struct Reading {
    pub server: ServerReading,
    /// Every database the catalog knows and whether it is open, sorted by name.
    pub known: Vec<(String, bool)>,
    /// The open databases asked for, sorted by name.
    pub databases: Vec<DatabaseReading>,
}

/// Reads the server and (per `sections`) the open databases named in `names` (all when empty).
pub async fn gather(state: &AppState, sections: Sections, names: &[String]) -> Result<Reading, ApiError> {
    let loaded = state.landlord.loaded();
    let known = known_databases(state, &loaded);
    let server = read_server(state, &known).await?;
    let mut chosen: Vec<Arc<Database>> =
        loaded.into_iter().filter(|db| names.is_empty() || names.iter().any(|n| n.eq_ignore_ascii_case(db.name()))).collect();
    chosen.sort_by_key(|db| db.name().to_lowercase());
    let mut databases = Vec::with_capacity(chosen.len());
    if sections.databases || sections.indexes || sections.collections {
        for db in chosen {
            databases.push(read_database(state, db, sections).await?);
        }
    }
    Ok(Reading { server, known, databases })
}

fn known_databases(state: &AppState, loaded: &[Arc<Database>]) -> Vec<(String, bool)> {
    state
        .landlord
        .list()
        .into_iter()
        .map(|entry| {
            let open = loaded.iter().any(|db| db.name().eq_ignore_ascii_case(&entry.name));
            (entry.name, open)
        })
        .collect()
}

async fn read_server(state: &AppState, known: &[(String, bool)]) -> Result<ServerReading, ApiError> {
    let process = blocking(|| Ok(ProcessUsage::read())).await?;
    let rates = &state.monitoring_rates;
    let total_requests = state.request_counter.load(Ordering::Relaxed);
    let cores = process.processor_count.max(1) as f64;
    let machine_cores = std::fs::read_to_string("/proc/cpuinfo")
        .map(|info| info.lines().filter(|l| l.starts_with("processor")).count().max(1) as f64)
        .unwrap_or(cores);
    let queries = state.queries.stats();
    let available = state.request_slots.available_permits();
    Ok(ServerReading {
        uptime_seconds: state.started_at.elapsed().as_secs_f64(),
        process_id: std::process::id(),
        total_requests,
        active_requests: state.config.max_concurrent_requests.saturating_sub(available) as u64,
        max_concurrent_requests: state.config.max_concurrent_requests as u64,
        rejected_requests: state.rejected_requests.load(Ordering::Relaxed),
        requests_per_second: rates.rate("server/requests", total_requests as f64),
        queries_running: queries.running as u64,
        queries_queued: queries.queued,
        queries_rejected: queries.rejected,
        changes_clients: state.changes_clients.load(Ordering::Relaxed),
        cpu_process_percent: (rates.rate("server/cpu", process.cpu_seconds) / cores * 100.0).min(100.0),
        cpu_machine_percent: (rates.rate("machine/cpu", process.machine_busy_seconds) / machine_cores * 100.0).min(100.0),
        cpu_machine_io_wait_percent: (rates.rate("machine/io-wait", process.machine_io_wait_seconds) / machine_cores * 100.0).min(100.0),
        process,
        databases_total: known.len() as u64,
        databases_loaded: known.iter().filter(|(_, open)| *open).count() as u64,
        idle_unloads: state.landlord.idle.unloads.load(Ordering::Relaxed),
        public_url: state.public_url.clone(),
        tcp_url: state.tcp_url.clone(),
    })
}

async fn read_database(state: &AppState, db: Arc<Database>, sections: Sections) -> Result<DatabaseReading, ApiError> {
    let merger = db.merger_stats();
    let name = db.name().to_owned();
    let reader = db.clone();
    let (counts, infos, collections) = blocking(move || {
        let counts = reader.counts()?;
        let infos = reader.index_infos()?;
        let collections = if sections.collections { reader.collection_stats()?.collections } else { Vec::new() };
        Ok((counts, infos, collections))
    })
    .await?;
    let rates = &state.monitoring_rates;
    let indexes_size_on_disk = infos.iter().map(|i| i.size_on_disk).sum();
    let indexes = infos
        .into_iter()
        .map(|info| {
            let mapped_per_second = rates.rate(&format!("index/{name}/{}", info.name), info.map_successes as f64);
            IndexReading { info, mapped_per_second }
        })
        .collect();
    Ok(DatabaseReading {
        writes_per_second: rates.rate(&format!("database/{name}/writes"), merger.merged_commands as f64),
        database_id: db.database_id().to_owned(),
        name,
        counts,
        merger,
        indexes,
        indexes_size_on_disk,
        collections,
    })
}

impl IndexReading {
    /// Whether the index is map-reduce (its mapped documents count toward the map-reduce rate).
    pub fn is_map_reduce(&self) -> bool {
        self.info.index_type.contains("MapReduce")
    }

    /// Etags between what the index has processed and its collection's last write.
    pub fn lag(&self) -> u64 {
        self.info.collection_last_etag.saturating_sub(self.info.processed_etag)
    }
}

/// Seconds since `nanos` (a unix time in nanoseconds), or `None` when it never happened.
pub fn seconds_since(nanos: i64) -> Option<f64> {
    (nanos > 0).then(|| ((corvid_types::now_nanos() - nanos).max(0) as f64) / 1e9)
}
