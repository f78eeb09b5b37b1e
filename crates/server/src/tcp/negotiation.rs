//! RavenDB's TCP connection header (`TcpConnectionHeaderMessage`): which operation the client wants, at
//! which protocol version, and the server's reply (`TcpConnectionHeaderResponse`).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::TcpError;

/// The operations a header may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Operation {
    None,
    Drop,
    Subscription,
    Replication,
    Cluster,
    Heartbeats,
    Ping,
    TestConnection,
}

/// The first object a client sends. Unknown keys (`LicensedFeatures`, `ServerId`, ...) are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConnectionHeader {
    pub database_name: Option<String>,
    pub operation: Operation,
    pub operation_version: i64,
    #[serde(default)]
    pub info: Option<String>,
}

impl ConnectionHeader {
    pub fn parse(value: Value) -> Result<ConnectionHeader, TcpError> {
        serde_json::from_value(value).map_err(|e| TcpError::InvalidHeader(e.to_string()))
    }
}

/// Versions of the subscription protocol, newest first: 41400 adds document includes, 50000 counter
/// includes, 51000 time-series includes; 53000 (Node 5.4) only adds a compression capability, which Corvid
/// never uses, so it is served as 51000.
const SUBSCRIPTION_VERSIONS: &[i64] = &[53000, 51000, 50000, 41400, 40];
const HEARTBEATS_VERSIONS: &[i64] = &[54000, 42000, 41200, 20];

/// The versions Corvid speaks for an operation, newest first (none for the cluster's own operations).
fn supported_versions(operation: Operation) -> &'static [i64] {
    match operation {
        Operation::Subscription => SUBSCRIPTION_VERSIONS,
        Operation::Heartbeats => HEARTBEATS_VERSIONS,
        Operation::None | Operation::Ping => &[-1],
        Operation::Drop => &[-2],
        Operation::TestConnection => &[50],
        Operation::Replication | Operation::Cluster => &[],
    }
}

/// The outcome of one round of negotiation.
#[derive(Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Corvid speaks the requested version.
    Agreed(i64),
    /// Corvid offers this older version instead; the client may send another header asking for it.
    Offer(i64),
    /// Every version Corvid speaks is newer than the requested one (or there is none).
    OutOfRange,
}

/// RavenDB's rule: the requested version if supported, else the newest supported one below it.
pub fn negotiate(operation: Operation, requested: i64) -> Agreement {
    let versions = supported_versions(operation);
    if versions.contains(&requested) {
        return Agreement::Agreed(requested);
    }
    match versions.iter().find(|&&v| v < requested) {
        Some(&lower) => Agreement::Offer(lower),
        None => Agreement::OutOfRange,
    }
}

/// The reply `{"Status":"Ok","Version":n}`.
pub fn accepted(version: i64) -> Value {
    json!({"Status": "Ok", "Version": version, "LicensedFeatures": {"DataCompression": false}})
}

/// The reply offering an older version.
pub fn version_mismatch(offered: i64, requested: i64) -> Value {
    json!({"Status": "TcpVersionMismatch", "Version": offered,
           "Message": format!("Version {requested} is not supported; try version {offered}")})
}

/// The reply refusing the client.
pub fn authorization_failed(version: i64, why: &str) -> Value {
    json!({"Status": "AuthorizationFailed", "Version": version, "Message": why})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_clients_versions_are_agreed_at_once() {
        assert_eq!(negotiate(Operation::Subscription, 51000), Agreement::Agreed(51000));
        assert_eq!(negotiate(Operation::Subscription, 53000), Agreement::Agreed(53000));
        assert_eq!(negotiate(Operation::Subscription, 60000), Agreement::Offer(53000));
        assert_eq!(negotiate(Operation::Subscription, 52000), Agreement::Offer(51000));
        assert_eq!(negotiate(Operation::Subscription, 10), Agreement::OutOfRange);
        assert_eq!(negotiate(Operation::Replication, 1), Agreement::OutOfRange);
        assert_eq!(negotiate(Operation::Ping, -1), Agreement::Agreed(-1));
    }

    #[test]
    fn headers_of_both_clients_parse() {
        let python =
            json!({"DatabaseName":"Demo","Operation":"Subscription","SourceNodeTag":null,"OperationVersion":51000,"AuthorizeInfo":null});
        let node =
            json!({"DatabaseName":"Demo","Operation":"Subscription","OperationVersion":53000,"LicensedFeatures":{"dataCompression":true}});
        assert_eq!(ConnectionHeader::parse(python).unwrap().operation_version, 51000);
        assert_eq!(ConnectionHeader::parse(node).unwrap().operation, Operation::Subscription);
        assert!(ConnectionHeader::parse(json!({"Operation":"Bogus","OperationVersion":1})).is_err());
    }
}
