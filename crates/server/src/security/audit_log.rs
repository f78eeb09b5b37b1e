//! The audit log (`Security.AuditLog.FolderPath`): one line per authenticated connection and per
//! administrative request, with the certificate's thumbprint, appended to `<folder>/audit.log` by the
//! `audit-log` thread (requests never wait for the disk). Its counters are in `/admin/metrics`.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

/// What the audit thread has done, for `/admin/metrics`.
#[derive(Debug, Default)]
pub struct AuditStats {
    pub lines_written: AtomicU64,
    pub write_errors: AtomicU64,
}

/// The sending end of the audit log.
pub struct AuditLog {
    lines: mpsc::Sender<String>,
    pub stats: Arc<AuditStats>,
}

impl AuditLog {
    /// Opens (creating) `<folder>/audit.log` for appending and starts its writer thread.
    pub fn start(folder: &Path) -> std::io::Result<AuditLog> {
        std::fs::create_dir_all(folder)?;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(folder.join("audit.log"))?;
        let (lines, receiver) = mpsc::channel::<String>();
        let stats = Arc::new(AuditStats::default());
        let counters = stats.clone();
        std::thread::Builder::new().name("audit-log".into()).spawn(move || {
            for line in receiver {
                let written = file.write_all(line.as_bytes()).and_then(|()| file.flush());
                let counter = if written.is_ok() { &counters.lines_written } else { &counters.write_errors };
                counter.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        Ok(AuditLog { lines, stats })
    }

    /// Appends `<time> <thumbprint> <who>: <what>`.
    pub fn record(&self, thumbprint: &str, who: &str, what: &str) {
        let now = corvid_types::format_date(corvid_types::now_nanos());
        let _ = self.lines.send(format!("{now} {thumbprint} {who}: {what}\n"));
    }
}
