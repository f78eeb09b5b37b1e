//! Corvid's engine: a `Database` with documents, batches, HiLo ranges, identities and statistics. It knows
//! no HTTP and no LMDB; its API is synchronous and its writes go through the storage layer's merger.

mod attachments;
mod batch;
mod commit_watch;
mod counters;
mod database;
mod document;
mod error;
mod hilo;
mod includes;
mod index_info;
pub mod indexing;
mod query;
mod reads;
mod stats;
mod wildcard;

pub use attachments::{AttachmentCommand, AttachmentDetails, AttachmentReply};
pub use batch::{BatchCommand, BatchReply, ExpectedChangeVector};
pub use corvid_storage::StagedBlob;
pub use counters::{CounterDetail, CounterOperation, CountersReply, DocumentCounters};
pub use database::{Database, DatabaseOptions};
pub use document::IncomingDocument;
pub use error::EngineError;
pub use hilo::{HiloRange, HiloRequest};
pub use index_info::IndexInfo;
pub use query::{QueryRequest, QueryResponse};
pub use reads::{LoadResult, PageRequest};
pub use stats::{CollectionStats, DatabaseStats};
