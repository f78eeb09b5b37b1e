//! Accepting connections and serving HTTP/1.1 on them (hyper): the header read timeout, and a shutdown
//! that lets open requests finish until a deadline and then closes whatever is still open.

use std::future::Future;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

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
}

impl Connections {
    pub fn new(header_read_timeout: Duration) -> Connections {
        let mut builder = http1::Builder::new();
        // The timer must be set for hyper to enforce the header read timeout at all.
        builder.timer(TokioTimer::new());
        builder.header_read_timeout((!header_read_timeout.is_zero()).then_some(header_read_timeout));
        Connections { phase: watch::channel(Phase::Serving).0, builder }
    }

    /// Accepts connections and serves `app` on each until `shutdown` resolves.
    pub async fn accept_until(&self, listener: &TcpListener, app: axum::Router, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => self.serve(stream, app.clone()),
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
        let mut phase = self.phase.subscribe();
        let connection = self.builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)).with_upgrades();
        tokio::spawn(async move {
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
