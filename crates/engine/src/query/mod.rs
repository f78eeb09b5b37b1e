//! Queries: RQL text -> a plan (pure: collection scan, named index or the automatic index it needs) ->
//! resolved (the automatic index found or created) -> results from one storage snapshot.

mod catalog;
mod compare_exchange_calls;
pub(crate) mod document_filter;
mod execute;
mod explain;
mod facet_setup;
mod facets;
mod highlight;
mod literal;
mod more_like_this;
mod plan;
pub(crate) mod projection;
mod reduce;
mod request;
mod resolve;
mod response;
mod suggestions;
mod time_series;

pub use request::QueryRequest;
pub use response::QueryResponse;

/// Plans and resolves a query without running it: its errors (syntax, unknown index) surface at once. True
/// when resolving created an automatic index (whoever runs the query next should wait for it).
pub(crate) fn check_plan(db: &crate::Database, request: &QueryRequest) -> Result<bool, crate::EngineError> {
    db.plan_query(request).map(|resolved| resolved.created_index())
}
