//! Background indexing: automatic index definitions, the registry of a database's indexes, and the worker
//! loop that keeps each index up to date.

mod control;
mod definition;
mod explain;
mod failure;
mod handle;
mod js_map;
mod output_collection;
mod output_references;
mod registry;
mod static_index;
mod worker;

pub use definition::{
    array_content_path, auto_index_name, group_by_array_content, Aggregation, AutoIndexDefinition, AutoIndexField, ALL_DOCS,
    MAX_AUTO_INDEX_FIELDS, MAX_AUTO_INDEX_NAME_CHARS,
};
pub use explain::{IndexExplanation, QueryExplanation};
pub use handle::{IndexBackend, IndexHandle, IndexingError, REPLACEMENT_PREFIX};
pub use output_collection::{output_collection_of, ReduceOutput};
pub use registry::{AutoIndexLifetimes, IndexRegistry};
pub use static_index::{compile_definition, SourceLanguage, StaticIndex};
