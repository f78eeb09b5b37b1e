//! A database: its storage, its writer, its indexes, and the operations the server calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use corvid_storage::{MergerStatsSnapshot, Store, StoreOptions, TransactionMerger, WriteTxn};

use crate::changes::{pending, Change, ChangesHub, DocumentFeeder};
use crate::commit_watch::CommitWatch;
use crate::expiration::ExpirationSweeper;
use crate::indexing::{AutoIndexLifetimes, IndexAnnouncer, IndexRegistry};
use crate::subscriptions::SubscriptionConnections;
use crate::time_series::policy::PolicyRunner;
use crate::{EngineError, OperationEvent, OperationListener, Operations};

/// How a database is opened: storage options, write queue and automatic index lifetimes.
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    /// How the storage is opened (map size, sync mode, ...), and the slow-I/O threshold its store and
    /// indexes share: a journal write, flush or sync, or an index checkpoint, at least this long is logged
    /// and raises the slow-I/O notification.
    pub store: StoreOptions,
    /// Writes waiting for the merger before new ones are refused as "busy".
    pub write_queue_capacity: usize,
    /// An automatic index not queried for this long is marked idle (RavenDB: 30 minutes).
    pub auto_index_idle_after: Duration,
    /// An idle automatic index is deleted after this much more time unused (RavenDB: 72 hours).
    pub auto_index_delete_after: Duration,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            store: StoreOptions::default(),
            write_queue_capacity: 16 * 1024,
            auto_index_idle_after: Duration::from_secs(30 * 60),
            auto_index_delete_after: Duration::from_secs(72 * 3600),
        }
    }
}

/// One open database: its storage and writer, its indexes and its operations. Reads run on the caller's
/// thread from a snapshot; writes are queued to the writer thread.
pub struct Database {
    name: String,
    pub(crate) store: Arc<Store>,
    pub(crate) merger: Arc<TransactionMerger>,
    pub(crate) watch: Arc<CommitWatch>,
    pub(crate) indexes: Arc<IndexRegistry>,
    pub(crate) operations: Operations,
    pub(crate) changes: Arc<ChangesHub>,
    /// Workers connected to data subscriptions (`subscriptions::connections`).
    pub(crate) subscription_connections: Arc<SubscriptionConnections>,
    feeder: DocumentFeeder,
    /// The `expiration:<db>` thread (`@expires`, `@refresh`, compare-exchange expiration).
    pub(crate) expiration: ExpirationSweeper,
    /// The `ts-policies:<db>` thread (time-series rollups and retention).
    pub(crate) policy_runner: PolicyRunner,
}

/// Wraps a write so that the changes it raises are returned with its result; a failed write's changes are
/// dropped with it. Nothing is gathered while nobody listens.
#[allow(clippy::type_complexity)]
fn gathering_changes<T>(
    hub: &Arc<ChangesHub>,
    op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, EngineError> + Send + 'static,
) -> impl FnOnce(&mut WriteTxn<'_>) -> Result<(T, Vec<Change>), EngineError> + Send + 'static {
    let hub = hub.clone();
    move |txn| {
        if hub.subscriber_count() == 0 {
            return op(txn).map(|value| (value, Vec::new()));
        }
        match pending::gather(|| op(txn)) {
            (Ok(value), raised) => Ok((value, raised)),
            (Err(e), _) => Err(e),
        }
    }
}

impl Database {
    /// Opens (or creates) the database stored at `path`, starts its writer thread and its indexes.
    pub fn open(name: &str, path: &Path, options: &DatabaseOptions) -> Result<Database, EngineError> {
        let store = Arc::new(Store::open(path, &options.store)?);
        let watch = Arc::new(CommitWatch::new(store.read()?.last_etag()?));
        let on_commit = {
            let watch = watch.clone();
            move |etag| watch.publish(etag)
        };
        let merger = Arc::new(TransactionMerger::start(name, store.clone(), options.write_queue_capacity, on_commit)?);
        let lifetimes = AutoIndexLifetimes { idle_after: options.auto_index_idle_after, delete_after: options.auto_index_delete_after };
        let changes = Arc::new(ChangesHub::default());
        let announce: IndexAnnouncer = {
            let changes = changes.clone();
            Arc::new(move |name: &str, kind| changes.publish(Change::Index { kind, name: name.to_owned() }))
        };
        let indexes = IndexRegistry::open(&path.join("indexes"), store.clone(), merger.clone(), watch.clone(), lifetimes, announce)?;
        let feeder = DocumentFeeder::start(name, store.clone(), watch.clone(), changes.clone())
            .map_err(|e| EngineError::Internal(format!("cannot start the Changes API feeder: {e}")))?;
        let operations = {
            let changes = changes.clone();
            Operations::with_listener(OperationListener::new(move |id, event| {
                changes.publish(Change::Operation { id, finished: event == OperationEvent::Finished })
            }))
        };
        let subscription_connections = Arc::default();
        let expiration = ExpirationSweeper::start(name, store.clone(), merger.clone())
            .map_err(|e| EngineError::Internal(format!("cannot start the expiration thread: {e}")))?;
        let policy_runner = PolicyRunner::start(name, store.clone(), merger.clone())
            .map_err(|e| EngineError::Internal(format!("cannot start the time-series policy thread: {e}")))?;
        Ok(Database {
            name: name.to_owned(),
            store,
            merger,
            watch,
            indexes,
            operations,
            changes,
            subscription_connections,
            feeder,
            expiration,
            policy_runner,
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The id this database writes into change vectors, kept in its storage.
    pub fn database_id(&self) -> &str {
        self.store.database_id()
    }

    /// Long-running operations (patch/delete by query, bulk insert) of this database.
    pub fn operations(&self) -> &Operations {
        &self.operations
    }

    /// The Changes API's subscribers of this database.
    pub fn changes(&self) -> &Arc<ChangesHub> {
        &self.changes
    }

    /// The writer's queue length and commit counters.
    pub fn merger_stats(&self) -> MergerStatsSnapshot {
        self.merger.stats()
    }

    /// Queues a write; `reply` gets its result once it is durable. Changes the write raises (counters) are
    /// published to the Changes API just before `reply` runs, and only when the write committed.
    pub fn write<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, EngineError> + Send + 'static,
        reply: impl FnOnce(Result<T, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        let changes = self.changes.clone();
        let reply = move |result: Result<(T, Vec<Change>), EngineError>| {
            reply(result.map(|(value, raised)| {
                changes.publish_all(raised);
                value
            }))
        };
        self.merger.submit(gathering_changes(&self.changes, op), reply).map_err(|e| self.name_error(e.into()))
    }

    /// Runs a write and waits for it on this thread (its changes are published as for [`Database::write`]).
    pub fn write_blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut WriteTxn<'_>) -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let (value, raised) = self.merger.write_blocking(gathering_changes(&self.changes, op)).map_err(|e| self.name_error(e))?;
        self.changes.publish_all(raised);
        Ok(value)
    }

    pub(crate) fn name_error(&self, e: EngineError) -> EngineError {
        match e {
            EngineError::Busy { .. } => EngineError::Busy { database: self.name.clone() },
            EngineError::ShuttingDown { .. } => EngineError::ShuttingDown { database: self.name.clone() },
            other => other,
        }
    }

    /// Stops the indexes, finishes queued writes and stops the writer. Reads keep working until the last
    /// handle is dropped.
    pub fn close(&self) {
        self.operations.kill_all();
        self.indexes.stop_all();
        self.expiration.stop();
        self.policy_runner.stop();
        self.merger.stop();
        self.feeder.stop(&self.watch);
    }
}
