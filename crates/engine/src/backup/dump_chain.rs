//! Restoring dump backups: the chain of files in a backup folder (the last full backup and the incrementals
//! after it, in RavenDB's order: by name without extension, a full one before an incremental one of the same
//! name), cut after `LastFileNameToRestore`, replayed in order into a database. As RavenDB does, every file
//! but the last is imported without indexes and subscriptions (the last one has the definitions at the
//! restore point), tombstones are applied, and no revision is created by the import.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::dump_backup::{FULL_BACKUP_EXTENSION, INCREMENTAL_BACKUP_EXTENSION, IN_PROGRESS_SUFFIX};
use super::error::BackupError;
use crate::smuggler::{self, ImportOptions, ItemType, ItemTypes, SmugglerResult};
use crate::{Database, EngineError};

/// RavenDB's older names of the two kinds of file.
const LEGACY_FULL: &str = ".ravendb-full-dump";
const LEGACY_INCREMENTAL: &str = ".ravendb-incremental-dump";

/// Whether `name` is a full (Some(true)) or incremental (Some(false)) dump backup file.
pub(super) fn kind_of(name: &str) -> Option<bool> {
    if name.ends_with(FULL_BACKUP_EXTENSION) || name.ends_with(LEGACY_FULL) {
        Some(true)
    } else if name.ends_with(INCREMENTAL_BACKUP_EXTENSION) || name.ends_with(LEGACY_INCREMENTAL) {
        Some(false)
    } else {
        None
    }
}

/// The name without its extension (`2026-11-26-14-05-09`), which orders the chain.
pub(super) fn stem(name: &str) -> &str {
    name.split_once('.').map_or(name, |(stem, _)| stem)
}

/// Dump backup files directly in `folder`, in restore order: (name, is full).
fn dump_files(folder: &Path) -> Result<Vec<(String, bool)>, BackupError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(BackupError::io(folder))? {
        let entry = entry.map_err(BackupError::io(folder))?;
        if !entry.file_type().map_err(BackupError::io(folder))?.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(full) = kind_of(&name) {
            files.push((name, full));
        }
    }
    files.sort_by(|(a, a_full), (b, b_full)| stem(a).cmp(stem(b)).then(b_full.cmp(a_full)).then(a.cmp(b)));
    Ok(files)
}

/// A dump backup file still being written (or cut short) directly in `folder`.
fn unfinished_file(folder: &Path) -> Result<Option<String>, BackupError> {
    for entry in std::fs::read_dir(folder).map_err(BackupError::io(folder))? {
        let name = entry.map_err(BackupError::io(folder))?.file_name().to_string_lossy().into_owned();
        if name.strip_suffix(IN_PROGRESS_SUFFIX).is_some_and(|n| kind_of(n).is_some()) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// The newest backup folder directly under `location` holding a full dump backup (a task's destination).
fn newest_backup_folder(location: &Path) -> Result<Option<PathBuf>, BackupError> {
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(location).map_err(BackupError::io(location))? {
        let entry = entry.map_err(BackupError::io(location))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().map_err(BackupError::io(location))?.is_dir() && name.contains("-backup") {
            folders.push(name);
        }
    }
    folders.sort();
    for name in folders.iter().rev() {
        let folder = location.join(name);
        if dump_files(&folder)?.iter().any(|(_, full)| *full) {
            return Ok(Some(folder));
        }
    }
    Ok(None)
}

/// The files to restore from `location` (a backup folder, or a destination holding backup folders: its
/// newest), the last full backup first; None when it holds no dump backup (it may hold a snapshot).
pub fn locate_dump_chain(location: &Path, last_file: Option<&str>) -> Result<Option<Vec<PathBuf>>, BackupError> {
    if !location.is_dir() {
        return Ok(None);
    }
    let mut folder = location.to_owned();
    let mut files = dump_files(&folder)?;
    if let Some(unfinished) = files.is_empty().then(|| unfinished_file(location)).transpose()?.flatten() {
        return Err(BackupError::InvalidConfiguration(format!(
            "'{}' holds only an unfinished backup ({unfinished}): the backup was interrupted; it cannot be restored",
            location.display()
        )));
    }
    if files.is_empty() {
        match newest_backup_folder(location)? {
            Some(newest) => {
                files = dump_files(&newest)?;
                folder = newest;
            }
            None => return Ok(None),
        }
    }
    if let Some(last) = last_file.filter(|l| !l.is_empty()) {
        let position = files.iter().position(|(name, _)| name == last || stem(name) == last).ok_or_else(|| {
            BackupError::InvalidConfiguration(format!("LastFileNameToRestore '{last}' is not a backup file in '{}'", folder.display()))
        })?;
        files.truncate(position + 1);
    }
    let start = files.iter().rposition(|(_, full)| *full).ok_or_else(|| {
        BackupError::InvalidConfiguration(format!(
            "'{}' holds incremental backups without the full backup they follow; it cannot be restored",
            folder.display()
        ))
    })?;
    Ok(Some(files[start..].iter().map(|(name, _)| folder.join(name)).collect()))
}

/// What a file of the chain is imported with.
fn options_for(last: bool, skip_indexes: bool) -> ImportOptions {
    let mut types = ItemTypes::default_types().with(ItemType::Tombstones);
    if !last {
        types = types.without(ItemType::Indexes).without(ItemType::Subscriptions);
    }
    if skip_indexes {
        types = types.without(ItemType::Indexes);
    }
    ImportOptions { types, skip_revision_creation: true, replay: true, ..ImportOptions::default() }
}

/// Replays `files` (from [`locate_dump_chain`]) into `db` in order; `progress` hears each file's counts
/// (false stops the restore). Returns each file's name and counts.
pub fn replay_dump_chain(
    db: &Database,
    files: &[PathBuf],
    skip_indexes: bool,
    progress: &mut dyn FnMut(&str, &SmugglerResult) -> bool,
) -> Result<Vec<(String, SmugglerResult)>, BackupError> {
    let mut results = Vec::with_capacity(files.len());
    for (i, path) in files.iter().enumerate() {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let options = options_for(i + 1 == files.len(), skip_indexes);
        let file = File::open(path).map_err(BackupError::io(path))?;
        let result = smuggler::import(db, &options, file, &mut |so_far| progress(&name, so_far)).map_err(|e| BackupError::Dump {
            path: path.clone(),
            reason: e.to_string(),
            user_fault: matches!(e, EngineError::BadRequest(_)),
        })?;
        results.push((name, result));
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_starts_at_the_last_full_backup_and_stops_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "2026-01-01-00-00-00.ravendb-full-backup",
            "2026-01-02-00-00-00.ravendb-incremental-backup",
            "2026-01-03-00-00-00.ravendb-full-backup",
            "2026-01-03-00-00-00.ravendb-incremental-backup",
            "2026-01-04-00-00-00.ravendb-incremental-backup",
            "2026-01-05-00-00-00.ravendb-incremental-backup.in-progress",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names =
            |chain: Vec<PathBuf>| -> Vec<String> { chain.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect() };
        let chain = locate_dump_chain(dir.path(), None).unwrap().unwrap();
        assert_eq!(
            names(chain),
            [
                "2026-01-03-00-00-00.ravendb-full-backup",
                "2026-01-03-00-00-00.ravendb-incremental-backup",
                "2026-01-04-00-00-00.ravendb-incremental-backup"
            ]
        );
        let cut = locate_dump_chain(dir.path(), Some("2026-01-02-00-00-00.ravendb-incremental-backup")).unwrap().unwrap();
        assert_eq!(names(cut), ["2026-01-01-00-00-00.ravendb-full-backup", "2026-01-02-00-00-00.ravendb-incremental-backup"]);
        assert!(locate_dump_chain(dir.path(), Some("nope")).is_err());

        let parent = tempfile::tempdir().unwrap();
        let folder = parent.path().join("2026-01-01-00-00-00.ravendb-db-A-backup");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("2026-01-01-00-00-00.ravendb-full-backup"), b"").unwrap();
        assert_eq!(locate_dump_chain(parent.path(), None).unwrap().unwrap(), [folder.join("2026-01-01-00-00-00.ravendb-full-backup")]);
        let orphans = tempfile::tempdir().unwrap();
        std::fs::write(orphans.path().join("2026-01-02-00-00-00.ravendb-incremental-backup"), b"").unwrap();
        assert!(locate_dump_chain(orphans.path(), None).is_err());
        let cut_short = tempfile::tempdir().unwrap();
        std::fs::write(cut_short.path().join("2026-01-02-00-00-00.ravendb-full-backup.in-progress"), b"").unwrap();
        assert!(locate_dump_chain(cut_short.path(), None).unwrap_err().to_string().contains("interrupted"));
        assert!(locate_dump_chain(tempfile::tempdir().unwrap().path(), None).unwrap().is_none());
    }
}
