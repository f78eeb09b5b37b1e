//! `POST /admin/restore/database` (`RestoreBackupConfiguration`): restores a chain of dump backups (full +
//! incrementals, RavenDB's or Corvid's, replayed in order up to `LastFileNameToRestore`) or a Corvid snapshot
//! into a new database, as a server-level operation with progress, which the clients wait on through
//! `GET /operations/state?id=`. RavenDB snapshots are refused with what to do.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::backup::{locate_dump_chain, replay_dump_chain, restore_snapshot};
use corvid_engine::{CatalogEntry, Database, EngineError};
use corvid_types::NODE_TAG;
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::landlord::{validate_database_name, Landlord};
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
    let last_file = text("LastFileNameToRestore");
    let id = state.operation_ids.fetch_add(1, Ordering::Relaxed);
    let operation = state.server_operations.start(Some(id), "DatabaseRestore", format!("Restoring database {name} from {location}"));
    let landlord = state.landlord.clone();
    let spawned = std::thread::Builder::new().name(format!("restore:{name}")).spawn(move || {
        let location = PathBuf::from(location);
        let outcome = match locate_dump_chain(&location, last_file.as_deref()) {
            Ok(Some(chain)) => restore_dumps(&landlord, &name, &chain, skip_indexes, &operation),
            Ok(None) => restore_from_snapshot(&landlord, &name, &location, skip_indexes, &operation),
            Err(e) => Err(ApiError::from(EngineError::from(e))),
        };
        match outcome {
            Ok(result) => operation.complete(result),
            Err(e) => operation.fail(e),
        }
    });
    spawned.map_err(|e| ApiError::Internal(format!("could not start the restore: {e}")))?;
    Ok(json_value(StatusCode::OK, &json!({"OperationId": id, "OperationNodeTag": NODE_TAG})))
}

type RestoreOperation = corvid_engine::Operation<Value, ApiError>;

/// Restores a Corvid snapshot: its files copied into the new database's directory.
fn restore_from_snapshot(
    landlord: &Landlord,
    name: &str,
    location: &Path,
    skip_indexes: bool,
    operation: &RestoreOperation,
) -> Result<Value, ApiError> {
    let mut restored_files = 0usize;
    let entry = landlord.create_from(name, |directory| {
        let mut last = 0u64;
        let mut progress = |done: u64, total: u64| {
            operation.set_total(total);
            operation.add_processed(done - last);
            last = done;
        };
        let manifest = restore_snapshot(location, directory, &mut progress).map_err(|e| ApiError::from(EngineError::from(e)))?;
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
    })?;
    Ok(json!({
        "$type": "Raven.Client.ServerWide.Operations.RestoreResult, Raven.Client",
        "DataDirectory": entry.directory,
        "SnapshotRestore": {"Processed": true, "ReadCount": restored_files},
        "Messages": [format!("Restored database {} ({restored_files} files)", entry.name)],
    }))
}

/// Restores a chain of dump backups: a new database filled by replaying the files in order, registered
/// only once every file is in (a failure removes the directory: nothing half-restored is ever served).
fn restore_dumps(
    landlord: &Landlord,
    name: &str,
    chain: &[PathBuf],
    skip_indexes: bool,
    operation: &RestoreOperation,
) -> Result<Value, ApiError> {
    let total_bytes: u64 = chain.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    operation.set_total(chain.len() as u64);
    let mut messages = Vec::new();
    let mut documents = 0u64;
    let entry = landlord.create_from(name, |directory| {
        let filled = Database::open(name, directory, landlord.database_options()).map_err(ApiError::from).and_then(|db| {
            // Progress counts the files begun, of the chain's.
            let mut current = String::new();
            let mut progress = |file: &str, _: &corvid_engine::smuggler::SmugglerResult| {
                if file != current {
                    current = file.to_owned();
                    operation.add_processed(1);
                }
                true
            };
            let replayed = replay_dump_chain(&db, chain, skip_indexes, &mut progress);
            db.close();
            replayed.map_err(|e| ApiError::from(EngineError::from(e)))
        });
        let results = match filled {
            Ok(results) => results,
            Err(e) => {
                let _ = std::fs::remove_dir_all(directory);
                return Err(e);
            }
        };
        // The configuration in force is the last file's (each file's record was applied in turn).
        let record_config = results.last().map(|(_, r)| r.record_config.clone()).unwrap_or_default();
        for (file, result) in results {
            documents += result.documents.read;
            messages.push(format!("{file}: {}", result.summary()));
            messages.extend(result.messages);
        }
        let mut record: CatalogEntry = serde_json::from_value(with_required_fields(json!({})))
            .map_err(|e| ApiError::Internal(format!("a new database record cannot be made: {e}")))?;
        record.periodic_backups.clear();
        messages.extend(super::imported_record::keep_in_entry(&mut record, &record_config));
        Ok(record)
    })?;
    messages.insert(0, format!("Restored database {} from {} backup files ({total_bytes} bytes)", entry.name, chain.len()));
    Ok(json!({
        "$type": "Raven.Client.ServerWide.Operations.RestoreResult, Raven.Client",
        "DataDirectory": entry.directory,
        "Documents": {"Processed": true, "ReadCount": documents},
        "SnapshotRestore": {"Processed": false, "ReadCount": 0},
        "Files": chain.len(),
        "Messages": messages,
    }))
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
