//! Where every log line goes: stderr (as always), the log files when a directory is configured
//! (`log_files.rs`), and the live watchers of `/admin/logs/watch`. tracing's lines and the request log's
//! both come through here (the binary gives tracing a [`SinkWriter`]), so each reads as one log.
//! The sink is process-wide, as logging is.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::broadcast;

use super::log_files::{LogFileSettings, LogFiles};

/// Lines a slow watcher may fall behind before it misses some (it is told how many).
const WATCH_BACKLOG: usize = 4096;

/// Changes the level of tracing's filter (installed by the binary, which owns the subscriber).
pub type LevelControl = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The process's log sink.
pub struct LogSink {
    files: Mutex<Option<LogFiles>>,
    settings: Mutex<LogFileSettings>,
    json: AtomicBool,
    watchers: broadcast::Sender<Arc<str>>,
    level: Mutex<String>,
    level_control: OnceLock<LevelControl>,
}

/// The process's log sink.
pub fn sink() -> &'static LogSink {
    static SINK: OnceLock<LogSink> = OnceLock::new();
    SINK.get_or_init(|| LogSink {
        files: Mutex::new(None),
        settings: Mutex::new(LogFileSettings::default()),
        json: AtomicBool::new(false),
        watchers: broadcast::channel(WATCH_BACKLOG).0,
        level: Mutex::new("info".into()),
        level_control: OnceLock::new(),
    })
}

impl LogSink {
    /// Starts (or stops, without a path) writing log files.
    pub fn configure_files(&self, settings: LogFileSettings) -> std::io::Result<()> {
        let files = if settings.path.is_some() { Some(LogFiles::open(settings.clone())?) } else { None };
        self.json.store(settings.json, Ordering::Relaxed);
        *self.files.lock() = files;
        *self.settings.lock() = settings;
        Ok(())
    }

    /// The file settings in force.
    pub fn file_settings(&self) -> LogFileSettings {
        self.settings.lock().clone()
    }

    /// Installs the control of tracing's level, with the level it starts at.
    pub fn set_level_control(&self, initial: &str, control: LevelControl) {
        *self.level.lock() = initial.to_owned();
        let _ = self.level_control.set(control);
    }

    /// The level (tracing filter) in force.
    pub fn level(&self) -> String {
        self.level.lock().clone()
    }

    /// Changes the level (a tracing filter such as `debug` or `info,corvid_engine=trace`).
    pub fn set_level(&self, filter: &str) -> Result<(), String> {
        let control = self.level_control.get().ok_or("the log level cannot be changed in this process")?;
        control(filter)?;
        *self.level.lock() = filter.to_owned();
        Ok(())
    }

    /// A receiver of every line written from now on.
    pub fn watch(&self) -> broadcast::Receiver<Arc<str>> {
        self.watchers.subscribe()
    }

    /// Writes complete lines of text (`<time> <LEVEL> <message>`).
    pub fn write(&self, text: &[u8]) {
        let _ = std::io::stderr().write_all(text);
        let watched = self.watchers.receiver_count() > 0;
        let mut files = self.files.lock();
        if files.is_none() && !watched {
            return;
        }
        let json = self.json.load(Ordering::Relaxed);
        let mut out = Vec::with_capacity(text.len());
        for line in String::from_utf8_lossy(text).lines().filter(|l| !l.is_empty()) {
            if json {
                out.extend_from_slice(json_line(line).as_bytes());
            } else {
                out.extend_from_slice(line.as_bytes());
            }
            out.push(b'\n');
            if watched {
                let _ = self.watchers.send(Arc::from(line));
            }
        }
        if let Some(files) = files.as_mut() {
            if let Err(e) = files.write_lines(&out) {
                let _ = writeln!(std::io::stderr(), "writing the log file in {} failed: {e}", files.dir().display());
            }
        }
    }
}

/// A text line as a JSON line: `{"Time", "Level", "Message"}`.
fn json_line(line: &str) -> String {
    let mut parts = line.trim_start().splitn(2, char::is_whitespace);
    let time = parts.next().unwrap_or_default();
    let rest = parts.next().unwrap_or_default().trim_start();
    let (level, message) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    json!({"Time": time, "Level": level, "Message": message.trim_start()}).to_string()
}

/// A `Write` into the sink, for tracing's formatter and the request log.
#[derive(Debug, Clone, Copy, Default)]
pub struct SinkWriter;

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sink().write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_become_json_lines() {
        let line = "2026-11-26T11:17:20.123456Z  INFO Request #   1: GET -     3 ms - 200 - /build/version";
        let value: serde_json::Value = serde_json::from_str(&json_line(line)).expect("json");
        assert_eq!(value["Time"], "2026-11-26T11:17:20.123456Z");
        assert_eq!(value["Level"], "INFO");
        assert_eq!(value["Message"], "Request #   1: GET -     3 ms - 200 - /build/version");
    }
}
