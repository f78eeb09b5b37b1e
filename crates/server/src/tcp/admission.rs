//! Admitting a worker to its subscription under its strategy. `OpenIfFree` and `TakeOver` are decided at
//! once by the database's connection registry; `WaitForFree` keeps the socket and retries every
//! `max(250 ms, TimeToWaitBeforeConnectionRetry / 2)`, writing a heartbeat each round, as RavenDB does.
//! `Concurrent` (several workers sharing batches) is refused as `Invalid`.

use std::time::Duration;

use corvid_engine::subscriptions::{AdmittedConnection, Strategy};
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
    if options.strategy == Strategy::Concurrent {
        let message = "Corvid does not support the Concurrent subscription strategy yet; use OpenIfFree, TakeOver or WaitForFree";
        write_object(write, &subscription_messages::invalid(message)).await?;
        return Ok(None);
    }
    let retry_every = (options.time_to_wait_before_retry / 2).max(Duration::from_millis(250));
    loop {
        match database.subscription_connections().admit(subscription_id, options.strategy, client_uri.to_owned()) {
            Ok(admitted) => return Ok(Some(admitted)),
            Err(refused) if options.strategy == Strategy::WaitForFree => {
                tracing::trace!(subscription = subscription_id, reason = %refused.0, "worker waits for its subscription");
                // A client that went away fails this write, which ends the wait.
                write_heartbeat(write).await?;
                tokio::time::sleep(retry_every).await;
            }
            Err(refused) => {
                write_object(write, &subscription_messages::in_use(&refused.0)).await?;
                return Ok(None);
            }
        }
    }
}
