//! The TLS side of accepting a connection (HTTP and the TCP listener share it): the handshake under a
//! deadline, the client's certificate read once, and a plain-HTTP request on the HTTPS port answered with a
//! clear error instead of a broken handshake.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::audit_log::AuditLog;
use super::peer_certificate::ClientCertificate;
use super::peer_certificate::PeerCertificate;

/// The first byte of every TLS connection (a handshake record).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Why a connection never got to TLS.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("the client spoke plain HTTP to the HTTPS port")]
    PlainHttp,
    #[error("the TLS handshake did not finish within {0:?}")]
    Timeout(Duration),
    #[error("TLS handshake failed: {0}")]
    Failed(std::io::Error),
}

/// Accepts TLS connections with the server's current certificate (replaced in place on a reload).
pub struct TlsAcceptor {
    acceptor: RwLock<tokio_rustls::TlsAcceptor>,
    /// Where connections are recorded, when the audit log is on.
    audit: Option<Arc<AuditLog>>,
    handshake_timeout: Duration,
    /// The public URL, named in the answer to plain HTTP.
    https_url: String,
}

impl TlsAcceptor {
    pub fn new(
        config: Arc<rustls::ServerConfig>,
        handshake_timeout: Duration,
        https_url: String,
        audit: Option<Arc<AuditLog>>,
    ) -> TlsAcceptor {
        TlsAcceptor { acceptor: RwLock::new(tokio_rustls::TlsAcceptor::from(config)), audit, handshake_timeout, https_url }
    }

    /// Records a connection in the audit log (when there is one).
    pub fn audit_connection(&self, peer: std::net::SocketAddr, protocol: &str, certificate: &ClientCertificate) {
        let Some(audit) = &self.audit else { return };
        match &certificate.0 {
            Some(c) => audit.record(&c.thumbprint, &c.subject, &format!("{protocol} connection from {peer}")),
            None => audit.record("-", "-", &format!("{protocol} connection from {peer} without a client certificate")),
        }
    }

    /// Serves new connections with `config` from now on (open ones keep theirs).
    pub fn replace(&self, config: Arc<rustls::ServerConfig>) {
        *self.acceptor.write() = tokio_rustls::TlsAcceptor::from(config);
    }

    /// The handshake; `answer_plain_http` writes an HTTP error to a client that did not speak TLS.
    pub async fn accept(
        &self,
        stream: TcpStream,
        answer_plain_http: bool,
    ) -> Result<(TlsStream<TcpStream>, ClientCertificate), HandshakeError> {
        let deadline = if self.handshake_timeout.is_zero() { Duration::from_secs(30) } else { self.handshake_timeout };
        let acceptor = self.acceptor.read().clone();
        let handshake = async {
            let mut first = [0u8; 1];
            let peeked = stream.peek(&mut first).await.map_err(HandshakeError::Failed)?;
            if peeked == 1 && first[0] != TLS_HANDSHAKE_RECORD {
                if answer_plain_http {
                    self.refuse_plain_http(stream).await;
                }
                return Err(HandshakeError::PlainHttp);
            }
            acceptor.accept(stream).await.map_err(HandshakeError::Failed)
        };
        let tls = tokio::time::timeout(deadline, handshake).await.map_err(|_| HandshakeError::Timeout(deadline))??;
        let certificate =
            tls.get_ref().1.peer_certificates().and_then(|chain| chain.first()).and_then(|der| PeerCertificate::from_der(der));
        Ok((tls, ClientCertificate(certificate.map(Arc::new))))
    }

    async fn refuse_plain_http(&self, mut stream: TcpStream) {
        let message = format!("This server only accepts HTTPS: use {} instead of http://", self.https_url);
        let body = serde_json::json!({
            "Type": "Raven.Client.Exceptions.Security.InsufficientTransportLayerProtectionException",
            "Message": message,
            "Error": format!("InsufficientTransportLayerProtectionException: {message}"),
        })
        .to_string();
        let response = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        // The request itself is never read: the answer goes out and the connection closes.
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}
