//! Accepting connections and serving HTTP/1.1 on them (hyper): TLS when the server has a certificate,
//! the unsecured access rules when it has none, the header read timeout, and a shutdown that lets open
//! requests finish until a deadline and then closes whatever is still open.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use crate::security::tls_acceptor::TlsAcceptor;
use crate::security::unsecured_access::UnsecuredAccess;

/// What every connection is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    /// Finish the request in progress, then close.
    Draining,
    /// Close now, dropping any request in progress.
    Closing,
}

/// The connections being served. Each holds a receiver of the phase, so the sender sees when all are gone.
pub struct Connections {
    phase: watch::Sender<Phase>,
    builder: http1::Builder,
    /// Set: every connection must speak TLS.
    tls: Option<Arc<TlsAcceptor>>,
    /// Without TLS, the client addresses served by the application (others get `refused`).
    unsecured: UnsecuredAccess,
}

/// What answers the connections: the application, and what answers clients the unsecured access rules
/// do not serve.
pub struct Services {
    pub app: axum::Router,
    pub refused: axum::Router,
}

/// The most a connection buffers of what it read and has not handed on (headers must fit).
const READ_BUFFER_BYTES: usize = 64 * 1024;

impl Connections {
    pub fn new(header_read_timeout: Duration, tls: Option<Arc<TlsAcceptor>>, unsecured: UnsecuredAccess) -> Connections {
        let mut builder = http1::Builder::new();
        // The timer must be set for hyper to enforce the header read timeout at all.
        builder.timer(TokioTimer::new());
        builder.header_read_timeout((!header_read_timeout.is_zero()).then_some(header_read_timeout));
        // hyper's read buffer grows to ~400 KB per connection; with a thousand connections whose requests wait
        // for the memory budget, that alone was 100+ MB. 64 KB still holds any request head.
        builder.max_buf_size(READ_BUFFER_BYTES);
        Connections { phase: watch::channel(Phase::Serving).0, builder, tls, unsecured }
    }

    /// Accepts connections and serves `app` on each until `shutdown` resolves.
    pub async fn accept_until(&self, listener: &TcpListener, services: Services, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => match &self.tls {
                        Some(tls) => self.serve_tls(stream, peer, tls.clone(), services.app.clone()),
                        // Decided once per connection: its requests pay nothing for the rule.
                        None if self.unsecured.allows(peer.ip()) => self.serve(stream, services.app.clone()),
                        None => self.serve(stream, services.refused.clone()),
                    },
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(error = %e, "could not accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                _ = &mut shutdown => return,
            }
        }
    }

    fn serve(&self, stream: TcpStream, app: axum::Router) {
        let phase = self.phase.subscribe();
        let connection = self.builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)).with_upgrades();
        tokio::spawn(drive(connection, phase));
    }

    /// The handshake runs on the connection's own task; every request then carries the client's certificate.
    fn serve_tls(&self, stream: TcpStream, peer: std::net::SocketAddr, tls: Arc<TlsAcceptor>, app: axum::Router) {
        let phase = self.phase.subscribe();
        let builder = self.builder.clone();
        tokio::spawn(async move {
            let (stream, certificate) = match tls.accept(stream, true).await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS connection refused");
                    return;
                }
            };
            tls.audit_connection(peer, "HTTPS", &certificate);
            let service = app.map_request(move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(certificate.clone());
                request
            });
            let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)).with_upgrades();
            drive(connection, phase).await;
        });
    }

    /// Lets every open request finish within `grace`, then closes the connections still open. Returns how
    /// many had to be closed.
    pub async fn shut_down(self, grace: Duration) -> usize {
        self.phase.send_replace(Phase::Draining);
        if tokio::time::timeout(grace, self.phase.closed()).await.is_ok() {
            return 0;
        }
        let open = self.phase.receiver_count();
        self.phase.send_replace(Phase::Closing);
        // Each connection task ends as soon as it sees the change; wait a moment so sockets are closed and
        // requests dropped before the databases close.
        let _ = tokio::time::timeout(Duration::from_millis(200), self.phase.closed()).await;
        open
    }
}

/// Serves one connection until it ends or the phase closes it.
async fn drive<I, S, B>(connection: http1::UpgradeableConnection<I, S>, mut phase: watch::Receiver<Phase>)
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(connection);
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            changed = phase.changed() => match changed.map(|_| *phase.borrow_and_update()) {
                Ok(Phase::Draining) => connection.as_mut().graceful_shutdown(),
                Ok(Phase::Serving) => {}
                // Dropping the connection closes its socket and drops the request in progress.
                Ok(Phase::Closing) | Err(_) => return,
            },
        }
    }
}
