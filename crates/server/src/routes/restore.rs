//! `POST /admin/restore/database` (`RestoreBackupConfiguration`): restores a Corvid snapshot backup into a new
//! database as a server-level operation with progress (bytes checked and copied), which the clients wait on
//! through `GET /operations/state?id=`. RavenDB snapshots and dump backups are refused with what to do.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::backup::restore_snapshot;
use corvid_engine::{CatalogEntry, EngineError};
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::landlord::validate_database_name;
use crate::responses::json_value;
use crate::state::AppState;

pub async fn restore_database(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let config = read_json(body, &headers, state.config.max_body_bytes).await?;
    let text = |field: &str| config.get(field).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
    let name = text("DatabaseName").ok_or_else(|| ApiError::BadRequest("Restoring requires a DatabaseName".into()))?;
    let location = text("BackupLocation")
        .ok_or_else(|| ApiError::BadRequest("Restoring requires a BackupLocation (a folder on the server)".into()))?;
    if let Some(kind) = text("Type").filter(|t| t != "Local") {
        return Err(ApiError::NotSupported(format!("Corvid restores from local folders only; restore type '{kind}' is not supported yet")));
    }
    if config.get("EncryptionKey").and_then(Value::as_str).is_some_and(|k| !k.is_empty()) {
        return Err(ApiError::NotSupported("Encrypted backups are not supported yet".into()));
    }
    validate_database_name(&name)?;
    if state.landlord.entry(&name).is_some() {
        return Err(ApiError::DatabaseAlreadyExists(name));
    }
    let skip_indexes = config.get("SkipIndexes").and_then(Value::as_bool).unwrap_or(false);
    let id = state.operation_ids.fetch_add(1, Ordering::Relaxed);
    let operation = state.server_operations.start(Some(id), "DatabaseRestore", format!("Restoring database {name} from {location}"));
    let landlord = state.landlord.clone();
    let spawned = std::thread::Builder::new().name(format!("restore:{name}")).spawn(move || {
        let location = PathBuf::from(location);
        let mut restored_files = 0usize;
        let restored = landlord.create_from(&name, |directory| {
            let mut last = 0u64;
            let mut progress = |done: u64, total: u64| {
                operation.set_total(total);
                operation.add_processed(done - last);
                last = done;
            };
            let manifest = restore_snapshot(&location, directory, &mut progress).map_err(|e| ApiError::from(EngineError::from(e)))?;
            if skip_indexes {
                let _ = std::fs::remove_dir_all(directory.join("indexes"));
            }
            restored_files = manifest.files.len();
            let mut record: CatalogEntry = serde_json::from_value(with_required_fields(manifest.database_record))
                .map_err(|e| ApiError::BadRequest(format!("The backup's database record cannot be read: {e}")))?;
            // The copy does not inherit the source's backup tasks: it would back up into the same folders.
            record.periodic_backups.clear();
            record.backup_history.clear();
            Ok(record)
        });
        match restored {
            Ok(entry) => operation.complete(json!({
                "$type": "Raven.Client.ServerWide.Operations.RestoreResult, Raven.Client",
                "DataDirectory": entry.directory,
                "SnapshotRestore": {"Processed": true, "ReadCount": restored_files},
                "Messages": [format!("Restored database {} ({restored_files} files)", entry.name)],
            })),
            Err(e) => operation.fail(e),
        }
    });
    spawned.map_err(|e| ApiError::Internal(format!("could not start the restore: {e}")))?;
    Ok(json_value(StatusCode::OK, &json!({"OperationId": id, "OperationNodeTag": NODE_TAG})))
}

/// The record as the backup kept it, with the fields the catalog entry requires (replaced when registered).
fn with_required_fields(mut record: Value) -> Value {
    if let Some(fields) = record.as_object_mut() {
        for field in ["Name", "Directory", "CreatedAt"] {
            fields.entry(field).or_insert_with(|| Value::from(""));
        }
    }
    record
}
