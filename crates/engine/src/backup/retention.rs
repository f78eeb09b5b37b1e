//! Retention of periodic backups: RavenDB's `MinimumBackupAgeToKeep` (a .NET TimeSpan) and the removal of
//! this database's older snapshot folders and dump backup folders (a full backup and its incrementals) in a
//! destination. The newest complete backup is always kept, and unfinished folders are left to the operator.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::dump_backup::{dump_folder_name, FULL_BACKUP_EXTENSION, INCREMENTAL_BACKUP_EXTENSION};
use super::error::BackupError;
use super::manifest::MANIFEST_FILE;
use super::snapshot::{snapshot_folder_name, SNAPSHOT_FOLDER_SUFFIX};

/// Parses a .NET TimeSpan as the clients send it (`corvid_types::parse_time_span`), with the error a backup
/// configuration answers.
pub fn parse_time_span(text: &str) -> Result<Duration, BackupError> {
    corvid_types::parse_time_span(text)
        .ok_or_else(|| BackupError::InvalidConfiguration(format!("'{text}' is not a TimeSpan ([d.]hh:mm:ss[.fffffff])")))
}

/// Removes the complete snapshot folders of `database` in `destination` older than `keep` (by the time in
/// their name), never the newest one. Returns the removed folders.
pub fn prune(destination: &Path, database: &str, keep: Duration, now: time::OffsetDateTime) -> Result<Vec<PathBuf>, BackupError> {
    // No backup can be older than an age beyond the calendar.
    let Some(cutoff) = time::Duration::try_from(keep).ok().and_then(|age| now.checked_sub(age)) else { return Ok(Vec::new()) };
    let cutoff_name = snapshot_folder_name(database, cutoff);
    // `<time>.corvid-<database>-snapshot[-n]`: the time sorts like the name.
    let own_suffix = snapshot_folder_name(database, now).split_once('.').map(|(_, s)| format!(".{s}")).unwrap_or_default();
    let ours: Vec<(String, String)> = std::fs::read_dir(destination)
        .map_err(BackupError::io(destination))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(&own_suffix) || name.contains(&format!("{own_suffix}-")))
        .filter(|name| name.contains(SNAPSHOT_FOLDER_SUFFIX) && destination.join(name).join(MANIFEST_FILE).is_file())
        .map(|name| {
            let stamp = name[..19].to_owned();
            (name, stamp)
        })
        .collect();
    remove_older_than(destination, ours, &cutoff_name[..19])
}

/// Removes the folders (name, time stamp of the newest backup it holds) of `destination` whose stamp is
/// before `cutoff_stamp`, never the newest folder by name (names start with their creation time). Returns
/// the removed folders.
fn remove_older_than(destination: &Path, mut folders: Vec<(String, String)>, cutoff_stamp: &str) -> Result<Vec<PathBuf>, BackupError> {
    folders.sort();
    folders.pop();
    let mut removed = Vec::new();
    for (name, stamp) in folders {
        if stamp.as_str() < cutoff_stamp {
            let path = destination.join(&name);
            std::fs::remove_dir_all(&path).map_err(BackupError::io(&path))?;
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Removes the dump backup folders of `database` in `destination` (`<time>.ravendb-<database>-A-backup`,
/// holding a complete full backup) whose newest backup file is older than `keep`, never the newest folder: a
/// folder goes only when no point it can restore to is young enough to keep. Returns the removed folders.
pub fn prune_dump_folders(
    destination: &Path,
    database: &str,
    keep: Duration,
    now: time::OffsetDateTime,
) -> Result<Vec<PathBuf>, BackupError> {
    let Some(cutoff) = time::Duration::try_from(keep).ok().and_then(|age| now.checked_sub(age)) else { return Ok(Vec::new()) };
    let cutoff_stamp = dump_folder_name(database, cutoff)[..19].to_owned();
    let own_suffix = dump_folder_name(database, now)[19..].to_owned();
    let mut ours: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(destination).map_err(BackupError::io(destination))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(&own_suffix) || name.contains(&format!("{own_suffix}-"))) || name.len() < 19 {
            continue;
        }
        // The backup files (`<time>.ravendb-full-backup`, `<time>.ravendb-incremental-backup`): a folder
        // without a finished full backup is not complete.
        let files: Vec<String> = std::fs::read_dir(entry.path())
            .map_err(BackupError::io(&entry.path()))?
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .filter(|f| f.len() >= 19 && (f.ends_with(FULL_BACKUP_EXTENSION) || f.ends_with(INCREMENTAL_BACKUP_EXTENSION)))
            .collect();
        if !files.iter().any(|f| f.ends_with(FULL_BACKUP_EXTENSION)) {
            continue;
        }
        let newest = files.iter().map(|f| f[..19].to_owned()).max().unwrap_or_default();
        ours.push((name, newest));
    }
    remove_older_than(destination, ours, &cutoff_stamp)
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn time_spans_parse_as_dotnet_writes_them() {
        assert_eq!(parse_time_span("00:01:00").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_time_span("1.02:00:00").unwrap(), Duration::from_secs(93_600));
        assert_eq!(parse_time_span("00:00:01.5000000").unwrap(), Duration::from_millis(1_500));
        assert!(parse_time_span("soon").is_err());
    }

    #[test]
    fn old_complete_backups_go_and_the_newest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let now = datetime!(2026-11-26 12:00 UTC);
        let make = |at, complete: bool| {
            let path = dir.path().join(snapshot_folder_name("db", at));
            std::fs::create_dir(&path).unwrap();
            if complete {
                std::fs::write(path.join(MANIFEST_FILE), b"{}").unwrap();
            }
            path
        };
        let old = make(datetime!(2026-11-20 00:00 UTC), true);
        let unfinished = make(datetime!(2026-11-21 00:00 UTC), false);
        let recent = make(datetime!(2026-11-26 11:00 UTC), true);
        let other = dir.path().join(snapshot_folder_name("dbx", datetime!(2026-11-01 00:00 UTC)));
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(MANIFEST_FILE), b"{}").unwrap();
        let removed = prune(dir.path(), "db", Duration::from_secs(86_400), now).unwrap();
        assert_eq!(removed, [old]);
        assert!(unfinished.exists() && recent.exists() && other.exists());
        assert!(prune(dir.path(), "db", Duration::ZERO, now).unwrap().is_empty(), "the newest stays");
    }

    #[test]
    fn dump_folders_go_when_their_newest_backup_is_old() {
        let dir = tempfile::tempdir().unwrap();
        let now = datetime!(2026-11-26 12:00 UTC);
        let folder = |at, files: &[&str]| {
            let path = dir.path().join(dump_folder_name("db", at));
            std::fs::create_dir(&path).unwrap();
            for file in files {
                std::fs::write(path.join(file), b"x").unwrap();
            }
            path
        };
        let old = folder(datetime!(2026-11-20 00:00 UTC), &["2026-11-20-00-00-00.ravendb-full-backup"]);
        // Its full backup is old, its last incremental young: a restore point worth keeping.
        let continued = folder(
            datetime!(2026-11-21 00:00 UTC),
            &["2026-11-21-00-00-00.ravendb-full-backup", "2026-11-26-06-00-00.ravendb-incremental-backup"],
        );
        let unfinished = folder(datetime!(2026-11-22 00:00 UTC), &["2026-11-22-00-00-00.ravendb-full-backup.in-progress"]);
        let newest = folder(datetime!(2026-11-26 11:00 UTC), &["2026-11-26-11-00-00.ravendb-full-backup"]);
        let removed = prune_dump_folders(dir.path(), "db", Duration::from_secs(86_400), now).unwrap();
        assert_eq!(removed, [old]);
        assert!(continued.exists() && unfinished.exists() && newest.exists());
        assert!(prune_dump_folders(dir.path(), "db", Duration::ZERO, now).unwrap().len() == 1, "all but the newest complete one");
        assert!(newest.exists() && unfinished.exists());
    }
}
