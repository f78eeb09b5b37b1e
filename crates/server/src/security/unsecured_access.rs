//! RavenDB's `Security.UnsecuredAccessAllowed`: without a server certificate, which client addresses are
//! served at all. Decided once per connection, so requests of a served connection pay nothing.

use std::net::IpAddr;

/// The address classes a server without a certificate serves (RavenDB's flags; `None` is the empty set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsecuredAccess {
    pub local: bool,
    pub private_network: bool,
    pub public_network: bool,
}

impl Default for UnsecuredAccess {
    /// RavenDB's default: this machine only.
    fn default() -> Self {
        UnsecuredAccess { local: true, private_network: false, public_network: false }
    }
}

impl UnsecuredAccess {
    /// Parses RavenDB's value: `None`, or flags among `Local`, `PrivateNetwork`, `PublicNetwork` separated
    /// by commas (or `|`).
    pub fn parse(text: &str) -> Result<UnsecuredAccess, String> {
        let mut access = UnsecuredAccess { local: false, private_network: false, public_network: false };
        for flag in text.split([',', '|']).map(str::trim).filter(|f| !f.is_empty()) {
            match flag.to_ascii_lowercase().as_str() {
                "none" => {}
                "local" => access.local = true,
                "privatenetwork" => access.private_network = true,
                "publicnetwork" => access.public_network = true,
                _ => return Err(format!("'{flag}' is not one of None, Local, PrivateNetwork, PublicNetwork")),
            }
        }
        Ok(access)
    }

    /// Whether a client at `ip` is served.
    /// As in RavenDB, each wider range includes the narrower ones (`PrivateNetwork` serves this machine too,
    /// `PublicNetwork` every address).
    pub fn allows(&self, ip: IpAddr) -> bool {
        match classify(ip) {
            AddressClass::Local => self.local || self.private_network || self.public_network,
            AddressClass::Private => self.private_network || self.public_network,
            AddressClass::Public => self.public_network,
        }
    }

    /// Whether clients beyond this machine are served.
    pub fn beyond_local(&self) -> bool {
        self.private_network || self.public_network
    }

    /// RavenDB's spelling of the value (messages).
    pub fn describe(&self) -> String {
        let names: Vec<&str> = [(self.local, "Local"), (self.private_network, "PrivateNetwork"), (self.public_network, "PublicNetwork")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        if names.is_empty() {
            "None".into()
        } else {
            names.join(", ")
        }
    }
}

enum AddressClass {
    Local,
    Private,
    Public,
}

fn classify(ip: IpAddr) -> AddressClass {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    match ip {
        _ if ip.is_loopback() => AddressClass::Local,
        IpAddr::V4(v4) if v4.is_private() || v4.is_link_local() => AddressClass::Private,
        // Unique local (fc00::/7) and link-local (fe80::/10) addresses.
        IpAddr::V6(v6) if (v6.segments()[0] & 0xfe00) == 0xfc00 || (v6.segments()[0] & 0xffc0) == 0xfe80 => AddressClass::Private,
        _ => AddressClass::Public,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_serves_this_machine_only() {
        let access = UnsecuredAccess::default();
        assert!(access.allows("127.0.0.1".parse().unwrap()));
        assert!(access.allows("::1".parse().unwrap()));
        assert!(!access.allows("192.168.1.4".parse().unwrap()));
        assert!(!access.allows("8.8.8.8".parse().unwrap()));
    }

    #[test]
    fn flags() {
        let access = UnsecuredAccess::parse("Local, PrivateNetwork").unwrap();
        assert!(access.allows("10.1.2.3".parse().unwrap()));
        assert!(access.allows("fd00::1".parse().unwrap()));
        assert!(!access.allows("1.1.1.1".parse().unwrap()));
        assert_eq!(UnsecuredAccess::parse("None").unwrap().describe(), "None");
        assert!(UnsecuredAccess::parse("Everyone").is_err());
        let public = UnsecuredAccess::parse("PublicNetwork").unwrap();
        assert!(public.allows("1.1.1.1".parse().unwrap()) && public.allows("127.0.0.1".parse().unwrap()));
        assert!(
            UnsecuredAccess::parse("PrivateNetwork").unwrap().allows("127.0.0.1".parse().unwrap()),
            "wider ranges include narrower ones"
        );
    }
}
