//! Queries: RQL text -> a plan (collection scan or automatic index) -> results from one storage snapshot.

mod document_filter;
mod execute;
mod facets;
mod highlight;
mod literal;
mod planner;
pub(crate) mod projection;
mod reduce;
mod suggestions;

pub use execute::{QueryRequest, QueryResponse};

/// Plans a query without running it: its errors (syntax, unknown index) surface at once. True when the
/// plan created an automatic index (whoever runs the query next should wait for it).
pub(crate) fn check_plan(db: &crate::Database, request: &QueryRequest) -> Result<bool, crate::EngineError> {
    planner::plan(db, request).map(|plan| plan.created_index)
}
