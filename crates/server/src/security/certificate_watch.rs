//! Reloads the server's certificate when its file changes (a renewed certificate is served without a
//! restart): the `certificate-watch` thread compares the files' modification times every few seconds.
//! What it did is in `/admin/metrics` (`Security`).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use super::server_security::ServerSecurity;

/// How often the files are looked at.
const POLL_EVERY: Duration = Duration::from_secs(2);

/// Starts watching; the thread ends once the server's security state is dropped.
pub fn start(security: &Arc<ServerSecurity>) -> std::io::Result<()> {
    let weak: Weak<ServerSecurity> = Arc::downgrade(security);
    let files: Vec<PathBuf> = std::iter::once(security.source.path.clone()).chain(security.source.key_path.clone()).collect();
    let mut seen = modified(&files);
    std::thread::Builder::new().name("certificate-watch".into()).spawn(move || loop {
        std::thread::sleep(POLL_EVERY);
        let Some(security) = weak.upgrade() else { return };
        let now = modified(&files);
        if now == seen {
            continue;
        }
        seen = now;
        // A failure is counted and logged; the certificate loaded before stays in use.
        let _ = reload(&security, "its file changed");
    })?;
    Ok(())
}

/// Reloads the certificate now; the new thumbprint, or why it failed.
pub fn reload(security: &ServerSecurity, why: &str) -> Result<String, String> {
    match security.reload() {
        Ok(certificate) => {
            security.reload_stats.reloads.fetch_add(1, Ordering::Relaxed);
            tracing::info!(thumbprint = %certificate.thumbprint, "reloaded the server certificate ({why})");
            Ok(certificate.thumbprint.clone())
        }
        Err(e) => {
            security.reload_stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "could not reload the server certificate ({why}); the one loaded before stays in use");
            Err(e)
        }
    }
}

fn modified(files: &[PathBuf]) -> Vec<Option<SystemTime>> {
    files.iter().map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok()).collect()
}
