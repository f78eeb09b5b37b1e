//! The access every route needs: ONE table, by the route's pattern (axum's `MatchedPath`) and method
//! (`*`: any method). The authorization middleware looks a request up here; a route missing from the table
//! is refused to all but cluster admins, and a test enumerates the router so none goes missing.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::http::Method;

use super::access::Access::{self, *};

/// `(route pattern, method or "*", access)`.
const TABLE: &[(&str, &str, Access)] = &[
    // Server level.
    ("/build/version", "GET", Anyone),
    ("/certificates/whoami", "GET", ValidUser),
    ("/topology", "GET", ValidUser),
    ("/cluster/topology", "GET", ValidUser),
    ("/configuration/client", "GET", ValidUser),
    ("/databases", "GET", ValidUser),
    ("/info/tcp", "GET", ValidUser),
    ("/info/remote-task/tcp", "GET", ValidUser),
    ("/operations/next-operation-id", "GET", Operator),
    ("/operations/state", "GET", Operator),
    ("/admin/databases", "*", Operator),
    ("/admin/databases/disable", "POST", Operator),
    ("/admin/databases/enable", "POST", Operator),
    ("/admin/databases/promote", "POST", Operator),
    ("/admin/databases/reorder", "POST", Operator),
    ("/admin/databases/node", "PUT", Operator),
    ("/admin/sorters", "*", Operator),
    ("/admin/analyzers", "*", Operator),
    ("/admin/metrics", "GET", Operator),
    ("/admin/compact", "POST", Operator),
    // Operators manage certificates; the handlers keep cluster admin certificates to cluster admins.
    ("/admin/certificates", "*", Operator),
    ("/admin/certificates/edit", "POST", Operator),
    ("/admin/certificates/reload", "POST", ClusterAdmin),
    ("/admin/certificates/refresh", "POST", ClusterAdmin),
    ("/admin/certificates/replace-cluster-cert", "POST", ClusterAdmin),
    // The Studio's files (the browser presents its certificate like any client); `/` only redirects.
    ("/", "GET", Anyone),
    ("/studio", "GET", ValidUser),
    ("/studio/", "GET", ValidUser),
    ("/studio/{*path}", "GET", ValidUser),
    // Monitoring, logs and debug packages describe every database: operators only, as in RavenDB.
    ("/admin/monitoring/v1/prometheus", "GET", Operator),
    ("/admin/monitoring/v1/server", "GET", Operator),
    ("/admin/monitoring/v1/databases", "GET", Operator),
    ("/admin/monitoring/v1/indexes", "GET", Operator),
    ("/admin/monitoring/v1/collections", "GET", Operator),
    ("/admin/debug/info-package", "GET", Operator),
    ("/admin/logs/configuration", "*", Operator),
    ("/admin/logs/watch", "GET", Operator),
    // Backups: the server-level reads name their database in the query string, so they stay with operators.
    ("/admin/restore/database", "POST", Operator),
    ("/periodic-backup", "GET", Operator),
    ("/periodic-backup/status", "GET", Operator),
    ("/admin/debug/periodic-backup/timers", "GET", Operator),
    // Documents and their parts.
    ("/databases/{db}/docs", "GET", DatabaseRead),
    ("/databases/{db}/docs", "HEAD", DatabaseRead),
    // Loads of many ids send them in a POST body.
    ("/databases/{db}/docs", "POST", DatabaseRead),
    ("/databases/{db}/docs", "*", DatabaseWrite),
    ("/databases/{db}/bulk_docs", "POST", DatabaseWrite),
    ("/databases/{db}/json-patch", "PATCH", DatabaseWrite),
    ("/databases/{db}/bulk_insert", "POST", DatabaseWrite),
    // Each sub-request passes this table again.
    ("/databases/{db}/multi_get", "POST", DatabaseRead),
    ("/databases/{db}/streams/queries", "*", DatabaseRead),
    ("/databases/{db}/streams/docs", "GET", DatabaseRead),
    ("/databases/{db}/attachments", "GET", DatabaseRead),
    ("/databases/{db}/attachments", "HEAD", DatabaseRead),
    ("/databases/{db}/attachments", "POST", DatabaseRead),
    ("/databases/{db}/attachments", "*", DatabaseWrite),
    ("/databases/{db}/counters", "GET", DatabaseRead),
    ("/databases/{db}/counters", "POST", DatabaseWrite),
    ("/databases/{db}/cmpxchg", "GET", DatabaseRead),
    ("/databases/{db}/cmpxchg", "*", DatabaseWrite),
    ("/databases/{db}/timeseries", "GET", DatabaseRead),
    ("/databases/{db}/timeseries", "POST", DatabaseWrite),
    ("/databases/{db}/timeseries/ranges", "GET", DatabaseRead),
    ("/databases/{db}/timeseries/stats", "GET", DatabaseRead),
    ("/databases/{db}/timeseries/config", "GET", DatabaseRead),
    ("/databases/{db}/timeseries/names/config", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/timeseries/config", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/timeseries/policy", "PUT", DatabaseAdmin),
    ("/databases/{db}/admin/timeseries/policy", "DELETE", DatabaseAdmin),
    // HiLo ranges and identities are writes of the database.
    ("/databases/{db}/hilo/next", "GET", DatabaseWrite),
    ("/databases/{db}/hilo/return", "PUT", DatabaseWrite),
    ("/databases/{db}/identity/next", "POST", DatabaseWrite),
    ("/databases/{db}/identity/seed", "POST", DatabaseWrite),
    ("/databases/{db}/debug/identities", "GET", DatabaseRead),
    ("/databases/{db}/changes", "*", DatabaseRead),
    ("/databases/{db}/changes/debug", "GET", DatabaseRead),
    ("/databases/{db}/stats", "GET", DatabaseRead),
    ("/databases/{db}/stats/detailed", "GET", DatabaseRead),
    ("/databases/{db}/collections/stats", "GET", DatabaseRead),
    ("/databases/{db}/configuration/client", "GET", DatabaseRead),
    ("/databases/{db}/operations/next-operation-id", "GET", DatabaseRead),
    ("/databases/{db}/operations/state", "GET", DatabaseRead),
    ("/databases/{db}/operations/kill", "POST", DatabaseWrite),
    ("/databases/{db}/operations", "GET", DatabaseRead),
    // Queries read; patch and delete by query write.
    ("/databases/{db}/queries", "GET", DatabaseRead),
    ("/databases/{db}/queries", "POST", DatabaseRead),
    ("/databases/{db}/queries", "*", DatabaseWrite),
    ("/databases/{db}/indexes", "GET", DatabaseRead),
    ("/databases/{db}/indexes", "*", DatabaseAdmin),
    ("/databases/{db}/admin/record", "GET", DatabaseAdmin),
    ("/databases/{db}/admin/configuration/settings", "*", DatabaseAdmin),
    ("/databases/{db}/admin/connection-strings", "*", DatabaseAdmin),
    ("/databases/{db}/admin/sorters", "*", DatabaseAdmin),
    ("/databases/{db}/sorters", "*", DatabaseRead),
    ("/databases/{db}/admin/analyzers", "*", DatabaseAdmin),
    ("/databases/{db}/analyzers", "*", DatabaseRead),
    ("/databases/{db}/studio/sample-data", "*", DatabaseWrite),
    ("/databases/{db}/admin/indexes", "PUT", DatabaseAdmin),
    ("/databases/{db}/admin/indexes/disable", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/indexes/enable", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/indexes/stop", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/indexes/start", "POST", DatabaseAdmin),
    ("/databases/{db}/indexes/set-lock", "POST", DatabaseAdmin),
    ("/databases/{db}/indexes/set-priority", "POST", DatabaseAdmin),
    ("/databases/{db}/indexes/has-changed", "POST", DatabaseRead),
    ("/databases/{db}/indexes/terms", "GET", DatabaseRead),
    ("/databases/{db}/indexes/stats", "GET", DatabaseRead),
    ("/databases/{db}/indexes/errors", "GET", DatabaseRead),
    ("/databases/{db}/indexes/errors", "DELETE", DatabaseAdmin),
    ("/databases/{db}/indexes/status", "GET", DatabaseRead),
    ("/databases/{db}/info/tcp", "GET", DatabaseRead),
    ("/databases/{db}/subscriptions", "GET", DatabaseRead),
    ("/databases/{db}/subscriptions", "*", DatabaseWrite),
    ("/databases/{db}/subscriptions/update", "POST", DatabaseWrite),
    ("/databases/{db}/subscriptions/state", "GET", DatabaseRead),
    ("/databases/{db}/subscriptions/drop", "POST", DatabaseWrite),
    ("/databases/{db}/subscriptions/connection-details", "GET", DatabaseRead),
    ("/databases/{db}/admin/tasks/state", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/revisions/config", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/revisions/conflicts/config", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/revisions", "DELETE", DatabaseAdmin),
    ("/databases/{db}/revisions/config", "GET", DatabaseRead),
    ("/databases/{db}/revisions/conflicts/config", "GET", DatabaseRead),
    ("/databases/{db}/revisions", "GET", DatabaseRead),
    ("/databases/{db}/revisions/count", "GET", DatabaseRead),
    ("/databases/{db}/revisions/bin", "GET", DatabaseRead),
    ("/databases/{db}/revisions/revert", "POST", DatabaseAdmin),
    ("/databases/{db}/revisions/revert/docs", "POST", DatabaseWrite),
    ("/databases/{db}/admin/backup", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/backup/database", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/periodic-backup", "POST", DatabaseAdmin),
    ("/databases/{db}/periodic-backup/history", "GET", DatabaseRead),
    // RavenDB: export is a read, import a write, of a valid user with access to the database.
    ("/databases/{db}/smuggler/export", "POST", DatabaseRead),
    ("/databases/{db}/smuggler/import", "POST", DatabaseWrite),
    // Reads a folder of the server's disk: RavenDB asks for an operator.
    ("/databases/{db}/admin/smuggler/import-dir", "*", Operator),
    ("/databases/{db}/admin/expiration/config", "POST", DatabaseAdmin),
    ("/databases/{db}/admin/refresh/config", "POST", DatabaseAdmin),
    ("/databases/{db}/expiration/config", "GET", DatabaseRead),
    ("/databases/{db}/refresh/config", "GET", DatabaseRead),
    ("/databases/{db}/debug/expiration", "GET", DatabaseRead),
    ("/databases/{db}/debug/timeseries/policies", "GET", DatabaseRead),
    ("/databases/{db}/indexes/performance", "GET", DatabaseRead),
    ("/databases/{db}/indexes/performance/live", "GET", DatabaseRead),
    ("/databases/{db}/admin/indexes/trace", "POST", DatabaseAdmin),
    // RavenDB: the I/O metrics are a debug read; its notification center is the database's valid users'.
    ("/databases/{db}/debug/io-metrics", "GET", DatabaseRead),
    ("/databases/{db}/debug/io-metrics/live", "GET", DatabaseRead),
    ("/databases/{db}/notifications", "GET", DatabaseRead),
    ("/databases/{db}/notification-center/dismiss", "POST", DatabaseRead),
];

/// A route's accesses by method, and for any other method.
#[derive(Default)]
struct RouteAccess {
    by_method: Vec<(Method, Access)>,
    any: Option<Access>,
}

fn table() -> &'static HashMap<&'static str, RouteAccess> {
    static TABLE_BY_PATH: OnceLock<HashMap<&'static str, RouteAccess>> = OnceLock::new();
    TABLE_BY_PATH.get_or_init(|| {
        let mut by_path: HashMap<&'static str, RouteAccess> = HashMap::new();
        for &(path, method, access) in TABLE {
            let route = by_path.entry(path).or_default();
            match method {
                "*" => route.any = Some(access),
                name => route.by_method.push((Method::from_bytes(name.as_bytes()).expect("a method name"), access)),
            }
        }
        by_path
    })
}

/// The access `method` on the route `pattern` needs; None when the table has no entry for it.
pub fn required(method: &Method, pattern: &str) -> Option<Access> {
    let route = table().get(pattern)?;
    route.by_method.iter().find(|(m, _)| m == method).map(|(_, access)| *access).or(route.any)
}

/// Every route pattern of the table (for the test that compares it with the router).
#[cfg(test)]
pub fn patterns() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(path, _, _)| *path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_before_the_catch_all() {
        assert_eq!(required(&Method::GET, "/databases/{db}/docs"), Some(DatabaseRead));
        assert_eq!(required(&Method::PUT, "/databases/{db}/docs"), Some(DatabaseWrite));
        assert_eq!(required(&Method::PUT, "/databases/{db}/admin/indexes"), Some(DatabaseAdmin));
        assert_eq!(required(&Method::GET, "/databases/{db}/admin/indexes"), None);
        assert_eq!(required(&Method::GET, "/nowhere"), None);
    }
}
