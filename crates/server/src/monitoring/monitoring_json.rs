//! RavenDB's JSON forms of a monitoring reading (`/admin/monitoring/v1/{server,databases,indexes,collections}`):
//! sizes in MB, rates per second since the previous request, enums as strings. Numbers Corvid does not
//! keep (backups, licenses, cluster terms, disk I/O counters of the OS) are reported as RavenDB reports
//! them on a server without the feature: zero, null or -1.

use serde_json::{json, Value};

use super::metrics_snapshot::{seconds_since, DatabaseReading, Reading, SERVER_FULL_VERSION, SERVER_VERSION};

const MB: u64 = 1024 * 1024;

/// `GET /admin/monitoring/v1/server`.
pub fn server_json(reading: &Reading) -> Value {
    let s = &reading.server;
    let p = &s.process;
    json!({
        "ServerVersion": SERVER_VERSION,
        "ServerFullVersion": SERVER_FULL_VERSION,
        "UpTimeInSec": s.uptime_seconds as u64,
        "ServerProcessId": s.process_id,
        "Config": {
            "ServerUrls": [s.public_url],
            "PublicServerUrl": null,
            "TcpServerUrls": [s.tcp_url],
            "PublicTcpServerUrls": null
        },
        "Backup": {"CurrentNumberOfRunningBackups": 0, "MaxNumberOfConcurrentBackups": 0},
        "Cpu": {
            "ProcessUsage": round2(s.cpu_process_percent),
            "MachineUsage": round2(s.cpu_machine_percent),
            "MachineIoWait": round2(s.cpu_machine_io_wait_percent),
            "ProcessorCount": p.processor_count,
            "AssignedProcessorCount": p.processor_count,
            "ThreadPoolAvailableWorkerThreads": null,
            "ThreadPoolAvailableCompletionPortThreads": null
        },
        "Memory": {
            "AllocatedMemoryInMb": p.resident_bytes / MB,
            "LowMemorySeverity": if p.memory_total_bytes > 0 && p.memory_available_bytes < p.memory_total_bytes / 10 { "Low" } else { "None" },
            "PhysicalMemoryInMb": p.memory_total_bytes / MB,
            "InstalledMemoryInMb": p.memory_total_bytes / MB,
            "TotalSwapSizeInMb": p.swap_total_bytes / MB,
            "TotalSwapUsageInMb": p.swap_used_bytes / MB,
            "WorkingSetSwapUsageInMb": 0,
            "TotalDirtyInMb": p.dirty_bytes / MB
        },
        "Disk": null,
        "License": {"Type": "Community", "ExpirationLeftInSec": null, "UtilizedCpuCores": p.processor_count, "MaxCores": p.processor_count},
        "Network": {
            "TcpActiveConnections": null,
            "ConcurrentRequestsCount": s.active_requests,
            "TotalRequests": s.total_requests,
            "RequestsPerSec": round2(s.requests_per_second),
            "LastRequestTimeInSec": null,
            "LastAuthorizedNonClusterAdminRequestTimeInSec": null
        },
        "Certificate": {"ServerCertificateExpirationLeftInSec": -1.0, "WellKnownAdminCertificates": null, "WellKnownAdminIssuers": null},
        "Cluster": {"NodeTag": "A", "NodeState": "Leader", "CurrentTerm": 1, "Index": 0, "Id": null},
        "Databases": {"TotalCount": s.databases_total, "LoadedCount": s.databases_loaded}
    })
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn envelope(reading: &Reading, results: Vec<Value>) -> Value {
    json!({"PublicServerUrl": reading.server.public_url, "NodeTag": "A", "Results": results})
}

/// `GET /admin/monitoring/v1/databases`.
pub fn databases_json(reading: &Reading) -> Value {
    envelope(reading, reading.databases.iter().map(database_json).collect())
}

fn database_json(db: &DatabaseReading) -> Value {
    let count = |state: &str| db.indexes.iter().filter(|i| i.info.state == state).count();
    let auto = db.indexes.iter().filter(|i| i.info.index_type.starts_with("Auto")).count();
    json!({
        "DatabaseName": db.name,
        "DatabaseId": db.database_id,
        "UptimeInSec": null,
        "TimeSinceLastBackupInSec": null,
        "Counts": {
            "Documents": db.counts.documents,
            "Revisions": db.counts.revisions,
            "Attachments": db.counts.attachments,
            "UniqueAttachments": db.counts.unique_attachments,
            "Alerts": 0,
            "Rehabs": 0,
            "PerformanceHints": 0,
            "ReplicationFactor": 1
        },
        "Statistics": {
            "DocPutsPerSec": round2(db.writes_per_second),
            "MapIndexIndexesPerSec": round2(db.indexes.iter().filter(|i| !i.is_map_reduce()).map(|i| i.mapped_per_second).fold(0.0, |a, b| a + b)),
            "MapReduceIndexMappedPerSec": round2(db.indexes.iter().filter(|i| i.is_map_reduce()).map(|i| i.mapped_per_second).fold(0.0, |a, b| a + b)),
            "MapReduceIndexReducedPerSec": 0.0,
            "RequestsPerSec": null,
            "RequestsCount": null,
            "RequestAverageDurationInMs": null
        },
        "Indexes": {
            "Count": db.indexes.len(),
            "StaleCount": db.indexes.iter().filter(|i| i.info.is_stale).count(),
            "ErrorsCount": db.indexes.iter().map(|i| i.info.errors_count).sum::<u64>(),
            "StaticCount": db.indexes.len() - auto,
            "AutoCount": auto,
            "IdleCount": count("Idle"),
            "DisabledCount": count("Disabled"),
            "ErroredCount": count("Error")
        },
        "Storage": {
            "DocumentsAllocatedDataFileInMb": db.counts.size_on_disk / MB,
            "DocumentsUsedDataFileInMb": db.counts.size_on_disk.saturating_sub(db.merger.data_file_free_bytes) / MB,
            "IndexesAllocatedDataFileInMb": db.indexes_size_on_disk / MB,
            "IndexesUsedDataFileInMb": db.indexes_size_on_disk / MB,
            "TotalAllocatedStorageFileInMb": (db.counts.size_on_disk + db.indexes_size_on_disk) / MB,
            "TotalFreeSpaceInMb": -1,
            "IoReadOperations": null,
            "IoWriteOperations": null,
            "ReadThroughputInKb": null,
            "WriteThroughputInKb": null,
            "QueueLength": null
        }
    })
}

/// `GET /admin/monitoring/v1/indexes`.
pub fn indexes_json(reading: &Reading) -> Value {
    let results = reading
        .databases
        .iter()
        .map(|db| {
            let indexes: Vec<Value> = db
                .indexes
                .iter()
                .map(|i| {
                    json!({
                        "IndexName": i.info.name,
                        "Priority": i.info.priority,
                        "State": i.info.state,
                        "Errors": i.info.errors_count,
                        "TimeSinceLastQueryInSec": seconds_since(i.info.last_query_time).map(|s| s as u64),
                        "TimeSinceLastIndexingInSec": seconds_since(i.info.last_indexing_time).map(|s| s as u64),
                        "LockMode": i.info.lock_mode,
                        "IsInvalid": i.info.state == "Error",
                        "Status": i.info.run_status,
                        "MappedPerSec": round2(i.mapped_per_second),
                        "ReducedPerSec": 0.0,
                        "Type": i.info.index_type,
                        "EntriesCount": i.info.entries
                    })
                })
                .collect();
            json!({"DatabaseName": db.name, "Indexes": indexes})
        })
        .collect();
    envelope(reading, results)
}

/// `GET /admin/monitoring/v1/collections`. Corvid counts documents per collection but not their bytes:
/// the sizes are 0.
pub fn collections_json(reading: &Reading) -> Value {
    let results = reading
        .databases
        .iter()
        .map(|db| {
            let collections: Vec<Value> = db
                .collections
                .iter()
                .map(|(name, count)| {
                    json!({
                        "CollectionName": name,
                        "DocumentsCount": count,
                        "TotalSizeInBytes": 0,
                        "DocumentsSizeInBytes": 0,
                        "TombstonesSizeInBytes": 0,
                        "RevisionsSizeInBytes": 0
                    })
                })
                .collect();
            json!({"DatabaseName": db.name, "Collections": collections})
        })
        .collect();
    envelope(reading, results)
}
