//! Backups (RavenDB's `OngoingTasksHandler` and `BackupDatabaseHandler` routes): periodic backup tasks
//! (`POST /databases/{db}/admin/periodic-backup`, kept in the record's `PeriodicBackups`), a one-time backup
//! (`POST /databases/{db}/admin/backup`) and a task run now (`POST /databases/{db}/admin/backup/database`) as
//! operations of the database, a task's configuration and last status (`GET /periodic-backup`,
//! `GET /periodic-backup/status`), the database's backup history (`GET /databases/{db}/periodic-backup/history`,
//! Corvid's) and the scheduler's timers (`GET /admin/debug/periodic-backup/timers`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::backup::{BackupError, BackupKind, CronSchedule};
use corvid_engine::{Database, EngineError, Operation, OperationResult};
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::backup_runs::{apply_retention, plan_of, run_backup, BackupPlan, RunOrigin};
use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// `POST /databases/{db}/admin/periodic-backup`: adds a task, or replaces the one with the body's `TaskId`.
pub async fn put_periodic_backup(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let mut config = read_json(body, &headers, state.config.max_body_bytes).await?;
    if !config.is_object() {
        return Err(ApiError::BadRequest("The body must be a PeriodicBackupConfiguration object".into()));
    }
    plan_of(&config)?;
    for field in ["FullBackupFrequency", "IncrementalBackupFrequency"] {
        if let Some(expression) = config.get(field).and_then(Value::as_str).filter(|e| !e.is_empty()) {
            CronSchedule::parse(expression).map_err(EngineError::from)?;
        }
    }
    let no_schedule = [config.get("FullBackupFrequency"), config.get("IncrementalBackupFrequency")]
        .iter()
        .all(|f| f.and_then(Value::as_str).is_none_or(str::is_empty));
    if no_schedule {
        return Err(EngineError::from(BackupError::InvalidConfiguration(
            "A periodic backup needs a FullBackupFrequency or an IncrementalBackupFrequency".into(),
        ))
        .into());
    }
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed) + 1;
    let asked = config.get("TaskId").and_then(Value::as_u64).filter(|id| *id > 0);
    let task_id = match asked {
        Some(id) if entry.periodic_backups.iter().any(|t| t.get("TaskId").and_then(Value::as_u64) == Some(id)) => id,
        Some(id) => {
            return Err(ApiError::BadRequest(format!("There is no periodic backup task with TaskId {id} in database '{}'", entry.name)))
        }
        None => index,
    };
    config["TaskId"] = json!(task_id);
    if config.get("Name").and_then(Value::as_str).is_none_or(str::is_empty) {
        config["Name"] = json!(format!("Backup #{task_id}"));
    }
    let landlord = state.landlord.clone();
    blocking(move || {
        landlord.update(&db, |e| match e.periodic_backups.iter_mut().find(|t| t.get("TaskId").and_then(Value::as_u64) == Some(task_id)) {
            Some(existing) => *existing = config,
            None => e.periodic_backups.push(config),
        })
    })
    .await?;
    Ok(json_value(StatusCode::OK, &json!({"RaftCommandIndex": index, "TaskId": task_id})))
}

/// Starts a backup of `db` as an operation of the database on a thread of its own. A periodic task run now
/// (`task`: its configuration) then applies the task's `RetentionPolicy`, as its scheduled runs do.
fn start_backup(
    state: &AppState,
    db: Arc<Database>,
    plan: BackupPlan,
    task: Option<(u64, Value)>,
    incremental: bool,
    operation_id: Option<u64>,
) -> ApiResult<u64> {
    let (task_id, task_config) = task.map_or((None, None), |(id, config)| (Some(id), Some(config)));
    let operation: Arc<Operation> =
        db.operations().start(operation_id, "DatabaseBackup", format!("Backup of database {} to {}", db.name(), plan.folder.display()));
    let id = operation.snapshot().id;
    let landlord = state.landlord.clone();
    let spawned = std::thread::Builder::new().name(format!("backup:{}", db.name())).spawn(move || {
        let origin = RunOrigin { task_id, operation_id: Some(id) };
        let mut progress = |_: &str, bytes: u64| operation.add_processed(bytes);
        match run_backup(&landlord, &db, &plan, origin, incremental, &mut progress) {
            Ok(summary) => {
                if let Some(config) = &task_config {
                    match apply_retention(config, &plan, db.name()) {
                        Ok(0) => {}
                        Ok(removed) => tracing::info!(database = %db.name(), removed, "old backups removed by the retention policy"),
                        Err(e) => tracing::warn!(database = %db.name(), error = %e, "the retention policy could not be applied"),
                    }
                }
                operation.complete(OperationResult::Backup(summary))
            }
            Err(e) => operation.fail(e),
        }
    });
    spawned.map_err(|e| ApiError::Internal(format!("could not start the backup: {e}")))?;
    Ok(id)
}

/// `POST /databases/{db}/admin/backup[?operationId=]`: a one-time backup (`BackupConfiguration`).
pub async fn backup_once(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let config = read_json(body, &headers, state.config.max_body_bytes).await?;
    let plan = plan_of(&config)?;
    let database = state.landlord.database(&db).await?;
    let id = start_backup(&state, database, plan, None, false, query.get_u64("operationId"))?;
    Ok(json_value(StatusCode::OK, &json!({"OperationId": id, "OperationNodeTag": NODE_TAG})))
}

/// `POST /databases/{db}/admin/backup/database?taskId=[&isFullBackup=]`: runs a periodic task now.
pub async fn backup_task_now(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let task_id = query.get_u64("taskId").ok_or_else(|| ApiError::BadRequest("Query string parameter 'taskId' is required".into()))?;
    let incremental = query.get("isFullBackup").is_some_and(|v| v.eq_ignore_ascii_case("false"));
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    let config = task_config(&entry.periodic_backups, task_id)
        .ok_or_else(|| ApiError::BadRequest(format!("Periodic backup task ID: {task_id} doesn't exist")))?;
    let plan = plan_of(&config)?;
    let database = state.landlord.database(&db).await?;
    if incremental && plan.kind == BackupKind::Snapshot {
        return Err(EngineError::from(BackupError::InvalidConfiguration(
            "Incremental backups are of the 'Backup' type; this task takes snapshots".into(),
        ))
        .into());
    }
    let id = start_backup(&state, database, plan, Some((task_id, config)), incremental, query.get_u64("operationId"))?;
    Ok(json_value(StatusCode::OK, &json!({"ResponsibleNode": NODE_TAG, "OperationId": id})))
}

fn task_config(tasks: &[Value], task_id: u64) -> Option<Value> {
    tasks.iter().find(|t| t.get("TaskId").and_then(Value::as_u64) == Some(task_id)).cloned()
}

fn name_and_task(state: &AppState, raw: Option<&str>) -> ApiResult<(corvid_engine::CatalogEntry, u64)> {
    let query = QueryParams::parse(raw)?;
    let name = query.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("Query string parameter 'name' is required".into()))?;
    let task_id = query.get_u64("taskId").ok_or_else(|| ApiError::BadRequest("Query string parameter 'taskId' is required".into()))?;
    let entry = state.landlord.entry(name).ok_or_else(|| ApiError::DatabaseDoesNotExist(name.to_owned()))?;
    Ok((entry, task_id))
}

/// `GET /periodic-backup?name=&taskId=`: a task's configuration.
pub async fn get_periodic_backup(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let (entry, task_id) = name_and_task(&state, raw.as_deref())?;
    let config = task_config(&entry.periodic_backups, task_id)
        .ok_or_else(|| ApiError::InvalidOperation(format!("Periodic backup task ID: {task_id} doesn't exist")))?;
    Ok(json_value(StatusCode::OK, &config))
}

/// `GET /periodic-backup/status?name=&taskId=`: the task's last run (`{"Status": null}` before the first).
pub async fn periodic_backup_status(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let (entry, task_id) = name_and_task(&state, raw.as_deref())?;
    let last = entry.backup_history.iter().rev().find(|run| run.get("TaskId").and_then(Value::as_u64) == Some(task_id)).cloned();
    Ok(json_value(StatusCode::OK, &json!({ "Status": last })))
}

/// `GET /databases/{db}/periodic-backup/history`: every recorded run, newest last.
pub async fn backup_history(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    Ok(json_value(StatusCode::OK, &json!({ "Results": entry.backup_history })))
}

/// `GET /admin/debug/periodic-backup/timers`: what the scheduler is doing.
pub async fn timers(State(state): State<AppState>) -> ApiResult<Response> {
    Ok(json_value(StatusCode::OK, &state.backup_scheduler.stats_json()))
}

/// RavenDB's `BackupResult` of a completed one-time backup (with Corvid's counts).
pub(crate) fn result_json(summary: &corvid_engine::backup::BackupSummary) -> Value {
    json!({
        "$type": "Raven.Client.Documents.Operations.Backups.BackupResult, Raven.Client",
        "BackupType": summary.kind.as_str(),
        "SnapshotBackup": {"Processed": summary.kind == corvid_engine::backup::BackupKind::Snapshot, "ReadCount": summary.files},
        "IsIncremental": summary.incremental,
        "FileName": summary.file,
        "LocalBackup": {"BackupDirectory": summary.folder.to_string_lossy(), "TempFolderUsed": false},
        "LastEtag": summary.last_etag,
        "Files": summary.files,
        "Bytes": summary.bytes,
        "DurationInMs": summary.duration_ms,
        "Messages": [],
    })
}
