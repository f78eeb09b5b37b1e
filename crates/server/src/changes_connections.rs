//! The Changes API websockets open now, by connection id: what `GET /databases/{db}/changes/debug` lists
//! and what `DELETE /databases/{db}/changes?id=` drops. Each connection registers itself for as long as
//! it runs and keeps its watches and counters here, so the debug view reads them without asking it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::changes_protocol::Watches;

/// Every open connection, server-wide.
#[derive(Default)]
pub struct ChangesConnections {
    next_id: AtomicU64,
    open: Arc<Mutex<HashMap<u64, Arc<ChangesConnection>>>>,
}

/// What the server knows of one open connection.
pub struct ChangesConnection {
    /// Its id (RavenDB's `ChangesClientConnection.Id`).
    pub id: u64,
    /// The database it watches, as the catalog names it.
    pub database: String,
    /// `?throttleConnection=true`: skippable changes are sent at most every 5 s, newest only.
    pub throttled: bool,
    /// `?fromStudio=true` (shown in the debug view only).
    pub from_studio: bool,
    started: Instant,
    /// What it watches; the connection applies its commands here.
    pub watches: Mutex<Watches>,
    /// Notifications sent to the client.
    pub sent: AtomicU64,
    /// Notifications a throttled connection replaced by a newer one.
    pub skipped: AtomicU64,
    /// Changes waiting in its queue of the database's hub when it last looked.
    pub pending: AtomicU64,
    /// Woken by `DELETE /changes?id=`.
    pub dropped: Notify,
}

/// A connection's place in the registry; dropping it unregisters the connection.
pub struct Registration {
    connection: Arc<ChangesConnection>,
    open: Arc<Mutex<HashMap<u64, Arc<ChangesConnection>>>>,
}

impl Registration {
    /// The registered connection.
    pub fn connection(&self) -> &Arc<ChangesConnection> {
        &self.connection
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.open.lock().remove(&self.connection.id);
    }
}

impl ChangesConnections {
    /// Registers a new connection to `database`.
    pub fn register(&self, database: &str, throttled: bool, from_studio: bool) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let connection = Arc::new(ChangesConnection {
            id,
            database: database.to_owned(),
            throttled,
            from_studio,
            started: Instant::now(),
            watches: Mutex::new(Watches::default()),
            sent: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            dropped: Notify::new(),
        });
        self.open.lock().insert(id, connection.clone());
        Registration { connection, open: self.open.clone() }
    }

    /// Connections open now.
    pub fn count(&self) -> usize {
        self.open.lock().len()
    }

    /// The connections to `database` (compared case-insensitively), by id.
    pub fn of_database(&self, database: &str) -> Vec<Arc<ChangesConnection>> {
        let mut found: Vec<Arc<ChangesConnection>> =
            self.open.lock().values().filter(|c| c.database.eq_ignore_ascii_case(database)).cloned().collect();
        found.sort_by_key(|c| c.id);
        found
    }

    /// Tells the connection `id` to `database` to close; false when there is none.
    pub fn disconnect(&self, database: &str, id: u64) -> bool {
        let found = self.open.lock().get(&id).filter(|c| c.database.eq_ignore_ascii_case(database)).cloned();
        match found {
            Some(connection) => {
                connection.dropped.notify_one();
                true
            }
            None => false,
        }
    }
}

impl ChangesConnection {
    /// The connection as RavenDB's `GetDebugInfo` shows it, with Corvid's counters after.
    pub fn debug_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("Id".into(), json!(self.id));
        out.insert("PendingMessagesCount".into(), json!(self.pending.load(Ordering::Relaxed)));
        out.insert("State".into(), json!("Open"));
        out.insert("CloseStatus".into(), Value::Null);
        out.insert("CloseStatusDescription".into(), Value::Null);
        out.insert("SubProtocol".into(), Value::Null);
        out.insert("Age".into(), json!(time_span(self.started.elapsed())));
        out.extend(self.watches.lock().debug_json());
        out.insert("Throttled".into(), json!(self.throttled));
        out.insert("FromStudio".into(), json!(self.from_studio));
        out.insert("NotificationsSent".into(), json!(self.sent.load(Ordering::Relaxed)));
        out.insert("NotificationsSkipped".into(), json!(self.skipped.load(Ordering::Relaxed)));
        Value::Object(out)
    }
}

/// A duration as .NET writes a `TimeSpan` (`d.hh:mm:ss.fffffff`, the day part only when there is one).
fn time_span(elapsed: std::time::Duration) -> String {
    let secs = elapsed.as_secs();
    let ticks = elapsed.subsec_nanos() / 100;
    let (days, hours, minutes, seconds) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let clock = format!("{hours:02}:{minutes:02}:{seconds:02}.{ticks:07}");
    if days > 0 {
        format!("{days}.{clock}")
    } else {
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_register_list_and_drop_by_database() {
        let registry = ChangesConnections::default();
        let a = registry.register("Shop", false, false);
        let b = registry.register("other", true, false);
        assert_eq!(registry.count(), 2);
        assert_eq!(registry.of_database("shop").iter().map(|c| c.id).collect::<Vec<_>>(), vec![a.connection().id]);
        assert!(!registry.disconnect("shop", b.connection().id), "an id of another database is not found");
        assert!(registry.disconnect("SHOP", a.connection().id));
        drop(a);
        assert_eq!(registry.count(), 1);
        assert_eq!(registry.of_database("other")[0].debug_json()["Throttled"], json!(true));
    }

    #[test]
    fn ages_read_like_dotnet_time_spans() {
        assert_eq!(time_span(std::time::Duration::from_millis(61_500)), "00:01:01.5000000");
        assert_eq!(time_span(std::time::Duration::from_secs(90_000)), "1.01:00:00.0000000");
    }
}
