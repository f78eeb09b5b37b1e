//! Queries: RQL text -> a plan (collection scan or automatic index) -> results from one storage snapshot.

mod execute;
mod planner;
pub(crate) mod projection;
mod reduce;

pub use execute::{QueryRequest, QueryResponse};
