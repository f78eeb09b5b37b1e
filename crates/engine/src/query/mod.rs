//! Queries: RQL text -> a plan (collection scan or automatic index) -> results from one storage snapshot.

mod execute;
mod planner;
mod projection;

pub use execute::{QueryRequest, QueryResponse};
