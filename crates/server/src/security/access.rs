//! What a route needs (`Access`) and what a certificate holds (`Clearance` and per-database
//! `DatabaseAccess`, RavenDB's names), and the one rule that says whether the second covers the first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The access a route needs. Database levels apply to the database named in the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, with or without a certificate (RavenDB's `UnauthenticatedClients`).
    Anyone,
    /// Any registered certificate (`ValidUser`).
    ValidUser,
    /// Reading the database: loads, queries, streams, statistics.
    DatabaseRead,
    /// Changing its documents and their parts.
    DatabaseWrite,
    /// Its indexes, settings and tasks (`DatabaseAdmin`).
    DatabaseAdmin,
    /// Server operations: creating and deleting databases, certificates below cluster admin (`Operator`).
    Operator,
    /// Everything (`ClusterAdmin`).
    ClusterAdmin,
}

/// A registered certificate's clearance (RavenDB's `SecurityClearance`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Clearance {
    ClusterAdmin,
    Operator,
    ValidUser,
}

/// A `ValidUser`'s permission on one database (RavenDB's `DatabaseAccess`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DatabaseAccess {
    Admin,
    ReadWrite,
    Read,
}

/// What a client may do: its clearance and, for a `ValidUser`, its databases (lower-cased names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub clearance: Clearance,
    pub databases: BTreeMap<String, DatabaseAccess>,
}

impl Grant {
    /// Whether this grant covers `access`, for the database `database` (lower-cased) when the route has one.
    pub fn allows(&self, access: Access, database: Option<&str>) -> bool {
        match self.clearance {
            Clearance::ClusterAdmin => return true,
            Clearance::Operator => return access != Access::ClusterAdmin,
            Clearance::ValidUser => {}
        }
        let on_database = || database.and_then(|name| self.databases.get(name)).copied();
        match access {
            Access::Anyone | Access::ValidUser => true,
            Access::DatabaseRead => on_database().is_some(),
            Access::DatabaseWrite => matches!(on_database(), Some(DatabaseAccess::ReadWrite | DatabaseAccess::Admin)),
            Access::DatabaseAdmin => on_database() == Some(DatabaseAccess::Admin),
            Access::Operator | Access::ClusterAdmin => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(database: &str, access: DatabaseAccess) -> Grant {
        Grant { clearance: Clearance::ValidUser, databases: [(database.to_owned(), access)].into() }
    }

    #[test]
    fn database_permissions_nest() {
        let reader = user("db", DatabaseAccess::Read);
        assert!(reader.allows(Access::DatabaseRead, Some("db")));
        assert!(!reader.allows(Access::DatabaseWrite, Some("db")));
        assert!(!reader.allows(Access::DatabaseRead, Some("other")));
        let writer = user("db", DatabaseAccess::ReadWrite);
        assert!(writer.allows(Access::DatabaseWrite, Some("db")));
        assert!(!writer.allows(Access::DatabaseAdmin, Some("db")));
        assert!(user("db", DatabaseAccess::Admin).allows(Access::DatabaseAdmin, Some("db")));
        assert!(!writer.allows(Access::Operator, None));
    }

    #[test]
    fn clearances_above_users() {
        let operator = Grant { clearance: Clearance::Operator, databases: BTreeMap::new() };
        assert!(operator.allows(Access::DatabaseAdmin, Some("any")));
        assert!(operator.allows(Access::Operator, None));
        assert!(!operator.allows(Access::ClusterAdmin, None));
        let admin = Grant { clearance: Clearance::ClusterAdmin, databases: BTreeMap::new() };
        assert!(admin.allows(Access::ClusterAdmin, None));
    }
}
