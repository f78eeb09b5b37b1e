//! Server settings. Defaults suit a single machine; every field can be set by flag, `CORVID_*` environment
//! variable or TOML file (see the binary and README).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use corvid_engine::DatabaseOptions;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `http://host:port` to listen on; port 0 picks a free port.
    pub url: String,
    /// The URL clients are told to use (topology, `Server available on:`) when it is not the listen
    /// address, e.g. behind a proxy or inside a container (RavenDB's `PublicServerUrl`).
    pub public_server_url: Option<String>,
    /// `tcp://host:port` of the TCP listener (data subscriptions; RavenDB's `ServerUrl.Tcp`). `None`: the
    /// HTTP host with a free port.
    pub tcp_url: Option<String>,
    pub data_dir: PathBuf,
    /// Requests served at once; more are answered 503 "server too busy" at once instead of queueing.
    pub max_concurrent_requests: usize,
    /// Largest request body accepted, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Largest attachment accepted, in bytes (413 beyond). Attachments are streamed to disk, never held in
    /// memory, so this can be much larger than `max_body_bytes`.
    pub max_attachment_bytes: u64,
    /// How long a request waits for its database to open before it gets 503.
    pub database_load_timeout: Duration,
    /// A database without requests or running work for this long is closed, and opens again on its next
    /// request (RavenDB's `Databases.MaxIdleTimeInSec`). Zero: never.
    pub max_idle_time: Duration,
    /// Deadline for the whole shutdown: open requests get at most half of it, closing databases the rest.
    pub shutdown_timeout: Duration,
    /// A client must send a request's headers within this time, or its connection is closed (also the
    /// longest an idle keep-alive connection stays open). Zero: no limit.
    pub header_read_timeout: Duration,
    /// How slowly a request body may arrive before the request is dropped with 408.
    pub body_rate: BodyRate,
    /// Write one line per request to the log.
    pub log_requests: bool,
    /// Deepest nesting (objects and arrays) of a document a client may write.
    pub max_json_depth: usize,
    /// Queries run at once; more wait up to `query_queue_timeout`, then get 503.
    pub max_concurrent_queries: usize,
    pub query_queue_timeout: Duration,
    /// Memory the requests that need much of it (large bodies, queries, streams) may hold in all, with a
    /// quarter kept for the server itself; beyond it they wait up to `query_queue_timeout`, then get 503.
    /// Zero: no budget. Default: half the machine's (or container's) memory (`memory_budget.rs`).
    pub memory_budget_bytes: u64,
    /// Log only requests that took at least this long (zero: every request).
    pub log_requests_slower_than: Duration,
    /// Compress responses when the client accepts it (RavenDB's `Http.UseResponseCompression`).
    pub response_compression: bool,
    pub database: DatabaseOptions,
    /// Testing aid: databases whose name starts with the prefix take this long to open, to exercise the
    /// "still loading" path. Off by default.
    pub slow_open: Option<(String, Duration)>,
    /// HTTPS, client certificates and the unsecured access rules.
    pub security: crate::security::security_settings::SecuritySettings,
}

/// The slowest request body accepted: every `window` the server spends waiting for the body, at least
/// `min_bytes_per_second` × `window` bytes (and at least one) must arrive. Time the server is not reading
/// (back-pressure while it writes) does not count, so slow consumers never time their clients out. A zero
/// window turns the check off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRate {
    pub window: Duration,
    pub min_bytes_per_second: u64,
}

impl Default for BodyRate {
    /// Kestrel's (and so RavenDB's) minimum rate, over a window long enough for a bulk insert whose client
    /// pauses between batches.
    fn default() -> Self {
        BodyRate { window: Duration::from_secs(30), min_bytes_per_second: 240 }
    }
}

impl BodyRate {
    pub fn is_enabled(&self) -> bool {
        !self.window.is_zero()
    }

    /// Bytes that must arrive per window.
    pub fn min_bytes_per_window(&self) -> u64 {
        ((self.min_bytes_per_second as u128 * self.window.as_millis()) / 1000).max(1) as u64
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            url: "http://127.0.0.1:8080".into(),
            public_server_url: None,
            tcp_url: None,
            data_dir: PathBuf::from("corvid-data"),
            max_concurrent_requests: 1024,
            max_body_bytes: 64 << 20,
            max_attachment_bytes: 4 << 30,
            database_load_timeout: Duration::from_secs(30),
            max_idle_time: Duration::from_secs(900),
            shutdown_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(30),
            body_rate: BodyRate::default(),
            log_requests: true,
            max_json_depth: corvid_types::json::DEFAULT_MAX_DEPTH,
            max_concurrent_queries: 64,
            query_queue_timeout: Duration::from_secs(30),
            memory_budget_bytes: crate::memory_budget::default_budget_bytes(),
            log_requests_slower_than: Duration::ZERO,
            response_compression: true,
            database: DatabaseOptions::default(),
            slow_open: None,
            security: Default::default(),
        }
    }
}

impl ServerConfig {
    /// Whether the server URL asks for HTTPS.
    pub fn is_https(&self) -> bool {
        self.url.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
    }

    pub fn bind_address(&self) -> std::io::Result<SocketAddr> {
        let (rest, default_port) = match (self.url.strip_prefix("http://"), self.url.strip_prefix("https://")) {
            (Some(rest), _) => (rest, 80),
            (_, Some(rest)) => (rest, 443),
            _ => {
                let why = format!("server URL '{}' must start with http:// or https://", self.url);
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
            }
        };
        let host_port = rest.trim_end_matches('/');
        let host_port = if host_port.contains(':') { host_port.to_owned() } else { format!("{host_port}:{default_port}") };
        let host_port = host_port.replacen("localhost:", "127.0.0.1:", 1);
        host_port.parse().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("server URL '{}': {e}", self.url)))
    }

    /// The URL clients use: `public_server_url` when set, else the configured host with the port actually bound.
    pub fn public_url(&self, bound: SocketAddr) -> String {
        if let Some(url) = &self.public_server_url {
            return url.trim_end_matches('/').to_owned();
        }
        let scheme = if self.is_https() { "https" } else { "http" };
        let host = strip_scheme(&self.url).trim_end_matches('/');
        let host = host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host);
        let host = if host == "0.0.0.0" { "127.0.0.1" } else { host };
        format!("{scheme}://{host}:{}", bound.port())
    }

    /// Where the TCP listener binds: `tcp_url`, else the HTTP host with port 0 (a free port).
    pub fn tcp_bind_address(&self) -> std::io::Result<SocketAddr> {
        let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
        let Some(url) = &self.tcp_url else {
            let mut http = self.bind_address()?;
            http.set_port(0);
            return Ok(http);
        };
        let rest = url.strip_prefix("tcp://").ok_or_else(|| invalid(format!("TCP URL '{url}' must start with tcp://")))?;
        let host_port = rest.trim_end_matches('/').replacen("localhost:", "127.0.0.1:", 1);
        host_port.parse().map_err(|e| invalid(format!("TCP URL '{url}': {e}")))
    }

    /// The `tcp://host:port` clients are told (`/info/tcp`): the host of the public URL with the port bound.
    pub fn public_tcp_url(&self, public_http_url: &str, bound: SocketAddr) -> String {
        let host = strip_scheme(public_http_url).trim_end_matches('/');
        let host = host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host);
        format!("tcp://{host}:{}", bound.port())
    }
}

/// `host:port/...` of an `http://` or `https://` URL.
fn strip_scheme(url: &str) -> &str {
    url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).unwrap_or(url)
}
