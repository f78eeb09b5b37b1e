//! Monitoring: what `/admin/monitoring/v1/*` reports (RavenDB's JSON shapes and the Prometheus text
//! exposition). Everything is read from counters the hot paths already keep and from the databases that are
//! open; a scrape never opens a database.

mod metrics_snapshot;
mod monitoring_json;
mod process_usage;
mod prometheus_text;
mod rate_sampler;

pub use metrics_snapshot::{gather, Reading, Sections};
pub use monitoring_json::{collections_json, databases_json, indexes_json, server_json};
pub use prometheus_text::{render as render_prometheus, Skip as PrometheusSkip, CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE};
pub use rate_sampler::RateSampler;
