//! Corvid's engine: a `Database` with documents, batches, HiLo ranges, identities and statistics. It knows
//! no HTTP and no LMDB; its API is synchronous and its writes go through the storage layer's merger.
#![warn(missing_docs)]

mod attachments;
pub mod backup;
mod batch;
mod bulk_insert;
mod by_query;
mod cancellation;
mod catalog;
pub mod changes;
mod cluster_transaction;
mod commit_watch;
mod compaction;
mod compare_exchange;
mod counters;
mod database;
mod document;
mod document_json;
pub use document_json::flags_text;
mod error;
mod expiration;
mod hilo;
mod includes;
mod index_info;
mod index_performance;
mod index_tracing;
pub mod indexing;
mod io_environments;
mod json_patch;
mod json_stream;
mod operation_result;
mod operations;
mod patch;
mod patch_status;
mod query;
mod reads;
mod revisions;
pub mod smuggler;
mod stats;
mod storage_check;
pub mod subscriptions;
mod time_series;
mod version_hasher;
mod wildcard;
mod write;

pub use attachments::{AttachmentCommand, AttachmentDetails, AttachmentReply};
pub use batch::{validate_command, BatchCommand, BatchReply};
pub use bulk_insert::BulkInsertOptions;
pub use by_query::ByQueryOptions;
pub use cancellation::{CancelOnDrop, Cancellation};
pub use catalog::{CatalogEntry, CatalogError, DatabaseCatalog};
pub use cluster_transaction::{validate_cluster_command, ClusterCommand, ClusterTransactionReply, ATOMIC_GUARD_PREFIX};
pub use compaction::{compact_closed_database, Compaction};
pub use compare_exchange::{
    validate_key as validate_compare_exchange_key, validate_value as validate_compare_exchange_value, CompareExchangeOutcome,
    CompareExchangeValue,
};
pub use corvid_storage::{LatencyCounts, MergerStatsSnapshot, StagedBlob, StorageError};
pub use corvid_storage::{TimeSeriesEntry, TimeSeriesStats, MAX_VALUES as MAX_TIME_SERIES_VALUES};
pub use counters::{CounterDetail, CounterOperation, CountersReply, DocumentCounters};
pub use database::{Database, DatabaseOptions};
pub use document::IncomingDocument;
pub use error::EngineError;
pub use expiration::{ExpirationStatsSnapshot, SweepConfig, TaskStats};
pub use hilo::{HiloRange, HiloRequest};
pub use index_info::IndexInfo;
pub use index_performance::IndexPerformance;
pub use io_environments::{IoEnvironment, IoEnvironmentKind};
pub use json_patch::{parse_operations as parse_json_patch, JsonPatchOp};
pub use operation_result::{BulkInsertSummary, ByQueryDetail, ByQueryResult, OperationResult, RevertSummary};
pub use operations::{Operation, OperationEvent, OperationListener, OperationSnapshot, OperationState, Operations};
pub use patch::{validate_script, PatchCommand, PatchOutcome, PatchScript, PatchStatus};
pub use query::{QueryRequest, QueryResponse};
pub use reads::{LoadResult, PageRequest};
pub use revisions::{CollectionRevisions, ForcedRevision, RevertRequest, RevisionsConfig, RevisionsDeletion, RevisionsPage};
pub use stats::{CollectionStats, DatabaseCounts, DatabaseStats};
pub use storage_check::{check_closed_database, InvariantReport, Violation};
pub use time_series::policy as time_series_policy;
pub use time_series::{
    is_incremental, TimeSeriesDelete, TimeSeriesInclude, TimeSeriesIncrement, TimeSeriesOperation, TimeSeriesRange, TimeSeriesRangeRequest,
    INCREMENTAL_PREFIX,
};
pub use write::precondition::ExpectedChangeVector;
