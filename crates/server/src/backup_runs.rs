//! One backup run of a database, as a one-time backup, a periodic task's scheduled run or a "backup now":
//! the configuration as RavenDB sends it (`BackupConfiguration` / `PeriodicBackupConfiguration`) checked, the
//! backup written through the engine's `BackupWriter`, the run recorded in the database's backup history
//! (the catalog, as durable as the record) and the task's retention applied.

use std::path::PathBuf;

use corvid_engine::backup::{self, BackupError, BackupKind, BackupPoint, BackupRequest, BackupSummary};
use corvid_engine::{Database, EngineError};
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::landlord::Landlord;

/// Runs kept in a database's history (older ones drop off).
const HISTORY_LENGTH: usize = 100;

/// A backup configuration reduced to what Corvid runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupPlan {
    /// `BackupType`.
    pub kind: BackupKind,
    /// `LocalSettings.FolderPath`.
    pub folder: PathBuf,
}

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::Backup(BackupError::InvalidConfiguration(message.into()))
}

/// Reads a `BackupConfiguration`: a type and a local folder; other destinations are refused by name.
pub fn plan_of(config: &Value) -> Result<BackupPlan, EngineError> {
    let kind = config
        .get("BackupType")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("A backup configuration needs a BackupType ('Backup' or 'Snapshot')"))?;
    let kind = BackupKind::parse(kind)?;
    for destination in ["S3Settings", "GlacierSettings", "AzureSettings", "FtpSettings", "GoogleCloudSettings"] {
        let enabled =
            config.get(destination).is_some_and(|s| s.is_object() && !s.get("Disabled").and_then(Value::as_bool).unwrap_or(false));
        if enabled {
            return Err(EngineError::NotSupported(format!("Corvid backs up to local folders only; {destination} is not supported yet")));
        }
    }
    if config.get("BackupEncryptionSettings").and_then(|s| s.get("EncryptionMode")).and_then(Value::as_str).is_some_and(|m| m != "None") {
        return Err(EngineError::NotSupported("Encrypted backups are not supported yet".into()));
    }
    let local = config.get("LocalSettings").filter(|s| !s.get("Disabled").and_then(Value::as_bool).unwrap_or(false));
    let folder = local
        .and_then(|s| s.get("FolderPath"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| invalid("A backup needs a destination: LocalSettings.FolderPath"))?;
    Ok(BackupPlan { kind, folder: PathBuf::from(folder) })
}

/// Where a run came from, for its history entry.
#[derive(Debug, Clone, Copy)]
pub struct RunOrigin {
    /// The periodic task, if any.
    pub task_id: Option<u64>,
    /// The operation that ran it, if any.
    pub operation_id: Option<u64>,
}

/// Where the task's last successful dump backup left off, if its folder is still there.
fn previous_point(history: &[Value], plan: &BackupPlan, task_id: Option<u64>) -> Option<(BackupPoint, Value)> {
    let task_id = task_id?;
    let last = history.iter().rev().find(|run| {
        run.get("TaskId").and_then(Value::as_u64) == Some(task_id)
            && run.get("BackupType").and_then(Value::as_str) == Some(BackupKind::Backup.as_str())
            && run.get("Error").is_none_or(Value::is_null)
    })?;
    let folder = plan.folder.join(last.get("FolderName").and_then(Value::as_str)?);
    let point = BackupPoint {
        folder,
        last_etag: last.get("LastEtag").and_then(Value::as_u64)?,
        last_raft_index: last.pointer("/LastRaftIndex/LastEtag").and_then(Value::as_u64).unwrap_or(0),
    };
    point.folder.is_dir().then(|| (point, last.clone()))
}

/// Runs one backup of `db` and records it: an incremental one when asked and the task has a previous dump
/// backup to continue from (else a full one, as RavenDB does). Blocking.
pub fn run_backup(
    landlord: &Landlord,
    db: &Database,
    plan: &BackupPlan,
    origin: RunOrigin,
    incremental: bool,
    progress: &mut dyn FnMut(&str, u64),
) -> Result<BackupSummary, EngineError> {
    let started_at = corvid_types::now_nanos();
    let entry = landlord.entry(db.name()).ok_or_else(|| EngineError::BadRequest(format!("Database '{}' does not exist", db.name())))?;
    let mut record = serde_json::to_value(&entry).map_err(|e| EngineError::Internal(e.to_string()))?;
    // A backup keeps the record, not the history of earlier backups.
    if let Some(fields) = record.as_object_mut() {
        fields.remove("BackupHistory");
        fields.remove("Directory");
    }
    let previous = if plan.kind == BackupKind::Backup { previous_point(&entry.backup_history, plan, origin.task_id) } else { None };
    let incremental = incremental && previous.is_some();
    let (previous, previous_status) = previous.map_or((None, None), |(point, status)| (Some(point), Some(status)));
    let request = BackupRequest { destination: plan.folder.clone(), record, incremental, previous };
    let result = backup::writer_for(plan.kind).write(db, &request, progress).map_err(EngineError::from);
    let status = status_json(plan, origin, started_at, &result, previous_status.as_ref().filter(|_| incremental));
    if let Err(e) = landlord.update(db.name(), |e| {
        e.backup_history.push(status);
        let excess = e.backup_history.len().saturating_sub(HISTORY_LENGTH);
        e.backup_history.drain(..excess);
    }) {
        tracing::warn!(database = %db.name(), error = %e, "could not record the backup run");
    }
    match &result {
        Ok(summary) => {
            tracing::info!(database = %db.name(), folder = %summary.folder.display(), bytes = summary.bytes, ms = summary.duration_ms, "backup done")
        }
        Err(e) => tracing::warn!(database = %db.name(), error = %e, "backup failed"),
    }
    result
}

/// Applies a periodic task's `RetentionPolicy` to its folder after a successful run.
pub fn apply_retention(config: &Value, plan: &BackupPlan, database: &str) -> Result<usize, EngineError> {
    let Some(policy) = config.get("RetentionPolicy").filter(|p| !p.get("Disabled").and_then(Value::as_bool).unwrap_or(true)) else {
        return Ok(0);
    };
    let Some(age) = policy.get("MinimumBackupAgeToKeep").and_then(Value::as_str) else { return Ok(0) };
    let keep = backup::parse_time_span(age)?;
    let now = time::OffsetDateTime::now_utc();
    let snapshots = backup::prune(&plan.folder, database, keep, now)?.len();
    Ok(snapshots + backup::prune_dump_folders(&plan.folder, database, keep, now)?.len())
}

/// RavenDB's `PeriodicBackupStatus` of one run (plus Corvid's `Files` and `Bytes`); an incremental run keeps
/// the last full backup's times from `previous`, the status it continues.
fn status_json(
    plan: &BackupPlan,
    origin: RunOrigin,
    started_at: i64,
    result: &Result<BackupSummary, EngineError>,
    previous: Option<&Value>,
) -> Value {
    let at = corvid_types::format_date(started_at);
    let now = corvid_types::format_date(corvid_types::now_nanos());
    let (folder, file, error, duration, last_etag, last_raft_index, files, bytes) = match result {
        Ok(s) => {
            let folder = s.folder.file_name().map(|n| n.to_string_lossy().into_owned());
            (folder.clone(), s.file.clone().or(folder), Value::Null, s.duration_ms, Some(s.last_etag), s.last_raft_index, s.files, s.bytes)
        }
        Err(e) => (
            None,
            None,
            json!({"Exception": e.to_string(), "At": now}),
            ((corvid_types::now_nanos() - started_at) / 1_000_000) as u64,
            None,
            0,
            0,
            0,
        ),
    };
    let incremental = previous.is_some();
    let done = result.is_ok();
    let kept = |field: &str| previous.and_then(|p| p.get(field)).cloned().unwrap_or(Value::Null);
    let (last_full, last_full_internal, local_last_full) = if incremental {
        (kept("LastFullBackup"), kept("LastFullBackupInternal"), previous.and_then(|p| p.pointer("/LocalBackup/LastFullBackup")).cloned())
    } else {
        (if done { Value::from(at.clone()) } else { Value::Null }, Value::from(at.clone()), done.then(|| Value::from(now.clone())))
    };
    let (last_incremental, local_last_incremental) = if incremental {
        (if done { Value::from(at.clone()) } else { Value::Null }, if done { Value::from(now.clone()) } else { Value::Null })
    } else {
        (Value::Null, Value::Null)
    };
    json!({
        "TaskId": origin.task_id.unwrap_or(0),
        "BackupType": plan.kind.as_str(),
        "IsFull": !incremental,
        "NodeTag": NODE_TAG,
        "LastFullBackup": last_full,
        "LastFullBackupInternal": last_full_internal,
        "LastIncrementalBackup": last_incremental,
        "LastIncrementalBackupInternal": if incremental { Value::from(at.clone()) } else { Value::Null },
        "LocalBackup": {
            "BackupDirectory": plan.folder.to_string_lossy(),
            "FileName": file,
            "TempFolderUsed": false,
            "LastFullBackup": local_last_full,
            "LastIncrementalBackup": local_last_incremental,
            "Exception": error.get("Exception").cloned().unwrap_or(Value::Null),
        },
        "LastEtag": last_etag,
        "LastRaftIndex": {"LastEtag": last_raft_index},
        "FolderName": folder,
        "DurationInMs": duration,
        "Error": error,
        "LastOperationId": origin.operation_id,
        "Files": files,
        "Bytes": bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_are_read_as_ravendb_sends_them() {
        let config = json!({"BackupType": "Snapshot", "LocalSettings": {"Disabled": false, "FolderPath": "/backups"}, "S3Settings": null});
        assert_eq!(plan_of(&config).unwrap(), BackupPlan { kind: BackupKind::Snapshot, folder: PathBuf::from("/backups") });
        let s3 = json!({"BackupType": "Backup", "S3Settings": {"Disabled": false, "BucketName": "b"}});
        assert!(plan_of(&s3).unwrap_err().to_string().contains("S3Settings"));
        let nowhere = json!({"BackupType": "Snapshot", "LocalSettings": {"Disabled": true, "FolderPath": "/x"}});
        assert!(plan_of(&nowhere).unwrap_err().to_string().contains("LocalSettings.FolderPath"));
        assert!(plan_of(&json!({"BackupType": "Other", "LocalSettings": {"FolderPath": "/x"}})).is_err());
    }
}
