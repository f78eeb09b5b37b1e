//! Corvid's HTTP edge: RavenDB's routes, lenient query strings, the one mapping from errors to RavenDB error
//! JSON, the request log and limits, and the landlord that opens databases on demand.

mod backup_runs;
mod backup_scheduler;
mod body;
mod changes_connections;
mod changes_protocol;
mod compression;
mod config;
mod connections;
mod database_info_cache;
mod error;
#[cfg(test)]
mod error_snapshots;
mod idle_unloader;
mod landlord;
pub mod logs;
mod middleware;
mod monitoring;
mod process_info;
mod query;
mod query_gate;
mod request_headers;
mod request_log;
mod responses;
mod routes;
mod state;
mod studio_assets;
mod tcp;
mod timed_body;

pub use config::{BodyRate, ServerConfig};
pub use landlord::Landlord;
pub use state::AppState;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::connections::Connections;

/// Binds, prints `Server available on: <url>`, serves until `shutdown` resolves, then shuts down within
/// `shutdown_timeout`: open requests get up to half of it to finish (connections still open then are
/// closed), closing the databases gets the rest.
pub async fn serve(config: ServerConfig, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
    corvid_types::json::set_max_depth(config.max_json_depth);
    let landlord = Arc::new(Landlord::open(&config)?);
    idle_unloader::start(landlord.clone(), config.max_idle_time)?;
    let listener = TcpListener::bind(config.bind_address()?).await?;
    let local = listener.local_addr()?;
    let public_url = config.public_url(local);
    let tcp_listener = TcpListener::bind(config.tcp_bind_address()?).await?;
    let tcp_url = config.public_tcp_url(&public_url, tcp_listener.local_addr()?);
    let state = AppState::new(config.clone(), landlord.clone(), public_url.clone(), tcp_url.clone())?;
    let app = routes::router(state.clone());
    state.backup_scheduler.start(landlord.clone(), tokio::runtime::Handle::current())?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "Server available on: {public_url}")?;
        out.flush()?;
    }
    tracing::info!(url = %public_url, tcp = %tcp_url, data_dir = %config.data_dir.display(), "serving");
    let tcp = tcp::TcpService::start(tcp_listener, landlord.clone(), config.header_read_timeout);
    let connections = Connections::new(config.header_read_timeout);
    connections.accept_until(&listener, app, shutdown).await;
    // Upgraded websockets are no longer hyper's connections: tell them apart.
    state.changes_shutdown.send_replace(true);
    state.backup_scheduler.stop();
    let started = std::time::Instant::now();
    drop(listener);
    // TCP connections (subscription workers) live as long as their clients: close them at once.
    let tcp_closed = tcp.shut_down(Duration::from_millis(500)).await;
    tracing::info!(tcp_connections = tcp_closed, "stopped accepting connections; finishing open requests");
    let closed = connections.shut_down(config.shutdown_timeout / 2).await;
    if closed > 0 {
        tracing::warn!(connections = closed, "closed connections whose requests did not finish in time");
    }
    let left = config.shutdown_timeout.saturating_sub(started.elapsed());
    tracing::info!(ms = left.as_millis() as u64, "closing databases");
    tokio::task::spawn_blocking(move || landlord.close_all(left)).await.map_err(std::io::Error::other)?;
    if let Some(log) = &state.request_log {
        log.close(Duration::from_millis(100));
    }
    Ok(())
}
