//! Restoring a snapshot backup into a new database directory: the folder is recognised (a RavenDB snapshot or
//! dump backup is refused with what to do instead, an unfinished backup as incomplete), every file is checked
//! against the manifest before anything is copied, and the copy is renamed into place once flushed, so an
//! interrupted restore never leaves a directory that looks like a database.

use std::path::{Path, PathBuf};

use super::error::BackupError;
use super::manifest::{SnapshotManifest, MANIFEST_FILE};
use super::snapshot::SNAPSHOT_FOLDER_SUFFIX;

/// Extensions of RavenDB's backup files.
const RAVENDB_SNAPSHOT_EXTENSION: &str = ".ravendb-snapshot";
const RAVENDB_DUMP_EXTENSIONS: [&str; 3] = [".ravendb-full-backup", ".ravendb-incremental-backup", ".ravendbdump"];

/// Progress of a restore: bytes checked and copied so far, of `total` (every file is read twice).
pub type RestoreProgress<'a> = &'a mut dyn FnMut(u64, u64);

fn file_names(folder: &Path) -> Result<Vec<(String, bool)>, BackupError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(BackupError::io(folder))? {
        let entry = entry.map_err(BackupError::io(folder))?;
        let is_dir = entry.file_type().map_err(BackupError::io(folder))?.is_dir();
        names.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    names.sort();
    Ok(names)
}

/// The snapshot folder to restore from `location`: the folder itself when it holds a manifest, else the
/// newest complete snapshot folder directly inside it (a periodic task's destination folder).
pub fn locate_snapshot(location: &Path) -> Result<PathBuf, BackupError> {
    if location.join(MANIFEST_FILE).is_file() {
        return Ok(location.to_owned());
    }
    if !location.is_dir() {
        return Err(BackupError::NotABackup { path: location.to_owned(), manifest: MANIFEST_FILE });
    }
    let names = file_names(location)?;
    if let Some((file, _)) = names.iter().find(|(name, _)| name.ends_with(RAVENDB_SNAPSHOT_EXTENSION)) {
        return Err(BackupError::RavenDbSnapshot { path: location.to_owned(), file: file.clone() });
    }
    if let Some((file, _)) = names.iter().find(|(name, _)| RAVENDB_DUMP_EXTENSIONS.iter().any(|ext| name.ends_with(ext))) {
        return Err(BackupError::DumpFormatNotYet { what: format!("Restoring '{file}'") });
    }
    // A snapshot's own folder (by its name or its data file) without a manifest: the backup was cut short.
    let own_folder = location.file_name().is_some_and(|n| n.to_string_lossy().ends_with(SNAPSHOT_FOLDER_SUFFIX));
    if own_folder || names.iter().any(|(name, _)| name == "data.mdb") {
        return Err(BackupError::Incomplete { path: location.to_owned(), manifest: MANIFEST_FILE });
    }
    let snapshots: Vec<&String> =
        names.iter().filter(|(name, is_dir)| *is_dir && name.ends_with(SNAPSHOT_FOLDER_SUFFIX)).map(|(n, _)| n).collect();
    // Folder names start with the time they were taken: the last complete one is the newest.
    if let Some(newest) = snapshots.iter().rev().find(|name| location.join(name).join(MANIFEST_FILE).is_file()) {
        return Ok(location.join(newest));
    }
    match snapshots.last() {
        Some(unfinished) => Err(BackupError::Incomplete { path: location.join(unfinished), manifest: MANIFEST_FILE }),
        None => Err(BackupError::NotABackup { path: location.to_owned(), manifest: MANIFEST_FILE }),
    }
}

/// Restores the snapshot at `location` into `target`, which must not exist yet. Returns the manifest (its
/// database record is the caller's to register).
pub fn restore_snapshot(location: &Path, target: &Path, progress: RestoreProgress<'_>) -> Result<SnapshotManifest, BackupError> {
    let folder = locate_snapshot(location)?;
    let manifest = SnapshotManifest::read(&folder)?;
    if manifest.storage_format > corvid_storage::FORMAT_VERSION {
        return Err(BackupError::UnsupportedVersion {
            path: folder,
            found: manifest.storage_format,
            supported: corvid_storage::FORMAT_VERSION,
        });
    }
    let total: u64 = manifest.files.iter().map(|f| f.bytes).sum::<u64>() * 2;
    let mut done = 0u64;
    manifest.verify(&folder, |bytes| {
        done += bytes;
        progress(done, total);
    })?;
    if target.exists() {
        return Err(BackupError::InvalidConfiguration(format!("The restore target '{}' already exists", target.display())));
    }
    let staging = target.with_extension("restoring");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(BackupError::io(&staging))?;
    }
    for file in &manifest.files {
        let destination = staging.join(&file.path);
        let parent = destination.parent().unwrap_or(&staging).to_owned();
        std::fs::create_dir_all(&parent).map_err(BackupError::io(&parent))?;
        std::fs::copy(folder.join(&file.path), &destination).map_err(BackupError::io(&destination))?;
        std::fs::File::open(&destination).and_then(|f| f.sync_all()).map_err(BackupError::io(&destination))?;
        done += file.bytes;
        progress(done, total);
    }
    sync_tree(&staging)?;
    std::fs::rename(&staging, target).map_err(BackupError::io(target))?;
    if let Some(parent) = target.parent() {
        corvid_storage::sync_dir(parent)?;
    }
    Ok(manifest)
}

/// Flushes every directory under `dir` (and itself), so the renames and new files in them are durable.
fn sync_tree(dir: &Path) -> Result<(), BackupError> {
    for entry in std::fs::read_dir(dir).map_err(BackupError::io(dir))? {
        let entry = entry.map_err(BackupError::io(dir))?;
        if entry.file_type().map_err(BackupError::io(dir))?.is_dir() {
            sync_tree(&entry.path())?;
        }
    }
    Ok(corvid_storage::sync_dir(dir)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ravendb_files_and_unfinished_backups_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2026-01-01.ravendb-snapshot"), b"x").unwrap();
        assert!(matches!(locate_snapshot(dir.path()), Err(BackupError::RavenDbSnapshot { .. })));
        let dump = tempfile::tempdir().unwrap();
        std::fs::write(dump.path().join("a.ravendb-full-backup"), b"x").unwrap();
        assert!(matches!(locate_snapshot(dump.path()), Err(BackupError::DumpFormatNotYet { .. })));
        let unfinished = tempfile::tempdir().unwrap();
        std::fs::write(unfinished.path().join("data.mdb"), b"x").unwrap();
        assert!(matches!(locate_snapshot(unfinished.path()), Err(BackupError::Incomplete { .. })));
        let parent = tempfile::tempdir().unwrap();
        std::fs::create_dir(parent.path().join("2026-01-01-00-00-00.corvid-db-snapshot")).unwrap();
        assert!(matches!(locate_snapshot(parent.path()), Err(BackupError::Incomplete { .. })));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(locate_snapshot(empty.path()), Err(BackupError::NotABackup { .. })));
    }
}
