use crate::query_gate::QueryGate;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;

use crate::config::ServerConfig;
use crate::landlord::Landlord;
use crate::request_log::RequestLog;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub inner: Arc<Inner>,
}

pub struct Inner {
    pub config: ServerConfig,
    pub landlord: Arc<Landlord>,
    pub public_url: String,
    /// `tcp://host:port` of the TCP listener, as `/info/tcp` tells clients.
    pub tcp_url: String,
    pub request_slots: Arc<Semaphore>,
    pub queries: QueryGate,
    /// What memory-hungry requests may hold at once (`memory_budget.rs`).
    pub memory_budget: crate::memory_budget::MemoryBudget,
    /// `None` when requests are not logged.
    pub request_log: Option<RequestLog>,
    pub request_counter: AtomicU64,
    /// Requests per database named in the URL (the Studio dashboard's traffic per database).
    pub database_traffic: crate::database_traffic::DatabaseTraffic,
    pub rejected_requests: AtomicU64,
    pub raft_index: AtomicU64,
    pub operation_ids: AtomicU64,
    /// Operations of the server rather than of a database (compaction), polled at `/operations/state`: their
    /// results are rendered when they complete, their failures are the server's own errors.
    pub server_operations: corvid_engine::Operations<serde_json::Value, crate::error::ApiError>,
    /// Changes API websockets open now.
    pub changes_clients: AtomicU64,
    /// Changes API clients that fell too far behind (changes skipped or the connection dropped).
    pub changes_dropped: AtomicU64,
    /// The Changes API websockets open now (for `/changes/debug` and `DELETE /changes?id=`).
    pub changes_connections: crate::changes_connections::ChangesConnections,
    /// Set once the server stops: open Changes API websockets close.
    pub changes_shutdown: tokio::sync::watch::Sender<bool>,
    /// The periodic backup scheduler (`backup_scheduler.rs`), started by `serve`.
    pub backup_scheduler: Arc<crate::backup_scheduler::BackupScheduler>,
    /// The router itself, for requests dispatched from inside a request (multi_get).
    pub router: OnceLock<axum::Router>,
    /// When the server started (monitoring's up-time).
    pub started_at: std::time::Instant,
    /// The previous sample of each counter monitoring reports a rate of.
    pub monitoring_rates: crate::monitoring::RateSampler,
    /// The server listens on a loopback address only: `Host` must name this machine (DNS rebinding).
    pub loopback_only: bool,
    /// Set when the server has a certificate: HTTPS only, every request authorized.
    pub security: Option<Arc<crate::security::server_security::ServerSecurity>>,
}

impl AppState {
    pub fn new(
        config: ServerConfig,
        landlord: Arc<Landlord>,
        public_url: String,
        tcp_url: String,
        security: Option<Arc<crate::security::server_security::ServerSecurity>>,
    ) -> std::io::Result<AppState> {
        let request_slots = Arc::new(Semaphore::new(config.max_concurrent_requests));
        let loopback_only = config.bind_address().is_ok_and(|a| a.ip().is_loopback());
        // `--log warn` (or `corvid::request=off`) silences the request log too.
        let logged = config.log_requests && tracing::enabled!(target: "corvid::request", tracing::Level::INFO);
        let request_log = if logged { Some(RequestLog::start(config.log_requests_slower_than)?) } else { None };
        Ok(AppState {
            inner: Arc::new(Inner {
                queries: QueryGate::new(config.max_concurrent_queries, config.query_queue_timeout),
                memory_budget: crate::memory_budget::MemoryBudget::new(config.memory_budget_bytes, config.query_queue_timeout),
                config,
                landlord,
                public_url,
                tcp_url,
                request_slots,
                request_log,
                request_counter: AtomicU64::new(0),
                database_traffic: Default::default(),
                rejected_requests: AtomicU64::new(0),
                raft_index: AtomicU64::new(1),
                operation_ids: AtomicU64::new(1),
                server_operations: corvid_engine::Operations::new(),
                changes_clients: AtomicU64::new(0),
                changes_dropped: AtomicU64::new(0),
                changes_connections: Default::default(),
                changes_shutdown: tokio::sync::watch::channel(false).0,
                backup_scheduler: Arc::default(),
                router: OnceLock::new(),
                started_at: std::time::Instant::now(),
                monitoring_rates: Default::default(),
                loopback_only,
                security,
            }),
        })
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}
