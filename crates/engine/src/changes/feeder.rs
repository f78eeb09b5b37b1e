//! Turns commits into document changes: a thread per database that, after each commit, reads the documents
//! and tombstones newer than the last etag it saw (like an index worker) and publishes them. The writer only
//! bumps the commit watch it bumps anyway, so subscribers cost the commit path nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use corvid_storage::Store;
use parking_lot::Mutex;

use super::change::{Change, DocumentChangeKind};
use super::hub::ChangesHub;
use crate::commit_watch::CommitWatch;

/// How long the feeder sleeps between checks when nothing is committed (it also checks for stop then).
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// The running feeder of one database.
pub(crate) struct DocumentFeeder {
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl DocumentFeeder {
    /// Starts feeding `hub` from the commits `watch` announces.
    pub(crate) fn start(name: &str, store: Arc<Store>, watch: Arc<CommitWatch>, hub: Arc<ChangesHub>) -> std::io::Result<DocumentFeeder> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new().name(format!("changes-{name}")).spawn(move || feed(&store, &watch, &hub, &stop))?
        };
        Ok(DocumentFeeder { stop, thread: Mutex::new(Some(thread)) })
    }

    /// Stops the thread and waits for it.
    pub(crate) fn stop(&self, watch: &CommitWatch) {
        self.stop.store(true, Ordering::Relaxed);
        watch.wake_all();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

fn feed(store: &Store, watch: &CommitWatch, hub: &ChangesHub, stop: &AtomicBool) {
    let mut seen = watch.current();
    while !stop.load(Ordering::Relaxed) {
        let committed = watch.wait_beyond(seen, IDLE_WAIT);
        if committed <= seen {
            continue;
        }
        // Nobody listening: skip what was committed rather than read it.
        if hub.subscriber_count() > 0 {
            if let Err(e) = publish_after(store, hub, seen, committed) {
                tracing::warn!(error = %e, "could not read committed changes for the Changes API");
            }
        }
        seen = committed;
    }
}

/// Publishes the puts and deletes with an etag in `(after, upto]`, in etag order.
fn publish_after(store: &Store, hub: &ChangesHub, after: u64, upto: u64) -> Result<(), corvid_storage::StorageError> {
    let read = store.read()?;
    let mut changes: Vec<(u64, Change)> = Vec::new();
    read.documents_after_etag(after, |doc| {
        if doc.etag > upto {
            return false;
        }
        let change =
            Change::Document { kind: DocumentChangeKind::Put, id: doc.id, collection: doc.collection, change_vector: doc.change_vector };
        changes.push((doc.etag, change));
        true
    })?;
    read.tombstones_after_etag(after, |tombstone| {
        if tombstone.etag > upto {
            return false;
        }
        let change = Change::Document {
            kind: DocumentChangeKind::Delete,
            id: tombstone.id,
            collection: tombstone.collection,
            change_vector: tombstone.change_vector,
        };
        changes.push((tombstone.etag, change));
        true
    })?;
    drop(read);
    changes.sort_by_key(|(etag, _)| *etag);
    hub.publish_all(changes.into_iter().map(|(_, change)| change).collect());
    Ok(())
}
