//! Admitting a worker to its subscription under its strategy. `OpenIfFree` and `TakeOver` are decided at
//! once by the database's connection registry; `WaitForFree` keeps the socket and retries every
//! `max(250 ms, TimeToWaitBeforeConnectionRetry / 2)`, writing a heartbeat each round, as RavenDB does.
//! `Concurrent` workers join each other; mixing them with another strategy is `InUse` both ways (a
//! `WaitForFree` worker does not wait for concurrent ones, as in RavenDB). A database serving its maximum of
//! connections answers `Closed`.

use std::time::Duration;

use corvid_engine::subscriptions::{AdmittedConnection, Refusal};
use corvid_engine::Database;
use tokio::io::AsyncWrite;

use super::json_stream::{write_heartbeat, write_object};
use super::subscription_messages;
use super::worker_options::WorkerOptions;
use crate::error::TcpError;

/// The slot of an admitted worker, or None when it was refused (the refusal was written to it).
pub async fn admit<W: AsyncWrite + Unpin>(
    database: &Database,
    subscription_id: u64,
    options: &WorkerOptions,
    client_uri: &str,
    write: &mut W,
) -> Result<Option<AdmittedConnection>, TcpError> {
    let retry_every = (options.time_to_wait_before_retry / 2).max(Duration::from_millis(250));
    loop {
        let connections = database.subscription_connections();
        match connections.admit(subscription_id, options.strategy, client_uri.to_owned(), options.worker_id.clone()) {
            Ok(admitted) => return Ok(Some(admitted)),
            Err(Refusal::InUse { message, may_wait: true }) => {
                tracing::trace!(subscription = subscription_id, reason = %message, "worker waits for its subscription");
                // A client that went away fails this write, which ends the wait.
                write_heartbeat(write).await?;
                tokio::time::sleep(retry_every).await;
            }
            Err(Refusal::InUse { message, .. }) => {
                write_object(write, &subscription_messages::in_use(&message)).await?;
                return Ok(None);
            }
            Err(Refusal::TooManyConnections(message)) => {
                write_object(write, &subscription_messages::closed(&message, false, false)).await?;
                return Ok(None);
            }
        }
    }
}
