//! `/admin/monitoring/v1/*`: RavenDB's monitoring endpoints (Prometheus text and JSON). They report the
//! server and the databases that are open; an unloaded database is never opened by a scrape.

use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::error::ApiResult;
use crate::monitoring::{self, Sections};
use crate::query::QueryParams;
use crate::responses::json_value;
use crate::state::AppState;

/// `GET /admin/monitoring/v1/prometheus[?skipServerMetrics=&skipDatabasesMetrics=&skipIndexesMetrics=&skipCollectionsMetrics=]`.
pub async fn prometheus(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let skip = monitoring::PrometheusSkip {
        server: query.get_bool("skipServerMetrics"),
        databases: query.get_bool("skipDatabasesMetrics"),
        indexes: query.get_bool("skipIndexesMetrics"),
        collections: query.get_bool("skipCollectionsMetrics"),
    };
    let sections = Sections { databases: !skip.databases, indexes: !skip.indexes, collections: !skip.collections };
    let reading = monitoring::gather(&state, sections, &[]).await?;
    let text = monitoring::render_prometheus(&reading, skip);
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, monitoring::PROMETHEUS_CONTENT_TYPE)], text).into_response())
}

async fn json_section(
    state: AppState,
    raw: Option<String>,
    sections: Sections,
    render: fn(&monitoring::Reading) -> Value,
) -> ApiResult<Response> {
    let names = QueryParams::parse(raw.as_deref())?.get_all("name");
    let reading = monitoring::gather(&state, sections, &names).await?;
    Ok(json_value(StatusCode::OK, &render(&reading)))
}

/// `GET /admin/monitoring/v1/server`.
pub async fn server(State(state): State<AppState>) -> ApiResult<Response> {
    json_section(state, None, Sections::default(), monitoring::server_json).await
}

/// `GET /admin/monitoring/v1/databases[?name=...]`.
pub async fn databases(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    json_section(state, raw, Sections { databases: true, ..Sections::default() }, monitoring::databases_json).await
}

/// `GET /admin/monitoring/v1/indexes[?name=...]`.
pub async fn indexes(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    json_section(state, raw, Sections { indexes: true, ..Sections::default() }, monitoring::indexes_json).await
}

/// `GET /admin/monitoring/v1/collections[?name=...]`.
pub async fn collections(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    json_section(state, raw, Sections { collections: true, ..Sections::default() }, monitoring::collections_json).await
}
