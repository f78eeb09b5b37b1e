//! The `idle-unloader` thread: closes databases idle for `Databases.MaxIdleTimeInSec` (the landlord decides
//! which, `Landlord::unload_idle`). What it did is in `/admin/metrics` (`IdleUnloading`) and the Prometheus
//! scrape (`corvid_databases_idle_unloads`).

use std::sync::Arc;
use std::time::Duration;

use crate::landlord::Landlord;

/// Starts the thread; it ends once the landlord starts closing. Nothing starts for a zero idle time.
pub fn start(landlord: Arc<Landlord>, max_idle: Duration) -> std::io::Result<()> {
    if max_idle.is_zero() {
        return Ok(());
    }
    // Often enough that a database closes within half its idle time more; at most every 10 s.
    let every = (max_idle / 2).clamp(Duration::from_millis(100), Duration::from_secs(10));
    std::thread::Builder::new().name("idle-unloader".into()).spawn(move || {
        while !landlord.is_closing() {
            std::thread::sleep(every);
            if landlord.is_closing() {
                break;
            }
            // A panic in one round (a database failing to close) must not stop unloading for good.
            let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| landlord.unload_idle(max_idle)));
            if round.is_err() {
                tracing::error!("idle unloading panicked; retrying next round");
            }
        }
    })?;
    Ok(())
}
