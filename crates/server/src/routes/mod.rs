//! The router. Route modules mirror RavenDB's URL families.

mod admin_databases;
mod admin_logs;
mod attachments;
mod backups;
mod bulk_attachments;
mod bulk_docs;
mod bulk_insert;
mod certificates;
mod changes;
mod cluster_batch;
mod compaction;
mod compare_exchange;
pub(crate) mod counters;
mod database_config;
mod database_state;
mod docs;
mod expiration;
mod hilo;
mod imported_record;
mod index_performance;
mod index_trace;
mod indexes;
mod info_package;
mod io_metrics;
mod monitoring;
mod multi_get;
mod not_supported;
mod notifications;
mod operations;
mod patch;
mod queries;
mod restore;
mod revisions;
mod server;
mod smuggler;
mod smuggler_dir;
mod stats;
mod streams;
mod studio;
mod subscriptions;
mod tcp_info;
pub(crate) mod time_series;
mod time_series_config;
mod time_series_policy;

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, put};

/// Every method of a path, one handler (refusals that do not depend on the method).
fn all_methods<H, T>(handler: H) -> axum::routing::MethodRouter<AppState>
where
    H: axum::handler::Handler<T, AppState>,
    T: 'static,
{
    any(handler)
}
use axum::Router;

use crate::error::ApiError;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    let database = Router::new()
        .route(
            "/docs",
            get(docs::get_docs)
                .post(docs::post_docs)
                .put(docs::put_doc)
                .delete(docs::delete_doc)
                .head(docs::head_doc)
                .patch(patch::patch_doc),
        )
        .route("/bulk_docs", post(bulk_docs::bulk_docs))
        .route("/json-patch", axum::routing::patch(patch::json_patch))
        .route("/bulk_insert", post(bulk_insert::bulk_insert))
        .route("/smuggler/export", post(smuggler::export))
        .route("/smuggler/import", post(smuggler::import))
        .route("/admin/smuggler/import-dir", get(smuggler_dir::import_dir).post(smuggler_dir::import_dir))
        .route("/multi_get", post(multi_get::multi_get))
        .route("/streams/queries", post(streams::stream_query_post).get(streams::stream_query_get))
        .route("/streams/docs", get(streams::stream_docs))
        .route(
            "/attachments",
            put(attachments::put).get(attachments::get).head(attachments::get).post(attachments::get).delete(attachments::delete),
        )
        .route("/counters", get(counters::get).post(counters::post))
        .route("/cmpxchg", get(compare_exchange::get).put(compare_exchange::put).delete(compare_exchange::delete))
        .route("/timeseries", get(time_series::get).post(time_series::post))
        .route("/timeseries/ranges", get(time_series::get_ranges))
        .route("/timeseries/stats", get(time_series::stats))
        .route("/timeseries/config", get(time_series_config::get))
        .route("/timeseries/names/config", post(time_series_config::configure_names))
        .route("/admin/timeseries/config", post(time_series_config::configure))
        .route("/admin/timeseries/policy", put(time_series_policy::put).delete(time_series_policy::delete))
        .route("/debug/timeseries/policies", get(time_series_policy::stats))
        .route("/admin/expiration/config", post(expiration::post_expiration))
        .route("/admin/refresh/config", post(expiration::post_refresh))
        .route("/expiration/config", get(expiration::get_expiration))
        .route("/refresh/config", get(expiration::get_refresh))
        .route("/debug/expiration", get(expiration::stats))
        .route("/hilo/next", get(hilo::next))
        .route("/hilo/return", put(hilo::return_range))
        .route("/identity/next", post(hilo::identity_next))
        .route("/identity/seed", post(hilo::identity_seed))
        .route("/debug/identities", get(hilo::identities))
        .route("/changes", get(changes::changes).delete(changes::disconnect))
        .route("/changes/debug", get(changes::debug))
        .route("/stats", get(stats::database_stats))
        .route("/stats/detailed", get(stats::detailed_stats))
        .route("/collections/stats", get(stats::collection_stats))
        .route("/configuration/client", get(server::client_configuration))
        .route("/operations/next-operation-id", get(operations::next_operation_id))
        .route("/operations/state", get(operations::operation_state))
        .route("/operations/kill", post(operations::kill_operation))
        .route("/operations", get(operations::list_operations))
        .route(
            "/queries",
            post(queries::post_query).get(queries::get_query).patch(operations::patch_by_query).delete(operations::delete_by_query),
        )
        // The Node client deploys indexes with `PUT /indexes`, the others with `PUT /admin/indexes`.
        .route("/indexes", put(indexes::put_indexes).fallback(indexes::indexes))
        .route("/admin/record", get(database_config::record))
        .route("/admin/configuration/settings", put(database_config::put_settings).get(database_config::get_settings))
        .route(
            "/admin/connection-strings",
            put(database_config::put_connection_string)
                .get(database_config::get_connection_strings)
                .delete(database_config::delete_connection_string),
        )
        .route("/admin/sorters", all_methods(database_config::custom_sorters))
        .route("/sorters", all_methods(database_config::custom_sorters))
        .route("/admin/analyzers", all_methods(database_config::custom_analyzers))
        .route("/analyzers", all_methods(database_config::custom_analyzers))
        .route("/studio/sample-data", all_methods(database_config::sample_data))
        .route("/admin/indexes", put(indexes::put_indexes))
        .route("/admin/indexes/disable", post(indexes::disable))
        .route("/admin/indexes/enable", post(indexes::enable))
        .route("/admin/indexes/stop", post(indexes::stop))
        .route("/admin/indexes/start", post(indexes::start))
        .route("/indexes/set-lock", post(indexes::set_lock))
        .route("/indexes/set-priority", post(indexes::set_priority))
        .route("/indexes/has-changed", post(indexes::has_changed))
        .route("/indexes/terms", get(indexes::terms))
        .route("/indexes/stats", get(indexes::index_stats))
        .route("/indexes/errors", get(indexes::index_errors).delete(indexes::clear_index_errors))
        .route("/indexes/status", get(indexes::index_status))
        .route("/indexes/performance", get(index_performance::performance))
        .route("/indexes/performance/live", get(index_performance::live))
        .route("/debug/io-metrics", get(io_metrics::io_metrics))
        .route("/debug/io-metrics/live", get(io_metrics::live))
        .route("/notifications", get(notifications::list))
        .route("/notification-center/dismiss", post(notifications::dismiss))
        .route("/admin/indexes/trace", post(index_trace::trace))
        .route("/info/tcp", get(tcp_info::database_tcp_info))
        .route("/subscriptions", put(subscriptions::create).get(subscriptions::list).delete(subscriptions::delete))
        .route("/subscriptions/update", post(subscriptions::update))
        .route("/subscriptions/state", get(subscriptions::subscription_state))
        .route("/subscriptions/drop", post(subscriptions::drop_connections))
        .route("/subscriptions/connection-details", get(subscriptions::connection_details))
        .route("/admin/tasks/state", post(subscriptions::toggle_task))
        .route("/admin/periodic-backup", post(backups::put_periodic_backup))
        .route("/admin/backup", post(backups::backup_once))
        .route("/admin/backup/database", post(backups::backup_task_now))
        .route("/periodic-backup/history", get(backups::backup_history))
        .route("/admin/revisions/config", post(revisions::post_config))
        .route("/admin/revisions/conflicts/config", post(revisions::post_conflicts_config))
        .route("/admin/revisions", axum::routing::delete(revisions::delete))
        .route("/revisions/config", get(revisions::get_config))
        .route("/revisions/conflicts/config", get(revisions::get_conflicts_config))
        .route("/revisions", get(revisions::get))
        .route("/revisions/count", get(revisions::count))
        .route("/revisions/bin", get(revisions::bin))
        .route("/revisions/revert", post(revisions::revert))
        .route("/revisions/revert/docs", post(revisions::revert_docs));
    let router = Router::new()
        .route("/", get(studio::redirect_to_studio))
        .route("/studio", get(studio::redirect_to_studio))
        .route("/studio/", get(studio::index))
        .route("/studio/{*path}", get(studio::file))
        .route("/build/version", get(server::build_version))
        .route("/topology", get(server::topology))
        .route("/cluster/topology", get(server::cluster_topology))
        .route("/configuration/client", get(server::server_client_configuration))
        .route("/databases", get(admin_databases::list))
        .route("/admin/databases", get(admin_databases::record).put(admin_databases::create).delete(admin_databases::delete))
        .route("/admin/databases/disable", post(database_state::disable))
        .route("/admin/databases/enable", post(database_state::enable))
        .route("/admin/databases/promote", post(database_state::promote))
        .route("/admin/databases/reorder", post(database_state::reorder))
        .route("/admin/databases/node", put(database_state::add_node))
        .route("/admin/sorters", all_methods(database_config::custom_sorters))
        .route("/admin/analyzers", all_methods(database_config::custom_analyzers))
        .route("/admin/metrics", get(stats::metrics))
        .route("/admin/monitoring/v1/prometheus", get(monitoring::prometheus))
        .route("/admin/monitoring/v1/server", get(monitoring::server))
        .route("/admin/monitoring/v1/databases", get(monitoring::databases))
        .route("/admin/monitoring/v1/indexes", get(monitoring::indexes))
        .route("/admin/monitoring/v1/collections", get(monitoring::collections))
        .route("/admin/debug/info-package", get(info_package::info_package))
        .route("/admin/logs/configuration", get(admin_logs::configuration).post(admin_logs::set_configuration))
        .route("/admin/logs/watch", get(admin_logs::watch))
        .route("/operations/next-operation-id", get(server::next_operation_id_server))
        .route("/operations/state", get(operations::server_operation_state))
        .route("/admin/compact", post(compaction::compact))
        .route("/admin/restore/database", post(restore::restore_database))
        .route("/periodic-backup", get(backups::get_periodic_backup))
        .route("/periodic-backup/status", get(backups::periodic_backup_status))
        .route("/admin/debug/periodic-backup/timers", get(backups::timers))
        .route("/info/tcp", get(tcp_info::server_tcp_info))
        .route("/info/remote-task/tcp", get(tcp_info::remote_task_tcp_info))
        .nest("/databases/{db}", database)
        .route("/certificates/whoami", get(certificates::whoami))
        .route(
            "/admin/certificates",
            get(certificates::list).put(certificates::register).post(certificates::generate).delete(certificates::delete),
        )
        .route("/admin/certificates/edit", post(certificates::edit))
        .route("/admin/certificates/reload", post(certificates::reload))
        .route("/admin/certificates/refresh", post(certificates::refresh))
        .route("/admin/certificates/replace-cluster-cert", post(certificates::replace_server_certificate))
        .fallback(fallback)
        // A known path with another method is "no handler" too, answered in RavenDB's error shape.
        .method_not_allowed_fallback(fallback)
        // Innermost first: handlers see decompressed bodies with a checked coding; a secured server
        // authorizes before any body is read; the edge (limits, error JSON, request log) sees the request as
        // it arrived; responses are compressed last.
        .layer(axum::middleware::from_fn(crate::compression::decompress_request));
    // Only a server with a certificate checks access: the plain server's requests pay nothing for it.
    let router = match &state.security {
        Some(_) => router.layer(axum::middleware::from_fn_with_state(state.clone(), crate::security::authorization::authorize)),
        None => router,
    };
    let router = router
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::security::browser_guard::guard))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::middleware::edge))
        .layer(crate::compression::response_compression(state.config.response_compression))
        .with_state(state.clone());
    let _ = state.router.set(router.clone());
    router
}

/// What answers every request of a client the unsecured access rules do not serve.
pub fn refusal_router(state: AppState) -> Router {
    let allowed = state.config.security.unsecured_access.describe();
    let refuse = move || {
        let allowed = allowed.clone();
        async move {
            ApiError::Authorization(format!(
                "This server has no certificate and Security.UnsecuredAccessAllowed is '{allowed}': it does not serve clients from your address. Set Security.UnsecuredAccessAllowed (Local, PrivateNetwork, PublicNetwork) or secure the server with a certificate."
            ))
            .into_response()
        }
    };
    Router::new().fallback(refuse).layer(axum::middleware::from_fn_with_state(state.clone(), crate::middleware::edge)).with_state(state)
}

async fn fallback(method: Method, request: Request) -> Response {
    let path = request.uri().path();
    match not_supported::feature_of(path) {
        Some(feature) => {
            ApiError::NotSupported(format!("Corvid does not support {feature} yet ({method} {path} is RavenDB's endpoint for it)"))
                .into_response()
        }
        None => ApiError::RouteNotFound { method: method.to_string(), path: path.to_owned() }.into_response(),
    }
}
