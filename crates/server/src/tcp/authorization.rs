//! Who may use the TCP protocol. Corvid does not authenticate clients yet, so everyone may; the security
//! issue fills this in (a client certificate with access to the database, admin for server operations).

use std::net::SocketAddr;

use super::negotiation::ConnectionHeader;

/// Why a connection was refused, sent to the client as `AuthorizationFailed`.
#[derive(Debug)]
pub struct Refusal(pub String);

/// Decides whether the client at `peer` may run the operation its header asks for.
pub fn authorize(_header: &ConnectionHeader, _peer: SocketAddr) -> Result<(), Refusal> {
    Ok(())
}
