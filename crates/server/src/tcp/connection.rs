//! One TCP connection: the header negotiation (up to RavenDB's 100 rounds), authorization, then the
//! operation the client asked for. Every failure is told to this client alone, as one JSON object.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::authorization::authorize;
use super::json_stream::{write_object, JsonReader};
use super::negotiation::{self, Agreement, ConnectionHeader, Operation};
use super::subscription_connection;
use crate::error::{ApiError, TcpError};
use crate::landlord::Landlord;
use crate::security::peer_certificate::ClientCertificate;
use crate::security::server_security::ServerSecurity;

/// RavenDB caps the header object at 2 KB; a little more leaves room for clients' extra keys.
const MAX_HEADER_BYTES: usize = 4096;
/// Rounds of version negotiation before the server gives up, as RavenDB does.
const MAX_NEGOTIATION_ROUNDS: usize = 100;

/// What a connection needs from the server.
#[derive(Clone)]
pub struct ConnectionContext {
    pub landlord: Arc<Landlord>,
    /// How long a client may take to send its header.
    pub header_timeout: Duration,
    /// Set: connections speak TLS and clients need a registered certificate.
    pub security: Option<Arc<ServerSecurity>>,
    /// Without a certificate, the client addresses served.
    pub unsecured: crate::security::unsecured_access::UnsecuredAccess,
}

/// Serves one connection until it ends; errors are reported to the client and logged, never propagated.
pub async fn serve(stream: TcpStream, peer: SocketAddr, context: ConnectionContext) {
    let _ = stream.set_nodelay(true);
    let Some(security) = context.security.clone() else {
        if !context.unsecured.allows(peer.ip()) {
            tracing::debug!(%peer, "TCP connection refused by Security.UnsecuredAccessAllowed");
            return;
        }
        let (read, write) = stream.into_split();
        return serve_split(read, write, peer, ClientCertificate(None), &context).await;
    };
    match security.tls.accept(stream, false).await {
        Ok((tls, certificate)) => {
            security.tls.audit_connection(peer, "TCP", &certificate);
            let (read, write) = tokio::io::split(tls);
            serve_split(read, write, peer, certificate, &context).await
        }
        Err(e) => tracing::debug!(%peer, error = %e, "TLS connection to the TCP listener refused"),
    }
}

async fn serve_split<R, W>(read: R, mut write: W, peer: SocketAddr, certificate: ClientCertificate, context: &ConnectionContext)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let mut reader = JsonReader::new(read);
    match run(&mut reader, &mut write, peer, &certificate, context).await {
        Ok(()) | Err(TcpError::Closed) => {}
        Err(error) => {
            tracing::debug!(%peer, %error, "TCP connection failed");
            if error.can_be_told() {
                let _ = write_object(&mut write, &error.to_json()).await;
            }
        }
    }
}

async fn run<R, W>(
    reader: &mut JsonReader<R>,
    write: &mut W,
    peer: SocketAddr,
    certificate: &ClientCertificate,
    context: &ConnectionContext,
) -> Result<(), TcpError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let timeout = if context.header_timeout.is_zero() { Duration::from_secs(3600) } else { context.header_timeout };
    let (header, version) = 'negotiation: {
        for _ in 0..MAX_NEGOTIATION_ROUNDS {
            let header = ConnectionHeader::parse(reader.next_object(MAX_HEADER_BYTES, timeout).await?)?;
            match negotiation::negotiate(header.operation, header.operation_version) {
                Agreement::Agreed(version) => break 'negotiation (header, version),
                Agreement::Offer(offered) => {
                    write_object(write, &negotiation::version_mismatch(offered, header.operation_version)).await?;
                }
                Agreement::OutOfRange => {
                    return Err(TcpError::UnsupportedVersion {
                        operation: format!("{:?}", header.operation),
                        version: header.operation_version,
                    })
                }
            }
        }
        return Err(TcpError::NegotiationRounds(MAX_NEGOTIATION_ROUNDS));
    };
    if let Err(refusal) = authorize(&header, context.security.as_deref(), certificate.0.as_ref()) {
        write_object(write, &negotiation::authorization_failed(version, &refusal.0)).await?;
        return Ok(());
    }
    write_object(write, &negotiation::accepted(version)).await?;
    match header.operation {
        // The client only wanted to know the server is there, or gave up negotiating.
        Operation::None | Operation::Ping | Operation::TestConnection | Operation::Drop => {
            if header.operation == Operation::Drop {
                tracing::debug!(%peer, info = header.info.as_deref().unwrap_or(""), "client dropped the TCP connection");
            }
            Ok(())
        }
        Operation::Subscription => {
            // The options come first: the Python client reads the header reply with one `recv` and cannot
            // parse anything glued to it.
            let options = reader.next_object(MAX_HEADER_BYTES, timeout).await?;
            let name = header.database_name.as_deref().unwrap_or_default();
            let database = match context.landlord.database(name).await {
                Ok(database) => database,
                Err(ApiError::DatabaseDoesNotExist(_)) => return Err(TcpError::DatabaseDoesNotExist(name.to_owned())),
                Err(e) => return Err(TcpError::Server(e.to_string())),
            };
            subscription_connection::serve(reader, write, database, options, format!("tcp://{peer}")).await
        }
        operation @ (Operation::Replication | Operation::Cluster | Operation::Heartbeats) => {
            Err(TcpError::NotSupported(format!("{operation:?}")))
        }
    }
}
