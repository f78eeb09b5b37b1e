//! Dump-format backups (`BackupType: Backup`), laid out as RavenDB lays them out: a full backup starts a
//! folder `<yyyy-MM-dd-HH-mm-ss>.ravendb-<database>-A-backup` holding `<time>.ravendb-full-backup`; each
//! incremental backup adds `<time>.ravendb-incremental-backup` to the folder of the last full one, holding
//! what changed since the previous backup (documents with their attachments, revisions and tombstones
//! above its etag; counters, compare-exchange values, identities, indexes and subscriptions whole).
//!
//! A file is written under `<name>.in-progress`, flushed to disk, renamed and its folder flushed, so a
//! backup cut short (a crash, kill -9) never leaves a file that looks complete: restore ignores the
//! temporary name and the next backup writes a new file.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use time::macros::format_description;

use super::error::BackupError;
use super::summary::{BackupKind, BackupRequest, BackupSummary};
use crate::smuggler::{self, Compression, ExportOptions, ItemType, ItemTypes};
use crate::Database;

/// A full dump backup's file extension.
pub const FULL_BACKUP_EXTENSION: &str = ".ravendb-full-backup";
/// An incremental dump backup's file extension.
pub const INCREMENTAL_BACKUP_EXTENSION: &str = ".ravendb-incremental-backup";
/// What a file being written is called until it is complete.
pub(crate) const IN_PROGRESS_SUFFIX: &str = ".in-progress";
/// The node tag in folder names (Corvid is one node, `A`).
const NODE_TAG: &str = "A";
/// Buffer of the backup file's writer.
const WRITE_BUFFER: usize = 256 * 1024;

fn stamp(at: time::OffsetDateTime) -> String {
    at.format(format_description!("[year]-[month]-[day]-[hour]-[minute]-[second]")).unwrap_or_default()
}

fn safe_name(database: &str) -> String {
    database.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect()
}

/// The folder a full dump backup of `database` taken at `at` (UTC) starts.
pub fn dump_folder_name(database: &str, at: time::OffsetDateTime) -> String {
    format!("{}.ravendb-{}-{NODE_TAG}-backup", stamp(at), safe_name(database))
}

/// A new folder under `destination` for a full backup.
fn new_folder(destination: &Path, database: &str, at: time::OffsetDateTime) -> Result<PathBuf, BackupError> {
    std::fs::create_dir_all(destination).map_err(BackupError::io(destination))?;
    let name = dump_folder_name(database, at);
    for attempt in 1.. {
        let folder = if attempt == 1 { destination.join(&name) } else { destination.join(format!("{name}-{attempt}")) };
        match std::fs::create_dir(&folder) {
            Ok(()) => {
                corvid_storage::sync_dir(destination)?;
                return Ok(folder);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(BackupError::io(&folder)(e)),
        }
    }
    unreachable!("the attempts are unbounded")
}

/// A file name in `folder` not used yet (two backups in one second get `-2`, `-3`, which sort after).
fn new_file_name(folder: &Path, at: time::OffsetDateTime, extension: &str) -> String {
    let base = stamp(at);
    (1..)
        .map(|attempt| if attempt == 1 { format!("{base}{extension}") } else { format!("{base}-{attempt}{extension}") })
        .find(|name| !folder.join(name).exists() && !folder.join(format!("{name}{IN_PROGRESS_SUFFIX}")).exists())
        .unwrap_or_default()
}

/// The item types a dump backup holds: the clients' defaults with tombstones and artificial documents.
fn backup_options(after_etag: u64) -> ExportOptions {
    ExportOptions {
        types: ItemTypes::default_types().with(ItemType::Tombstones),
        collections: Vec::new(),
        include_artificial: true,
        compression: Compression::Zstd,
        after_etag,
        time_series_config: None,
        transform: None,
    }
}

/// Writes one full or incremental dump backup of `db`.
pub(crate) fn write_dump_backup(
    db: &Database,
    request: &BackupRequest,
    progress: &mut dyn FnMut(&str, u64),
) -> Result<BackupSummary, BackupError> {
    let started = Instant::now();
    let now = time::OffsetDateTime::now_utc();
    let (folder, extension, after_etag) = match (&request.previous, request.incremental) {
        (Some(previous), true) => {
            if !previous.folder.is_dir() {
                return Err(BackupError::InvalidConfiguration(format!(
                    "The folder of the previous backup, '{}', is gone: run a full backup",
                    previous.folder.display()
                )));
            }
            (previous.folder.clone(), INCREMENTAL_BACKUP_EXTENSION, previous.last_etag)
        }
        (None, true) => return Err(BackupError::InvalidConfiguration("An incremental backup needs a previous backup of the task".into())),
        (_, false) => (new_folder(&request.destination, db.name(), now)?, FULL_BACKUP_EXTENSION, 0),
    };
    let name = new_file_name(&folder, now, extension);
    let target = folder.join(&name);
    let temporary = folder.join(format!("{name}{IN_PROGRESS_SUFFIX}"));
    let written = write_file(db, &backup_options(after_etag), &temporary);
    let result = match written {
        Ok(result) => result,
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
    };
    std::fs::rename(&temporary, &target).map_err(BackupError::io(&target))?;
    corvid_storage::sync_dir(&folder)?;
    let bytes = std::fs::metadata(&target).map_err(BackupError::io(&target))?.len();
    progress(&name, bytes);
    Ok(BackupSummary {
        kind: BackupKind::Backup,
        folder,
        files: 1,
        bytes,
        last_etag: result.last_etag,
        last_raft_index: result.last_raft_index,
        incremental: request.incremental,
        file: Some(name),
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Exports into `path` and flushes it to disk.
fn write_file(db: &Database, options: &ExportOptions, path: &Path) -> Result<smuggler::SmugglerResult, BackupError> {
    let file = File::create(path).map_err(BackupError::io(path))?;
    let (result, out) = smuggler::export(db, options, BufWriter::with_capacity(WRITE_BUFFER, file), &mut |_| true)
        .map_err(|e| BackupError::Dump { path: path.to_owned(), reason: e.to_string(), user_fault: false })?;
    let file = out.into_inner().map_err(|e| BackupError::io(path)(e.into_error()))?;
    file.sync_all().map_err(BackupError::io(path))?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn names_follow_ravendb() {
        let at = datetime!(2026-11-26 14:05:09 UTC);
        assert_eq!(dump_folder_name("Shop/EU", at), "2026-11-26-14-05-09.ravendb-Shop_EU-A-backup");
        let dir = tempfile::tempdir().unwrap();
        let first = new_file_name(dir.path(), at, FULL_BACKUP_EXTENSION);
        assert_eq!(first, "2026-11-26-14-05-09.ravendb-full-backup");
        std::fs::write(dir.path().join(&first), b"").unwrap();
        assert_eq!(new_file_name(dir.path(), at, FULL_BACKUP_EXTENSION), "2026-11-26-14-05-09-2.ravendb-full-backup");
    }
}
