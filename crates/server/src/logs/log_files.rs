//! Log files with size- and age-based retention: lines go to `corvid-<date>.<n>.log` (`.jsonl` for JSON
//! lines) in the configured directory; a file that reaches the largest file size, or a new day, starts the
//! next file, and then the oldest files go while the directory holds more than the retention size or while
//! they are older than the retention time.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where and how long log files are kept (RavenDB's `Logs.Path`, `Logs.RetentionSizeInMb`,
/// `Logs.RetentionTimeInHrs`, `Logs.MaxFileSizeInMb`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFileSettings {
    /// The directory of the log files; `None`: no files, the log goes to stderr only.
    pub path: Option<PathBuf>,
    /// The files together are kept under this many bytes (the file being written included).
    pub retention_bytes: u64,
    /// Files last written longer ago than this are removed.
    pub retention_time: Duration,
    /// A file is closed and the next one started once it holds this many bytes.
    pub max_file_bytes: u64,
    /// Write JSON lines (`{"Time", "Level", "Message"}`) instead of text lines.
    pub json: bool,
}

impl Default for LogFileSettings {
    /// RavenDB's defaults: 1 GiB, three days, files of 128 MiB.
    fn default() -> Self {
        LogFileSettings {
            path: None,
            retention_bytes: 1 << 30,
            retention_time: Duration::from_secs(3 * 24 * 3600),
            max_file_bytes: 128 << 20,
            json: false,
        }
    }
}

const PREFIX: &str = "corvid-";

/// The log file being written and the rules for the ones before it.
pub struct LogFiles {
    dir: PathBuf,
    settings: LogFileSettings,
    file: File,
    name: String,
    written: u64,
    day: String,
}

fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!("{:04}-{:02}-{:02}", now.year(), u8::from(now.month()), now.day())
}

impl LogFiles {
    /// Opens the next log file in `settings.path` (creating the directory) and applies the retention.
    pub fn open(settings: LogFileSettings) -> std::io::Result<LogFiles> {
        let dir = settings.path.clone().ok_or_else(|| std::io::Error::other("no log directory"))?;
        std::fs::create_dir_all(&dir)?;
        let day = today();
        let (file, name) = next_file(&dir, &day, settings.json)?;
        let mut files = LogFiles { dir, settings, file, name, written: 0, day };
        files.apply_retention();
        Ok(files)
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends complete lines, starting the next file first when this one is full or from another day.
    pub fn write_lines(&mut self, lines: &[u8]) -> std::io::Result<()> {
        let day = today();
        if self.written > 0 && (self.written + lines.len() as u64 > self.settings.max_file_bytes || day != self.day) {
            let (file, name) = next_file(&self.dir, &day, self.settings.json)?;
            (self.file, self.name, self.written, self.day) = (file, name, 0, day);
            self.apply_retention();
        }
        self.file.write_all(lines)?;
        self.written += lines.len() as u64;
        Ok(())
    }

    /// Removes the files older than the retention time, then the oldest ones while all of them together
    /// hold more than the retention size. The file being written stays.
    pub fn apply_retention(&mut self) {
        let mut files = log_files(&self.dir);
        let now = SystemTime::now();
        files.retain(|(path, modified, _)| {
            let current = path.file_name().and_then(|n| n.to_str()) == Some(self.name.as_str());
            let expired = now.duration_since(*modified).is_ok_and(|age| age > self.settings.retention_time);
            if expired && !current {
                let _ = std::fs::remove_file(path);
                return false;
            }
            true
        });
        let mut total: u64 = files.iter().map(|(_, _, size)| size).sum();
        // Checked when a file starts: the directory holds at most the retention size plus the file being written.
        for (path, _, size) in files {
            if total <= self.settings.retention_bytes {
                break;
            }
            if path.file_name().and_then(|n| n.to_str()) == Some(self.name.as_str()) {
                continue;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }
}

/// The log files of `dir`, oldest first (by name: the date, then the sequence number).
fn log_files(dir: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let mut files: Vec<(PathBuf, SystemTime, u64)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(PREFIX) && (n.ends_with(".log") || n.ends_with(".jsonl"))))
                .filter_map(|e| {
                    let meta = e.metadata().ok()?;
                    Some((e.path(), meta.modified().ok()?, meta.len()))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort_by_key(|(path, _, _)| sequence_key(path));
    files
}

/// `corvid-2026-11-26.7.log` orders as ("2026-11-26", 7).
fn sequence_key(path: &Path) -> (String, u64) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stem = name.trim_start_matches(PREFIX).trim_end_matches(".jsonl").trim_end_matches(".log");
    match stem.rsplit_once('.') {
        Some((day, n)) => (day.to_owned(), n.parse().unwrap_or(0)),
        None => (stem.to_owned(), 0),
    }
}

/// Creates the first unused `corvid-<day>.<n>` file.
fn next_file(dir: &Path, day: &str, json: bool) -> std::io::Result<(File, String)> {
    let extension = if json { "jsonl" } else { "log" };
    let taken = log_files(dir).into_iter().filter(|(p, _, _)| sequence_key(p).0 == day).map(|(p, _, _)| sequence_key(&p).1).max();
    let mut n = taken.map_or(1, |n| n + 1);
    loop {
        let name = format!("{PREFIX}{day}.{n}.{extension}");
        match OpenOptions::new().create_new(true).append(true).open(dir.join(&name)) {
            Ok(file) => return Ok((file, name)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &Path, retention_bytes: u64, max_file_bytes: u64) -> LogFileSettings {
        LogFileSettings { path: Some(dir.to_owned()), retention_bytes, max_file_bytes, ..LogFileSettings::default() }
    }

    #[test]
    fn full_files_roll_and_the_oldest_go_past_the_retention_size() {
        let dir = std::env::temp_dir().join(format!("corvid-log-files-{}", corvid_types::now_nanos()));
        let mut files = LogFiles::open(settings(&dir, 300, 100)).expect("open");
        for _ in 0..20 {
            files.write_lines(&[b'x'; 49].iter().copied().chain([b'\n']).collect::<Vec<u8>>()).expect("write");
        }
        let kept = log_files(&dir);
        let total: u64 = kept.iter().map(|(_, _, size)| size).sum();
        // The retention size, plus the current file filling up.
        assert!(total <= 300 + 100, "{total} bytes kept");
        assert!(kept.len() >= 3, "{kept:?}");
        // The newest files are the ones kept.
        assert_eq!(sequence_key(&kept.last().expect("a file").0).1, 10);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_past_the_retention_time_go() {
        let dir = std::env::temp_dir().join(format!("corvid-log-age-{}", corvid_types::now_nanos()));
        std::fs::create_dir_all(&dir).expect("dir");
        let old = dir.join("corvid-2020-01-01.1.log");
        std::fs::write(&old, "old\n").expect("old file");
        let file = File::options().write(true).open(&old).expect("open old");
        file.set_modified(SystemTime::now() - Duration::from_secs(3600)).expect("age it");
        drop(file);
        let mut rules = settings(&dir, 1 << 20, 1 << 20);
        rules.retention_time = Duration::from_secs(60);
        let _files = LogFiles::open(rules).expect("open");
        assert!(!old.exists());
        assert_eq!(log_files(&dir).len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
