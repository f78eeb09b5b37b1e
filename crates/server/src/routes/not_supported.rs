//! RavenDB endpoints the official clients call for features Corvid does not have yet. A request for one
//! answers RavenDB's `NotSupportedException` naming the feature, so a client reports "not supported by this
//! server" instead of a `RouteNotFoundException`, which reads as a bug. Checked only when no route matched,
//! so a feature that lands simply adds its routes and its line here goes.

/// Path prefixes under `/databases/{db}` and the feature they belong to.
const DATABASE_FEATURES: &[(&str, &str)] = &[
    ("/revisions/resolved", "conflict resolution (Corvid runs as a single node)"),
    ("/admin/revisions/config/enforce", "enforcing the revisions configuration on existing revisions"),
    ("/admin/revisions/orphaned", "adopting orphaned revisions"),
    ("/admin/revisions/bin-cleaner", "the revisions bin cleaner"),
    ("/admin/smuggler/import", "server-side import from a file or URL (smuggler)"),
    ("/admin/smuggler/import-s3-dir", "server-side import from a file or URL (smuggler)"),
    ("/admin/smuggler/migrate", "migration from another server (smuggler)"),
    ("/admin/backup", "backups to destinations other than a local folder"),
    ("/admin/periodic-backup", "backups to destinations other than a local folder"),
    ("/attachments/bulk", "retrieving attachments in bulk"),
    ("/admin/attachments/remote", "remote attachments"),
    ("/admin/tasks", "ongoing tasks (replication, ETL, backups)"),
    ("/tasks", "ongoing tasks (replication, ETL, backups)"),
    ("/task", "ongoing tasks (replication, ETL, backups)"),
    ("/admin/etl", "ETL"),
    ("/admin/queue-sink", "queue sinks"),
    ("/admin/cdc-sink", "CDC sinks"),
    ("/admin/data-archival", "data archival"),
    ("/admin/documents-compression", "documents compression"),
    ("/admin/ai", "AI agents and integrations"),
    ("/ai", "AI agents and integrations"),
    ("/admin/schema-validation", "schema validation"),
    ("/schema-validation", "schema validation"),
    ("/admin/configuration/client", "per-database client configuration"),
    ("/admin/configuration/studio", "Studio configuration"),
    ("/collections/stats/detailed", "detailed collection statistics"),
    ("/replication", "replication"),
    ("/admin/replication", "replication"),
    ("/admin/integrations", "integrations (PostgreSQL protocol)"),
    ("/admin/transactions", "transaction recording and replay"),
    ("/stats/essential", "essential statistics (use /stats)"),
    ("/healthcheck", "the database health check"),
];

/// Server-level path prefixes and the feature they belong to.
const SERVER_FEATURES: &[(&str, &str)] = &[
    // Registering, generating, listing, editing and deleting client certificates work; the rest does not.
    ("/admin/certificates", "this certificate operation (Let's Encrypt, local state)"),
    ("/certificates", "this certificate operation"),
    ("/admin/configuration/server-wide", "server-wide tasks and connection strings"),
    ("/admin/configuration/client", "server-wide client configuration"),
    ("/admin/configuration/studio", "Studio configuration"),
    ("/admin/console", "the administrator's JavaScript console"),
    ("/admin/databases/set-lock", "database lock modes"),
    ("/admin/restore", "restoring from destinations other than a local folder (restore points, cloud storage)"),
    ("/admin/backup", "backups to destinations other than a local folder"),
    ("/admin/cluster", "clusters (Corvid runs as a single node)"),
    ("/admin/license", "licenses (Corvid needs none)"),
    ("/admin/replication", "replication"),
    ("/admin/tcp", "TCP connection administration"),
    ("/changes", "the Changes API"),
    ("/info/remote-task", "remote tasks (replication, ETL)"),
    ("/admin/operations", "server-level operations"),
    ("/admin/backup-task", "backups"),
    ("/periodic-backup", "backups to destinations other than a local folder"),
    ("/cluster", "clusters (Corvid runs as a single node)"),
    ("/admin/databases/topology", "database topology changes (Corvid runs as a single node)"),
    ("/admin/databases/dynamic-node-distribution", "database topology changes (Corvid runs as a single node)"),
    ("/admin/databases/unused-ids", "database topology changes (Corvid runs as a single node)"),
    ("/admin/databases/shard", "sharding"),
    ("/admin/databases/orchestrator", "sharding"),
];

/// The feature a path belongs to when it is one of RavenDB's that Corvid does not serve yet.
pub fn feature_of(path: &str) -> Option<&'static str> {
    let (table, rest) = match path.strip_prefix("/databases/") {
        Some(after_db) => (DATABASE_FEATURES, after_db.find('/').map_or("", |i| &after_db[i..])),
        None => (SERVER_FEATURES, path),
    };
    table.iter().find(|(prefix, _)| starts_with_segment(rest, prefix)).map(|(_, feature)| *feature)
}

/// `path` is `prefix` or continues it with a new segment (`/cmpxchg/x`, not `/cmpxchgX`).
fn starts_with_segment(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_found_by_whole_segments() {
        assert_eq!(feature_of("/databases/db1/admin/timeseries/policy"), None);
        assert_eq!(feature_of("/databases/db1/admin/smuggler/import"), Some("server-side import from a file or URL (smuggler)"));
        assert_eq!(feature_of("/databases/db1/admin/smuggler/import-dir"), None, "served");
        assert_eq!(feature_of("/databases/db1/admin/smugglerX"), None);
        assert_eq!(feature_of("/databases/db1/docs"), None);
        assert!(feature_of("/admin/certificates/letsencrypt/force-renew").is_some_and(|f| f.contains("Let's Encrypt")));
        assert_eq!(feature_of("/databases/db1/admin/certificates"), None);
        assert_eq!(feature_of("/databases"), None);
    }
}
