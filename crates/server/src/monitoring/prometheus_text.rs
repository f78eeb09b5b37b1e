//! The Prometheus text exposition (format 0.0.4, RavenDB's) of a monitoring reading, encoded by the
//! `prometheus` crate (decision 0042). RavenDB's metric names keep their `ravendb_` prefix; numbers only
//! Corvid has are named `corvid_`. A family without samples is left out, as RavenDB does.

use corvid_engine::LatencyCounts;
use prometheus::proto::{Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{Encoder, TextEncoder};

use super::metrics_snapshot::{seconds_since, DatabaseReading, IndexReading, Reading, SERVER_FULL_VERSION, SERVER_VERSION};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which families the request skips (`skipServerMetrics`, ...).
#[derive(Debug, Clone, Copy, Default)]
pub struct Skip {
    pub server: bool,
    pub databases: bool,
    pub indexes: bool,
    pub collections: bool,
}

/// Families in the order they are added.
struct Exposition {
    families: Vec<MetricFamily>,
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

impl Exposition {
    fn add(&mut self, name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) {
        if metrics.is_empty() {
            return;
        }
        let mut family = MetricFamily::default();
        family.set_name(name.to_owned());
        family.set_help(help.to_owned());
        family.set_field_type(kind);
        family.set_metric(metrics);
        self.families.push(family);
    }

    fn gauge(&mut self, name: &str, help: &str, samples: Vec<(Labels<'_>, f64)>) {
        let metrics = samples
            .into_iter()
            .map(|(labels, value)| {
                let mut gauge = Gauge::default();
                gauge.set_value(value);
                let mut metric = labelled(labels);
                metric.set_gauge(gauge);
                metric
            })
            .collect();
        self.add(name, help, MetricType::GAUGE, metrics);
    }

    fn counter(&mut self, name: &str, help: &str, samples: Vec<(Labels<'_>, f64)>) {
        let metrics = samples
            .into_iter()
            .map(|(labels, value)| {
                let mut counter = Counter::default();
                counter.set_value(value);
                let mut metric = labelled(labels);
                metric.set_counter(counter);
                metric
            })
            .collect();
        self.add(name, help, MetricType::COUNTER, metrics);
    }
}

fn labelled(labels: Labels<'_>) -> Metric {
    let mut metric = Metric::default();
    metric.set_label(
        labels
            .into_iter()
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name(name.to_owned());
                pair.set_value(value.to_owned());
                pair
            })
            .collect(),
    );
    metric
}

/// The exposition text of `reading`.
pub fn render(reading: &Reading, skip: Skip) -> String {
    let mut out = Exposition { families: Vec::new() };
    if !skip.server {
        server_families(&mut out, reading);
    }
    if !skip.databases {
        database_families(&mut out, reading);
    }
    if !skip.indexes {
        index_families(&mut out, reading);
    }
    if !skip.collections {
        collection_families(&mut out, reading);
    }
    let mut text = Vec::new();
    // Encoding fails only for a family without samples or name, which `add` never keeps.
    let _ = TextEncoder::new().encode(&out.families, &mut text);
    String::from_utf8(text).unwrap_or_default()
}

fn one(value: f64) -> Vec<(Labels<'static>, f64)> {
    vec![(Vec::new(), value)]
}

fn server_families(out: &mut Exposition, reading: &Reading) {
    let s = &reading.server;
    let p = &s.process;
    out.counter("ravendb_server_uptime_seconds", "Server up-time", one(s.uptime_seconds.floor()));
    out.counter(
        "ravendb_server_info",
        "Server information",
        vec![(
            vec![
                ("server_version", SERVER_VERSION),
                ("server_full_version", SERVER_FULL_VERSION),
                ("cluster_node_tag", "A"),
                ("server_urls", s.public_url.as_str()),
                ("tcp_server_urls", s.tcp_url.as_str()),
            ],
            1.0,
        )],
    );
    out.counter("ravendb_network_total_requests", "Total number of requests since server startup", one(s.total_requests as f64));
    out.gauge("ravendb_server_process_id", "Server process ID", one(s.process_id as f64));
    out.gauge("ravendb_cpu_process_usage", "Process CPU usage in %", one(s.cpu_process_percent));
    out.gauge("ravendb_cpu_machine_usage", "Machine CPU usage in %", one(s.cpu_machine_percent));
    out.gauge("ravendb_cpu_machine_io_wait", "IO wait in %", one(s.cpu_machine_io_wait_percent));
    out.gauge("ravendb_cpu_processor_count", "Number of processor on the machine", one(p.processor_count as f64));
    out.gauge("ravendb_cpu_assigned_processor_count", "Number of assigned processors on the machine", one(p.processor_count as f64));
    out.gauge("ravendb_memory_allocated_bytes", "Server allocated memory (resident set)", one(p.resident_bytes as f64));
    out.gauge("ravendb_memory_installed_bytes", "Installed memory", one(p.memory_total_bytes as f64));
    out.gauge("ravendb_memory_physical_bytes", "Physical memory", one(p.memory_total_bytes as f64));
    out.gauge("ravendb_memory_total_swap_size_bytes", "Total swap size", one(p.swap_total_bytes as f64));
    out.gauge("ravendb_memory_total_swap_usage_bytes", "Total swap usage", one(p.swap_used_bytes as f64));
    out.gauge("ravendb_memory_total_dirty_bytes", "Dirty memory that is scheduled to be written to disk", one(p.dirty_bytes as f64));
    out.gauge("ravendb_network_concurrent_requests_count", "Number of concurrent HTTP requests", one(s.active_requests as f64));
    out.gauge("ravendb_network_requests_per_second", "Number of requests per second since the previous scrape", one(s.requests_per_second));
    out.gauge("ravendb_databases_total_count", "Number of all databases", one(s.databases_total as f64));
    out.gauge("ravendb_databases_loaded_count", "Number of loaded databases", one(s.databases_loaded as f64));
    out.counter(
        "corvid_databases_idle_unloads",
        "Databases closed after Databases.MaxIdleTimeInSec without requests",
        one(s.idle_unloads as f64),
    );
    out.gauge("corvid_server_threads", "Threads of the server process", one(p.threads as f64));
    out.gauge(
        "corvid_server_max_concurrent_requests",
        "Requests served at once before 503 (--max-concurrent-requests)",
        one(s.max_concurrent_requests as f64),
    );
    out.counter(
        "corvid_server_rejected_too_busy_requests",
        "Requests answered 503 because every request slot was taken",
        one(s.rejected_requests as f64),
    );
    out.gauge("corvid_queries_running", "Queries running now", one(s.queries_running as f64));
    out.gauge("corvid_queries_queued", "Queries waiting for a query slot now", one(s.queries_queued as f64));
    out.counter(
        "corvid_queries_rejected_too_busy",
        "Queries answered 503 after waiting for a slot too long",
        one(s.queries_rejected as f64),
    );
    out.gauge("corvid_changes_connections", "Changes API websockets open now", one(s.changes_clients as f64));
}

/// One sample per open database.
fn per_database(reading: &Reading, value: impl Fn(&DatabaseReading) -> f64) -> Vec<(Labels<'_>, f64)> {
    reading.databases.iter().map(|db| (vec![("database_name", db.name.as_str())], value(db))).collect()
}

/// A per-database family: name, help, and how to read its value.
type DatabaseFamily = (&'static str, &'static str, fn(&DatabaseReading) -> f64);

fn database_families(out: &mut Exposition, reading: &Reading) {
    let loaded = reading.known.iter().map(|(name, open)| (vec![("database_name", name.as_str())], if *open { 1.0 } else { 0.0 })).collect();
    out.gauge("corvid_database_loaded", "Whether the database is open (1) or unloaded (0); unloaded databases report nothing else", loaded);
    let gauges: [DatabaseFamily; 20] = [
        ("ravendb_database_documents_count", "Number of documents", |d| d.counts.documents as f64),
        ("ravendb_database_revisions_count", "Number of revision documents", |d| d.counts.revisions as f64),
        ("ravendb_database_attachments_count", "Number of attachments", |d| d.counts.attachments as f64),
        ("ravendb_database_unique_attachments_count", "Number of unique attachments", |d| d.counts.unique_attachments as f64),
        ("ravendb_database_statistics_doc_puts_per_second", "Number of document puts per second since the previous scrape", |d| {
            d.writes_per_second
        }),
        ("ravendb_database_statistics_map_index_indexes_per_second", "Number of indexed documents per second for map indexes", |d| {
            d.indexes.iter().filter(|i| !i.is_map_reduce()).map(|i| i.mapped_per_second).fold(0.0, add)
        }),
        ("ravendb_database_statistics_map_reduce_index_mapped_per_second", "Number of maps per second for map-reduce indexes", |d| {
            d.indexes.iter().filter(|i| i.is_map_reduce()).map(|i| i.mapped_per_second).fold(0.0, add)
        }),
        ("ravendb_database_indexes_count", "Number of indexes", |d| d.indexes.len() as f64),
        ("ravendb_database_indexes_stale_count", "Number of stale indexes", |d| {
            d.indexes.iter().filter(|i| i.info.is_stale).count() as f64
        }),
        ("ravendb_database_indexes_errors_count", "Number of indexing errors", |d| {
            d.indexes.iter().map(|i| i.info.errors_count as f64).fold(0.0, add)
        }),
        ("ravendb_database_indexes_static_count", "Number of static indexes", |d| {
            d.indexes.iter().filter(|i| !i.info.index_type.starts_with("Auto")).count() as f64
        }),
        ("ravendb_database_indexes_auto_count", "Number of auto indexes", |d| {
            d.indexes.iter().filter(|i| i.info.index_type.starts_with("Auto")).count() as f64
        }),
        ("ravendb_database_indexes_idle_count", "Number of idle indexes", |d| count_state(d, "Idle")),
        ("ravendb_database_indexes_disabled_count", "Number of disabled indexes", |d| count_state(d, "Disabled")),
        ("ravendb_database_indexes_errored_count", "Number of error indexes", |d| count_state(d, "Error")),
        ("ravendb_database_storage_documents_allocated_data_file_bytes", "Documents storage allocated size", |d| {
            d.counts.size_on_disk as f64
        }),
        ("ravendb_database_storage_indexes_allocated_data_file_bytes", "Index storage allocated size", |d| d.indexes_size_on_disk as f64),
        ("ravendb_database_storage_total_allocated_storage_file_bytes", "Total storage size", |d| {
            (d.counts.size_on_disk + d.indexes_size_on_disk) as f64
        }),
        ("corvid_database_queued_writes", "Writes waiting for the transaction merger now", |d| d.merger.queued_commands as f64),
        ("corvid_database_commands_per_flush", "Commands acknowledged per journal flush, on average", |d| d.merger.commands_per_flush),
    ];
    for (name, help, value) in gauges {
        out.gauge(name, help, per_database(reading, value));
    }
    out.gauge(
        "corvid_database_flush_queue_depth",
        "Merged commits written to the journal and waiting for its flush",
        per_database(reading, |d| d.merger.flush_queue_depth as f64),
    );
    out.gauge("corvid_database_tombstones_count", "Tombstones of deleted documents", per_database(reading, |d| d.counts.tombstones as f64));
    let counters: [DatabaseFamily; 6] = [
        ("corvid_database_merged_commands", "Write commands acknowledged since the database opened", |d| d.merger.merged_commands as f64),
        ("corvid_database_failed_commands", "Write commands that failed alone since the database opened", |d| {
            d.merger.failed_commands as f64
        }),
        ("corvid_database_merger_commits", "Merged LMDB commits since the database opened", |d| d.merger.merger_commits as f64),
        ("corvid_database_journal_flushes", "Journal flushes (fdatasync) since the database opened", |d| d.merger.journal_flushes as f64),
        ("corvid_database_journal_bytes", "Journal bytes written since the database opened", |d| d.merger.journal_bytes as f64),
        ("corvid_database_checkpoints", "Checkpoints (data file synced, journal recycled) since the database opened", |d| {
            d.merger.checkpoints as f64
        }),
    ];
    for (name, help, value) in counters {
        out.counter(name, help, per_database(reading, value));
    }
    let histograms = reading.databases.iter().map(|db| flush_histogram(&db.name, &db.merger.journal_flush_latency)).collect();
    out.add("corvid_database_journal_flush_seconds", "Time of a journal flush (fdatasync)", MetricType::HISTOGRAM, histograms);
}

/// Summing floats from 0.0 (`Iterator::sum` of nothing is -0.0, which the exposition prints as `-0`).
fn add(total: f64, value: f64) -> f64 {
    total + value
}

fn count_state(db: &DatabaseReading, state: &str) -> f64 {
    db.indexes.iter().filter(|i| i.info.state == state).count() as f64
}

fn flush_histogram(database: &str, counts: &LatencyCounts) -> Metric {
    let mut cumulative = 0;
    let buckets = counts
        .buckets
        .iter()
        .enumerate()
        .map(|(i, count)| {
            cumulative += count;
            let mut bucket = Bucket::default();
            bucket.set_upper_bound(LatencyCounts::upper_bound_seconds(i));
            bucket.set_cumulative_count(cumulative);
            bucket
        })
        .collect();
    let mut histogram = Histogram::default();
    histogram.set_bucket(buckets);
    histogram.set_sample_count(cumulative);
    histogram.set_sample_sum(counts.total_micros as f64 / 1e6);
    let mut metric = labelled(vec![("database_name", database)]);
    metric.set_histogram(histogram);
    metric
}

/// One sample per index of the open databases.
fn per_index(reading: &Reading, value: impl Fn(&IndexReading) -> f64) -> Vec<(Labels<'_>, f64)> {
    reading
        .databases
        .iter()
        .flat_map(|db| db.indexes.iter().map(move |i| (db.name.as_str(), i)))
        .map(|(db, i)| (vec![("database_name", db), ("index_name", i.info.name.as_str())], value(i)))
        .collect()
}

/// RavenDB's numbering of the index enums, named in the HELP texts.
fn ordinal(value: &str, names: &[&str]) -> f64 {
    names.iter().position(|n| *n == value).map_or(-1.0, |p| p as f64)
}

const PRIORITIES: &[&str] = &["Low", "Normal", "High"];
const STATES: &[&str] = &["Normal", "Disabled", "Idle", "Error"];
const LOCK_MODES: &[&str] = &["Unlock", "LockedIgnore", "LockedError"];
const RUN_STATUSES: &[&str] = &["Running", "Paused", "Disabled", "Pending"];
const TYPES: &[&str] = &["None", "AutoMap", "AutoMapReduce", "Map", "MapReduce", "Faulty", "JavaScriptMap", "JavaScriptMapReduce"];

fn index_families(out: &mut Exposition, reading: &Reading) {
    out.gauge("ravendb_index_errors", "Number of index errors", per_index(reading, |i| i.info.errors_count as f64));
    out.gauge(
        "ravendb_index_is_invalid",
        "Indicates if index is invalid (errored)",
        per_index(reading, |i| (i.info.state == "Error") as u8 as f64),
    );
    out.gauge(
        "ravendb_index_priority",
        "Index priority, Values: 0 = Low, 1 = Normal, 2 = High",
        per_index(reading, |i| ordinal(&i.info.priority, PRIORITIES)),
    );
    out.gauge(
        "ravendb_index_state",
        "Index state, Values: 0 = Normal, 1 = Disabled, 2 = Idle, 3 = Error",
        per_index(reading, |i| ordinal(i.info.state, STATES)),
    );
    out.gauge(
        "ravendb_index_lock_mode",
        "Index lock mode, Values: 0 = Unlock, 1 = LockedIgnore, 2 = LockedError",
        per_index(reading, |i| ordinal(&i.info.lock_mode, LOCK_MODES)),
    );
    out.gauge(
        "ravendb_index_status",
        "Index running status, Values: 0 = Running, 1 = Paused, 2 = Disabled, 3 = Pending",
        per_index(reading, |i| ordinal(i.info.run_status, RUN_STATUSES)),
    );
    out.gauge(
        "ravendb_index_type",
        "Index type, Values: 0 = None, 1 = AutoMap, 2 = AutoMapReduce, 3 = Map, 4 = MapReduce, 5 = Faulty, 6 = JavaScriptMap, 7 = JavaScriptMapReduce",
        per_index(reading, |i| ordinal(i.info.index_type, TYPES)),
    );
    out.gauge("ravendb_index_entries_count", "Number of entries in the index", per_index(reading, |i| i.info.entries as f64));
    out.gauge(
        "ravendb_index_time_since_last_indexing_seconds",
        "Time since last indexing (NaN when never indexed)",
        per_index(reading, |i| seconds_since(i.info.last_indexing_time).unwrap_or(f64::NAN)),
    );
    out.gauge(
        "ravendb_index_time_since_last_query_seconds",
        "Time since last query (NaN when never queried)",
        per_index(reading, |i| seconds_since(i.info.last_query_time).unwrap_or(f64::NAN)),
    );
    out.gauge(
        "ravendb_index_mapped_per_second",
        "Number of maps per second since the previous scrape",
        per_index(reading, |i| i.mapped_per_second),
    );
    out.gauge(
        "corvid_index_is_stale",
        "Whether the index has not processed every document written before now (1) or not (0)",
        per_index(reading, |i| i.info.is_stale as u8 as f64),
    );
    out.gauge(
        "corvid_index_lag_etags",
        "Etags between the last write to the index's collection and what the index has processed",
        per_index(reading, |i| i.lag() as f64),
    );
    out.counter(
        "corvid_index_map_errors",
        "Documents whose map failed since the index opened",
        per_index(reading, |i| i.info.map_errors as f64),
    );
}

fn collection_families(out: &mut Exposition, reading: &Reading) {
    let samples = reading
        .databases
        .iter()
        .flat_map(|db| {
            db.collections.iter().map(move |(c, n)| (vec![("database_name", db.name.as_str()), ("collection_name", c.as_str())], *n as f64))
        })
        .collect();
    out.gauge("ravendb_collection_documents_count", "Number of documents in collection", samples);
}
