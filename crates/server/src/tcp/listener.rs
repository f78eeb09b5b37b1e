//! The TCP listener: accepts connections, serves each on its own task, and closes them all at shutdown.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::connection::{self, ConnectionContext};
use crate::landlord::Landlord;
use crate::security::server_security::ServerSecurity;

/// The running TCP listener and its connections.
pub struct TcpService {
    /// Set to true at shutdown; every connection holds a receiver, so the sender sees when all are gone.
    closing: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl TcpService {
    /// Starts accepting on `listener`.
    pub fn start(
        listener: TcpListener,
        landlord: std::sync::Arc<Landlord>,
        header_timeout: Duration,
        security: Option<std::sync::Arc<ServerSecurity>>,
        unsecured: crate::security::unsecured_access::UnsecuredAccess,
    ) -> TcpService {
        let closing = watch::channel(false).0;
        let context = ConnectionContext { landlord, header_timeout, security, unsecured };
        let accept = tokio::spawn(accept_loop(listener, context, closing.clone()));
        TcpService { closing, accept }
    }

    /// Stops accepting and closes every connection, waiting at most `grace` for their tasks to end.
    /// Returns how many connections were open.
    pub async fn shut_down(self, grace: Duration) -> usize {
        self.accept.abort();
        let open = self.closing.receiver_count();
        self.closing.send_replace(true);
        let _ = tokio::time::timeout(grace, self.closing.closed()).await;
        open
    }
}

async fn accept_loop(listener: TcpListener, context: ConnectionContext, closing: watch::Sender<bool>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let mut closed = closing.subscribe();
                let context = context.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = connection::serve(stream, peer, context) => {}
                        // Dropping the connection's future closes its socket.
                        _ = closed.wait_for(|closing| *closing) => {}
                    }
                });
            }
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!(error = %e, "could not accept a TCP connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
