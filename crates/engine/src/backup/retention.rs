//! Retention of periodic snapshot backups: RavenDB's `MinimumBackupAgeToKeep` (a .NET TimeSpan) and the
//! removal of this database's older snapshot folders in a destination. The newest complete backup is always
//! kept, and unfinished folders are left to the operator.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::BackupError;
use super::manifest::MANIFEST_FILE;
use super::snapshot::{snapshot_folder_name, SNAPSHOT_FOLDER_SUFFIX};

/// Parses a .NET TimeSpan as the clients send it: `[d.]hh:mm:ss[.fffffff]`.
pub fn parse_time_span(text: &str) -> Result<Duration, BackupError> {
    let invalid = || BackupError::InvalidConfiguration(format!("'{text}' is not a TimeSpan ([d.]hh:mm:ss[.fffffff])"));
    let (days, rest) = match text.split_once(':').map(|(head, _)| head.contains('.')) {
        Some(true) => {
            let (d, rest) = text.split_once('.').ok_or_else(invalid)?;
            (d.parse::<u64>().map_err(|_| invalid())?, rest)
        }
        _ => (0, text),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let [h, m, s] = parts[..] else { return Err(invalid()) };
    let (s, fraction) = s.split_once('.').unwrap_or((s, ""));
    let number = |t: &str| t.parse::<u64>().map_err(|_| invalid());
    let nanos = if fraction.is_empty() { 0 } else { format!("{fraction:0<9}")[..9].parse::<u64>().map_err(|_| invalid())? };
    Ok(Duration::from_secs(days * 86_400 + number(h)? * 3_600 + number(m)? * 60 + number(s)?) + Duration::from_nanos(nanos))
}

/// Removes the complete snapshot folders of `database` in `destination` older than `keep` (by the time in
/// their name), never the newest one. Returns the removed folders.
pub fn prune(destination: &Path, database: &str, keep: Duration, now: time::OffsetDateTime) -> Result<Vec<PathBuf>, BackupError> {
    // No backup can be older than an age beyond the calendar.
    let Some(cutoff) = time::Duration::try_from(keep).ok().and_then(|age| now.checked_sub(age)) else { return Ok(Vec::new()) };
    let cutoff_name = snapshot_folder_name(database, cutoff);
    // `<time>.corvid-<database>-snapshot[-n]`: the time sorts like the name.
    let own_suffix = snapshot_folder_name(database, now).split_once('.').map(|(_, s)| format!(".{s}")).unwrap_or_default();
    let mut ours: Vec<String> = std::fs::read_dir(destination)
        .map_err(BackupError::io(destination))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(&own_suffix) || name.contains(&format!("{own_suffix}-")))
        .filter(|name| name.contains(SNAPSHOT_FOLDER_SUFFIX) && destination.join(name).join(MANIFEST_FILE).is_file())
        .collect();
    ours.sort();
    ours.pop();
    let mut removed = Vec::new();
    for name in ours {
        if name[..19] < cutoff_name[..19] {
            let path = destination.join(&name);
            std::fs::remove_dir_all(&path).map_err(BackupError::io(&path))?;
            removed.push(path);
        }
    }
    Ok(removed)
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
}
