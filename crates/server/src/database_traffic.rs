//! Requests per database since the server started, counted at the edge from the URL (`/databases/{db}/...`):
//! the Studio's dashboard turns two readings into requests per second for each database.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// At most this many names are counted apart: requests to unknown names cannot grow the map without bound.
const MAX_NAMES: usize = 1024;

/// Where requests to names past `MAX_NAMES` are counted.
const OTHERS: &str = "(other)";

/// Request counters by database name (as written in the URL, percent-decoded).
#[derive(Default)]
pub struct DatabaseTraffic {
    counts: RwLock<HashMap<String, Arc<AtomicU64>>>,
}

impl DatabaseTraffic {
    /// Counts one request to `path` when it names a database.
    pub fn record(&self, path: &str) {
        let Some(name) = database_of(path) else { return };
        // The common case takes only the read lock: the name was seen before.
        if let Some(counter) = self.counts.read().get(name) {
            counter.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let name = percent_decode(name);
        let mut counts = self.counts.write();
        let key = if counts.len() >= MAX_NAMES && !counts.contains_key(&name) { OTHERS.to_owned() } else { name };
        counts.entry(key).or_default().fetch_add(1, Ordering::Relaxed);
    }

    /// Every counted name with its request count.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let mut list: Vec<(String, u64)> = self.counts.read().iter().map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed))).collect();
        list.sort();
        list
    }
}

/// The `{db}` of `/databases/{db}/...` (still percent-encoded), if the path has one.
fn database_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/databases/")?;
    let name = rest.split('/').next().unwrap_or_default();
    (!name.is_empty()).then_some(name)
}

fn percent_decode(name: &str) -> String {
    if !name.contains('%') {
        return name.to_owned();
    }
    percent_encoding::percent_decode_str(name).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_by_the_database_named_in_the_path() {
        let traffic = DatabaseTraffic::default();
        traffic.record("/databases/shop/docs");
        traffic.record("/databases/shop/queries");
        traffic.record("/databases/my%20db/stats");
        traffic.record("/databases/my db/stats");
        traffic.record("/databases");
        traffic.record("/databases/");
        traffic.record("/admin/metrics");
        assert_eq!(traffic.snapshot(), vec![("my db".to_owned(), 2), ("shop".to_owned(), 2)]);
    }

    #[test]
    fn names_past_the_limit_are_counted_together() {
        let traffic = DatabaseTraffic::default();
        for i in 0..MAX_NAMES + 5 {
            traffic.record(&format!("/databases/db{i}/docs"));
        }
        let snapshot = traffic.snapshot();
        assert_eq!(snapshot.len(), MAX_NAMES + 1);
        assert!(snapshot.contains(&(OTHERS.to_owned(), 5)));
    }
}
