//! Taking a snapshot backup of an open database without stopping its writes: the store's consistent copy
//! (`corvid_storage::Store::copy_snapshot`), each index's definition and control files (the index data is
//! rebuilt from the documents at the restored database's first opening), then the manifest, last.

use std::path::{Path, PathBuf};
use std::time::Instant;

use time::macros::format_description;

use super::error::BackupError;
use super::manifest::{checksum, ManifestFile, SnapshotManifest, MANIFEST_VERSION, SNAPSHOT_FORMAT};
use super::summary::{BackupKind, BackupRequest, BackupSummary};
use crate::Database;

/// The files of an index directory a snapshot keeps.
const INDEX_FILES: [&str; 2] = ["definition.json", "control.json"];
/// Suffix of the folders snapshot backups create (`<time>.corvid-<database>-snapshot`).
pub const SNAPSHOT_FOLDER_SUFFIX: &str = "-snapshot";

/// The folder name of a snapshot of `database` taken at `at` (UTC).
pub fn snapshot_folder_name(database: &str, at: time::OffsetDateTime) -> String {
    let stamp = at.format(format_description!("[year]-[month]-[day]-[hour]-[minute]-[second]")).unwrap_or_default();
    let safe: String = database.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect();
    format!("{stamp}.corvid-{safe}{SNAPSHOT_FOLDER_SUFFIX}")
}

/// A folder under `destination` not used yet.
fn new_folder(destination: &Path, database: &str) -> Result<PathBuf, BackupError> {
    std::fs::create_dir_all(destination).map_err(BackupError::io(destination))?;
    let name = snapshot_folder_name(database, time::OffsetDateTime::now_utc());
    for attempt in 1.. {
        let folder = if attempt == 1 { destination.join(&name) } else { destination.join(format!("{name}-{attempt}")) };
        match std::fs::create_dir(&folder) {
            Ok(()) => return Ok(folder),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(BackupError::io(&folder)(e)),
        }
    }
    unreachable!("the attempts are unbounded")
}

/// Takes a snapshot of `db` into a new folder under `request.destination`.
pub(crate) fn take_snapshot(
    db: &Database,
    request: &BackupRequest,
    progress: &mut dyn FnMut(&str, u64),
) -> Result<BackupSummary, BackupError> {
    let started = Instant::now();
    let created_at = corvid_types::format_date(corvid_types::now_nanos());
    let folder = new_folder(&request.destination, db.name())?;
    let last_etag = db.store.read()?.last_etag()?;
    let mut relative = Vec::new();
    db.store.copy_snapshot(&folder, |path, bytes| {
        relative.push(path.to_owned());
        progress(path, bytes);
    })?;
    relative.extend(copy_index_definitions(&db.store.path().join("indexes"), &folder, progress)?);
    let mut files = Vec::with_capacity(relative.len());
    for path in relative {
        let (bytes, crc32) = checksum(&folder.join(&path))?;
        files.push(ManifestFile { path, bytes, crc32 });
    }
    let manifest = SnapshotManifest {
        format: SNAPSHOT_FORMAT.into(),
        manifest_version: MANIFEST_VERSION,
        corvid_version: env!("CARGO_PKG_VERSION").into(),
        storage_format: corvid_storage::FORMAT_VERSION,
        database_name: db.name().to_owned(),
        database_record: request.record.clone(),
        created_at,
        last_etag,
        files,
    };
    manifest.write(&folder)?;
    Ok(BackupSummary {
        kind: BackupKind::Snapshot,
        folder,
        files: manifest.files.len() as u64,
        bytes: manifest.files.iter().map(|f| f.bytes).sum(),
        last_etag,
        last_raft_index: 0,
        incremental: false,
        file: None,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Copies each index's definition and control files; returns their paths relative to `folder`.
fn copy_index_definitions(indexes: &Path, folder: &Path, progress: &mut dyn FnMut(&str, u64)) -> Result<Vec<String>, BackupError> {
    let mut copied = Vec::new();
    let entries = match std::fs::read_dir(indexes) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(copied),
        Err(e) => return Err(BackupError::io(indexes)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(BackupError::io(indexes))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        for file in INDEX_FILES {
            let source = entry.path().join(file);
            let target_dir = folder.join("indexes").join(&name);
            let target = target_dir.join(file);
            // An index deleted meanwhile (or one without a control file) is simply not there.
            let Ok(content) = std::fs::read(&source) else { continue };
            std::fs::create_dir_all(&target_dir).map_err(BackupError::io(&target_dir))?;
            std::fs::write(&target, &content).map_err(BackupError::io(&target))?;
            std::fs::File::open(&target).and_then(|f| f.sync_all()).map_err(BackupError::io(&target))?;
            let path = format!("indexes/{name}/{file}");
            progress(&path, content.len() as u64);
            copied.push(path);
        }
        let target_dir = folder.join("indexes").join(&name);
        if target_dir.exists() {
            corvid_storage::sync_dir(&target_dir)?;
        }
    }
    if folder.join("indexes").exists() {
        corvid_storage::sync_dir(&folder.join("indexes"))?;
    }
    Ok(copied)
}
