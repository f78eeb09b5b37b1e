//! A subscription worker's connection after the header: its options, admission, then batches from the
//! subscription's position in etag order. One batch is in flight at a time: the next one is read only after
//! the client's `Acknowledge` was persisted and confirmed, so a worker that reconnects gets every
//! unacknowledged document again. While idle the connection waits for a commit (the database's commit
//! watch, on the blocking pool) and writes a `\r\n` heartbeat every second; every second it also checks
//! whether the server ended it (drop, delete, disable, take-over) and tells the client why.
//!
//! A `Concurrent` worker reads its batches from the subscription's shared dispatch instead (documents no
//! other worker holds), and its acknowledgement stores the dispatch's watermark; while idle it also wakes
//! when another worker gave documents back.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use corvid_engine::subscriptions::{
    AdmittedConnection, ConcurrentWorker, Strategy, SubscriptionBatch, SubscriptionCriteria, SubscriptionKey,
};
use corvid_engine::{Database, EngineError};
use corvid_types::now_nanos;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::admission;
use super::json_stream::{write_bytes, write_heartbeat, write_object, JsonReader};
use super::subscription_messages as messages;
use super::worker_options::WorkerOptions;
use crate::error::TcpError;

/// How often an idle or waiting connection writes a heartbeat and checks whether it was ended.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// Client messages are small (`Acknowledge` with a change vector).
const MAX_CLIENT_MESSAGE_BYTES: usize = 64 << 10;
/// A client sends one `Acknowledge` per batch; more unanswered messages than this is a protocol error.
const MAX_PENDING_MESSAGES: usize = 16;
/// A client may take this long in its batch callback before acknowledging.
const ACK_PATIENCE: Duration = Duration::from_secs(24 * 3600);

/// Runs work on the blocking pool (storage reads, merger writes, commit waits).
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, EngineError> + Send + 'static) -> Result<T, TcpError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| TcpError::Server(e.to_string())),
        Err(e) => Err(TcpError::Server(format!("background task failed: {e}"))),
    }
}

/// One connection's state once admitted.
struct Session<'c, R, W> {
    database: Arc<Database>,
    criteria: Arc<SubscriptionCriteria>,
    options: WorkerOptions,
    admitted: AdmittedConnection,
    reader: &'c mut JsonReader<R>,
    write: &'c mut W,
    /// Every document up to this etag was acknowledged (or filtered out).
    position: u64,
    /// Client messages read while the connection was busy (reading, persisting, sending), not yet handled.
    pending: VecDeque<Value>,
    /// A `Concurrent` worker's membership of the shared dispatch (dropped last: gives back what is unacknowledged).
    shared: Option<Arc<ConcurrentWorker>>,
}

/// Serves a subscription worker: `options` is the object the client sent after the header.
pub async fn serve<R, W>(
    reader: &mut JsonReader<R>,
    write: &mut W,
    database: Arc<Database>,
    options: Value,
    client_uri: String,
) -> Result<(), TcpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let options = WorkerOptions::parse(&options)?;
    let lookup = {
        let database = database.clone();
        let key = SubscriptionKey::Name(options.subscription_name.clone());
        move || database.subscription(&key)
    };
    let Some(definition) = blocking(lookup.clone()).await? else {
        return write_object(write, &messages::not_found(&options.subscription_name)).await;
    };
    if definition.disabled {
        let message = format!("Subscription '{}' is disabled", definition.name);
        return write_object(write, &messages::closed(&message, false, false)).await;
    }
    let criteria = match database.subscription_criteria(&definition.query) {
        Ok(criteria) => Arc::new(criteria),
        Err(e) => return write_object(write, &messages::invalid(&e.to_string())).await,
    };
    if let Some(collection) = criteria.revisions_collection() {
        let (db, name) = (database.clone(), collection.to_owned());
        if !blocking(move || db.revisions_enabled_for(&name)).await? {
            let message = format!("Cannot use a revisions subscription: revisions are not configured for collection '{collection}'");
            return write_object(write, &messages::invalid(&message)).await;
        }
        if options.strategy == Strategy::Concurrent {
            let message = "Corvid does not support the Concurrent strategy on a revisions subscription";
            return write_object(write, &messages::invalid(message)).await;
        }
    }
    let Some(admitted) = admission::admit(&database, definition.id, &options, &client_uri, write).await? else { return Ok(()) };
    // Read again once admitted: a worker it took over from may have moved the position meanwhile.
    let Some(definition) = blocking(lookup).await? else {
        return write_object(write, &messages::not_found(&options.subscription_name)).await;
    };
    {
        let database = database.clone();
        blocking(move || database.record_subscription_connection(definition.id)).await?;
    }
    write_object(write, &messages::accepted()).await?;
    tracing::debug!(subscription = %definition.name, client = %client_uri, strategy = options.strategy.name(), "subscription worker connected");
    let shared = (options.strategy == Strategy::Concurrent)
        .then(|| Arc::new(database.subscription_connections().concurrent_dispatch(definition.id, definition.position).join()));
    let mut session =
        Session { database, criteria, options, admitted, reader, write, position: definition.position, pending: VecDeque::new(), shared };
    session.run().await
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<'_, R, W> {
    async fn run(&mut self) -> Result<(), TcpError> {
        loop {
            if self.told_end().await? {
                return Ok(());
            }
            let batch = self.read_batch().await?;
            if batch.items.is_empty() {
                if batch.last_etag > self.position {
                    // Only filtered-out documents: move past them without asking the client.
                    self.persist(batch.last_etag, batch.last_change_vector.clone(), None).await?;
                }
                if batch.scanned > 0 {
                    continue;
                }
                if self.options.close_when_no_docs_left {
                    let message = format!("Subscription '{}': no documents left", self.options.subscription_name);
                    return write_object(self.write, &messages::closed(&message, false, true)).await;
                }
                self.wait_for_documents(batch.database_etag).await?;
                continue;
            }
            self.send(&batch).await?;
            let Some(acknowledged) = self.wait_for_ack().await? else { continue };
            let (position, change_vector) = match &self.shared {
                Some(worker) => worker.acknowledge(&*self.database),
                None => (batch.last_etag, batch.last_change_vector.clone()),
            };
            self.persist(position, change_vector, Some(acknowledged)).await?;
            let slot = &self.admitted.slot;
            slot.acknowledgements.fetch_add(1, Ordering::Relaxed);
            slot.last_ack_at.store(now_nanos(), Ordering::Relaxed);
            write_object(self.write, &messages::confirm()).await?;
        }
    }

    /// True when the server ended this connection; the client was told why.
    async fn told_end(&mut self) -> Result<bool, TcpError> {
        match self.admitted.slot.ended() {
            Some(reason) => {
                write_object(self.write, &messages::ended(reason, &self.options.subscription_name)).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn read_batch(&mut self) -> Result<SubscriptionBatch, TcpError> {
        let (database, criteria, position, max_docs) =
            (self.database.clone(), self.criteria.clone(), self.position, self.options.max_docs_per_batch);
        let shared = self.shared.clone();
        let read = blocking(move || match shared {
            Some(worker) => worker.next_batch(&*database, &criteria, max_docs),
            None => database.read_subscription_batch(&criteria, position, max_docs),
        });
        watching(self.reader, &mut self.pending, read).await
    }

    async fn send(&mut self, batch: &SubscriptionBatch) -> Result<(), TcpError> {
        watching(self.reader, &mut self.pending, write_bytes(self.write, &messages::batch_bytes(batch))).await?;
        let slot = &self.admitted.slot;
        slot.batches.fetch_add(1, Ordering::Relaxed);
        slot.documents.fetch_add(batch.items.len() as u64, Ordering::Relaxed);
        slot.last_batch_at.store(now_nanos(), Ordering::Relaxed);
        Ok(())
    }

    async fn persist(&mut self, position: u64, change_vector: Option<String>, acknowledged: Option<String>) -> Result<(), TcpError> {
        let database = self.database.clone();
        let id = self.admitted.slot.subscription_id;
        let write = blocking(move || database.acknowledge_subscription(id, position, change_vector, acknowledged));
        match watching(self.reader, &mut self.pending, write).await {
            Ok(()) => {
                self.position = position;
                Ok(())
            }
            // Deleted meanwhile: the loop's next check tells the client why, instead of a storage error.
            Err(_) if self.admitted.slot.ended().is_some() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The change vector of the client's `Acknowledge`, or None when the server ended the connection meanwhile
    /// (the caller's next check tells the client).
    async fn wait_for_ack(&mut self) -> Result<Option<String>, TcpError> {
        while let Some(message) = self.pending.pop_front() {
            match message.get("Type").and_then(Value::as_str) {
                Some("Acknowledge") => return Ok(Some(acknowledged_change_vector(&message))),
                other => handle_other(other)?,
            }
        }
        loop {
            tokio::select! {
                message = self.reader.next_object(MAX_CLIENT_MESSAGE_BYTES, ACK_PATIENCE) => {
                    let message = message?;
                    match message.get("Type").and_then(Value::as_str) {
                        Some("Acknowledge") => return Ok(Some(acknowledged_change_vector(&message))),
                        other => handle_other(other)?,
                    }
                }
                () = tokio::time::sleep(HEARTBEAT) => {
                    if self.admitted.slot.ended().is_some() {
                        return Ok(None);
                    }
                    write_heartbeat(self.write).await?;
                }
            }
        }
    }

    /// Returns once a commit went past `seen`, or the server ended the connection; heartbeats meanwhile.
    /// The client's socket is read all along, so a client that goes away frees its slot at once.
    async fn wait_for_documents(&mut self, seen: u64) -> Result<(), TcpError> {
        // Acknowledgements read meanwhile are late ones of batches already confirmed.
        while let Some(message) = self.pending.pop_front() {
            match message.get("Type").and_then(Value::as_str) {
                Some("Acknowledge") => {}
                other => handle_other(other)?,
            }
        }
        let database = self.database.clone();
        let wait = move || -> Result<u64, EngineError> { Ok(database.wait_for_commit_beyond(seen, HEARTBEAT)) };
        let mut waiter = tokio::task::spawn_blocking(wait.clone());
        loop {
            tokio::select! {
                joined = &mut waiter => {
                    let etag = joined.map_err(|e| TcpError::Server(format!("background task failed: {e}")))?
                        .map_err(|e| TcpError::Server(e.to_string()))?;
                    if etag > seen || self.admitted.slot.ended().is_some() {
                        return Ok(());
                    }
                    write_heartbeat(self.write).await?;
                    if self.shared.as_ref().is_some_and(|worker| worker.dispatch().has_free_resend()) {
                        // Another worker left without acknowledging: its documents are owed again.
                        return Ok(());
                    }
                    waiter = tokio::task::spawn_blocking(wait.clone());
                }
                message = self.reader.next_object(MAX_CLIENT_MESSAGE_BYTES, ACK_PATIENCE) => {
                    let message = message?;
                    match message.get("Type").and_then(Value::as_str) {
                        // A late acknowledgement of a batch already confirmed: nothing to do.
                        Some("Acknowledge") => {}
                        other => handle_other(other)?,
                    }
                }
            }
        }
    }
}

/// Runs `work` while keeping a read outstanding on the client's socket, as RavenDB does: a client that goes
/// away ends the connection (and frees its slot) at once, even while a batch is read or written. Messages
/// that arrive meanwhile are kept in `pending`.
async fn watching<R: AsyncRead + Unpin, T>(
    reader: &mut JsonReader<R>,
    pending: &mut VecDeque<Value>,
    work: impl Future<Output = Result<T, TcpError>>,
) -> Result<T, TcpError> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            result = &mut work => return result,
            message = reader.next_object(MAX_CLIENT_MESSAGE_BYTES, ACK_PATIENCE) => {
                if pending.len() >= MAX_PENDING_MESSAGES {
                    return Err(TcpError::Malformed(format!("more than {MAX_PENDING_MESSAGES} messages sent without waiting for the server")));
                }
                pending.push_back(message?);
            }
        }
    }
}

fn acknowledged_change_vector(message: &Value) -> String {
    message.get("ChangeVector").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// Client messages besides `Acknowledge`: `None` is ignored, `DisposedNotification` ends the connection,
/// anything else is a protocol error.
fn handle_other(message_type: Option<&str>) -> Result<(), TcpError> {
    match message_type {
        Some("None") => Ok(()),
        Some("DisposedNotification") => Err(TcpError::Closed),
        other => Err(TcpError::Malformed(format!("unexpected subscription message type {other:?}"))),
    }
}
