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
mod database_traffic;
mod error;
#[cfg(test)]
mod error_snapshots;
mod idle_unloader;
mod landlord;
pub mod logs;
mod memory_budget;
mod middleware;
mod monitoring;
mod process_info;
mod query;
mod query_gate;
mod request_headers;
mod request_log;
mod responses;
mod routes;
mod security;
mod state;
mod studio_assets;
mod tcp;
mod timed_body;

pub use config::{BodyRate, ServerConfig};
pub use landlord::Landlord;
pub use security::security_settings::SecuritySettings;
pub use security::server_certificate::CertificateSource;
pub use security::unsecured_access::UnsecuredAccess;
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
    let security = start_security(&config, &landlord, &public_url, local)?;
    let tcp_listener = TcpListener::bind(config.tcp_bind_address()?).await?;
    let tcp_url = config.public_tcp_url(&public_url, tcp_listener.local_addr()?);
    let state = AppState::new(config.clone(), landlord.clone(), public_url.clone(), tcp_url.clone(), security.clone())?;
    let app = routes::router(state.clone());
    state.backup_scheduler.start(landlord.clone(), tokio::runtime::Handle::current())?;
    let refused = routes::refusal_router(state.clone());
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "Server available on: {public_url}")?;
        if local.ip().is_unspecified() {
            // The URL above is how this machine reaches the server; the socket listens on every interface.
            writeln!(out, "Listening on: {local} (every interface)")?;
        }
        out.flush()?;
    }
    tracing::info!(url = %public_url, listening = %local, tcp = %tcp_url, data_dir = %config.data_dir.display(), "serving");
    let tls = security.as_ref().map(|s| s.tls.clone());
    let tcp = tcp::TcpService::start(
        tcp_listener,
        landlord.clone(),
        config.header_read_timeout,
        security.clone(),
        config.security.unsecured_access,
    );
    let connections = Connections::new(config.header_read_timeout, tls, config.security.unsecured_access);
    connections.accept_until(&listener, connections::Services { app, refused }, shutdown).await;
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

/// Loads the server's certificate when one is configured, and checks that the URL's scheme agrees with it
/// (with a certificate, plain HTTP is never served). Warns when an unsecured server listens beyond this
/// machine.
fn start_security(
    config: &ServerConfig,
    landlord: &Landlord,
    public_url: &str,
    local: std::net::SocketAddr,
) -> std::io::Result<Option<Arc<security::server_security::ServerSecurity>>> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let security =
        security::server_security::ServerSecurity::start(&config.security, landlord, config.header_read_timeout, public_url.to_owned())?;
    match (&security, config.is_https()) {
        (Some(_), false) => {
            return Err(invalid(format!(
                "Security.Certificate.Path is set, so the server only speaks HTTPS: ServerUrl must start with https:// (it is '{}')",
                config.url
            )))
        }
        (None, true) => {
            return Err(invalid(format!("ServerUrl '{}' asks for HTTPS but no certificate is set (Security.Certificate.Path)", config.url)))
        }
        (Some(security), true) => {
            tracing::info!(thumbprint = %security.certificate().thumbprint, "HTTPS with the server certificate; clients authenticate with certificates");
        }
        (None, false) => {
            let access = config.security.unsecured_access;
            if !local.ip().is_loopback() && !access.beyond_local() {
                tracing::warn!(
                    address = %local,
                    "the server listens beyond this machine without a certificate, but Security.UnsecuredAccessAllowed is '{}': only clients on this machine are served (set it to PrivateNetwork or PublicNetwork, or configure Security.Certificate.Path)",
                    access.describe()
                );
            } else if access.public_network {
                tracing::warn!("Security.UnsecuredAccessAllowed includes PublicNetwork: anyone who reaches this port can read, change and delete every database");
            }
        }
    }
    let security = security.map(Arc::new);
    if let Some(security) = &security {
        security::certificate_watch::start(security)?;
    }
    Ok(security)
}
