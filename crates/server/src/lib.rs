//! Corvid's HTTP edge: RavenDB's routes, lenient query strings, the one mapping from errors to RavenDB error
//! JSON, the request log and limits, and the landlord that opens databases on demand.

mod body;
mod config;
mod error;
mod landlord;
mod middleware;
mod query;
mod responses;
mod routes;
mod state;

pub use config::ServerConfig;
pub use landlord::Landlord;
pub use state::AppState;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

/// Binds, prints `Server available on: <url>`, serves until `shutdown` resolves, then drains requests and
/// closes every database within the configured deadline.
pub async fn serve(config: ServerConfig, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
    corvid_types::json::set_max_depth(config.max_json_depth);
    let landlord = Arc::new(Landlord::open(&config)?);
    let listener = TcpListener::bind(config.bind_address()?).await?;
    let local = listener.local_addr()?;
    let public_url = config.public_url(local);
    let state = AppState::new(config.clone(), landlord.clone(), public_url.clone());
    let app = routes::router(state);
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "Server available on: {public_url}")?;
        out.flush()?;
    }
    tracing::info!(url = %public_url, data_dir = %config.data_dir.display(), "serving");
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    tracing::info!("stopped accepting requests; closing databases");
    let deadline = config.shutdown_timeout;
    tokio::task::spawn_blocking(move || landlord.close_all(deadline)).await.map_err(std::io::Error::other)?;
    Ok(())
}
