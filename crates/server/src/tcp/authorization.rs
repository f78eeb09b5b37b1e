//! Who may use the TCP protocol. A server without a certificate serves everyone its unsecured access
//! rules let connect; a secured one needs a registered client certificate with access to the database (a
//! subscription) or any registered certificate (ping, test connection).

use std::sync::Arc;

use super::negotiation::{ConnectionHeader, Operation};
use crate::security::access::Access;
use crate::security::certificate_registry::Identity;
use crate::security::peer_certificate::PeerCertificate;
use crate::security::server_security::ServerSecurity;

/// Why a connection was refused, sent to the client as `AuthorizationFailed`.
#[derive(Debug)]
pub struct Refusal(pub String);

/// Decides whether the client may run the operation its header asks for.
pub fn authorize(
    header: &ConnectionHeader,
    security: Option<&ServerSecurity>,
    certificate: Option<&Arc<PeerCertificate>>,
) -> Result<(), Refusal> {
    let Some(security) = security else {
        return Ok(());
    };
    let Some(certificate) = certificate else {
        return Err(Refusal("This server requires a client certificate, and none was presented".into()));
    };
    if !certificate.is_valid_at(time::OffsetDateTime::now_utc().unix_timestamp()) {
        return Err(Refusal(format!("The client certificate {} is expired or not yet valid", certificate.thumbprint)));
    }
    let Identity::Known { grant, .. } = security.registry.identify(certificate) else {
        return Err(Refusal(format!("The client certificate {} is unknown to the server", certificate.thumbprint)));
    };
    let database = header.database_name.as_deref().map(str::to_lowercase);
    let access = match header.operation {
        Operation::Subscription => Access::DatabaseRead,
        Operation::None | Operation::Ping | Operation::TestConnection | Operation::Drop => Access::ValidUser,
        Operation::Replication | Operation::Cluster | Operation::Heartbeats => Access::ClusterAdmin,
    };
    if grant.allows(access, database.as_deref()) {
        Ok(())
    } else {
        let on = database.map(|db| format!(" on database '{db}'")).unwrap_or_default();
        Err(Refusal(format!("The client certificate {} has no access for {:?}{on}", certificate.thumbprint, header.operation)))
    }
}
