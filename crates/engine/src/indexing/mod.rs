//! Background indexing: index definitions (automatic and static), the registry of a database's indexes, and
//! the worker loop that keeps each index up to date.
//!
//! Imports run one way: the vocabulary (`all_docs`, `field`, `aggregation`, `static_index`, `definition`)
//! knows nothing of compiling or running; `compile` checks a client's definition with `js_map` and
//! `linq_map`; `handle` is one running index; `worker` keeps one handle up to date through `mapper` and tells
//! its owner it caught up (and what the Changes API hears of) through `WorkerListener`; `registry` owns the handles and starts the workers.

#![warn(missing_docs)]

mod aggregation;
mod all_docs;
mod batch_apply;
mod compile;
mod control;
mod definition;
mod explain;
mod failure;
mod field;
mod handle;
mod item_batch;
mod js_map;
mod linq_map;
mod mapper;
mod output_collection;
mod output_references;
mod performance;
mod registry;
mod static_index;
mod trace;
mod trace_replay;
mod worker;

pub use aggregation::{array_content_path, group_by_array_content, Aggregation};
pub use all_docs::ALL_DOCS;
pub use compile::{compile_definition, DefinitionError, DefinitionProblem};
pub use definition::{auto_index_name, AutoIndexDefinition, MAX_AUTO_INDEX_FIELDS, MAX_AUTO_INDEX_NAME_CHARS};
pub use explain::{IndexExplanation, QueryExplanation};
pub use field::AutoIndexField;
pub use handle::{IndexBackend, IndexHandle, IndexingAction, IndexingError, REPLACEMENT_PREFIX};
pub use js_map::JsMapCompileError;
pub use output_collection::{output_collection_of, ReduceOutput};
pub use output_references::ReferencePatternError;
pub use performance::{BatchEnd, BatchPerformance, KEPT_BATCHES};
pub use registry::{AutoIndexLifetimes, IndexAnnouncer, IndexRegistry};
pub use static_index::{IndexSource, SourceLanguage, StaticIndex};
pub use trace::{TraceError, TraceSummary};
pub use trace_replay::{replay_trace, ReplayOptions, ReplayReport};
