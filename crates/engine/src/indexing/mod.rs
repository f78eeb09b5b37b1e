//! Background indexing: automatic index definitions, the registry of a database's indexes, and the worker
//! loop that keeps each index up to date.

mod definition;
mod registry;
mod worker;

pub use definition::{auto_index_name, Aggregation, AutoIndexDefinition, AutoIndexField, ALL_DOCS};
pub use registry::{AutoIndexLifetimes, IndexBackend, IndexHandle, IndexRegistry, IndexingError};
