//! Corvid's storage layer: the only crate that knows LMDB. One LMDB environment per database, the document
//! tables and their key layouts (docs/storage-format.md), snapshot reads, and the transaction merger that
//! turns many concurrent writes into one commit made durable by one journal flush.

#![warn(missing_docs)]

mod attachments;
mod blob_store;
mod catalog;
mod catalog_certificates;
mod checkpoint;
mod codec;
mod compact;
mod compare_exchange;
mod counters;
#[cfg(test)]
mod crash_image_tests;
mod disk_space;
mod error;
mod expiration;
mod group_flusher;
mod index_env;
mod invariants;
mod item_changes;
mod journal;
mod journal_file;
mod journal_record;
mod journal_recovery;
#[cfg(test)]
mod journal_tests;
mod journaled_txn;
mod map_growth;
mod map_reduce_store;
mod merger;
mod merger_stats;
mod preallocate;
mod read_only;
mod read_txn;
mod reader_gate;
mod record;
mod reduce_store;
mod reference_store;
mod revisions;
mod snapshot_copy;
mod store;
mod subscriptions;
mod tables;
mod temp_file_supply;
mod time_series;
mod unsynced_blob;
mod violation;
mod write_txn;
mod writeback;
mod zero_fill;

pub use attachments::AttachmentRecord;
pub use blob_store::{hash_of, BlobStore, BlobWriter, StagedBlob, BLOB_DIR};
pub use catalog::{Catalog, CatalogEntry, CATALOG_DIR};
pub use compact::{compact_closed_store, Compaction};
pub use compare_exchange::{CompareExchangeRecord, MAX_COMPARE_EXCHANGE_KEY_BYTES};
pub use counters::CounterValue;
pub use disk_space::RESERVE_FILE;
pub use error::StorageError;
pub use expiration::{DueTimer, TimerKind};
pub use invariants::check_closed_store;
pub use item_changes::{ItemChange, ItemKind, SegmentItem};
pub use map_growth::MAX_MAP_SIZE;
pub use map_reduce_store::{DocumentEntries, MapReduceStore, ReduceChanges, Reducer};
pub use merger::{TransactionMerger, WriteJob};
pub use merger_stats::{LatencyCounts, MergerStats, MergerStatsSnapshot};
pub use read_txn::ReadTxn;
pub use record::{flags, DocumentRecord, Tombstone};
pub use reduce_store::{MapOutput, ReduceRow, ReduceStore};
pub use reference_store::ReferenceStore;
pub use revisions::{revision_key, NewRevision};
pub use snapshot_copy::{sync_dir, SnapshotCopy};
pub use store::{Store, StoreOptions, DEFAULT_DISK_RESERVE_BYTES};
pub use tables::FORMAT_VERSION;
pub use temp_file_supply::TempFileSupply;
pub use time_series::{sorted_unique, TimeSeriesEntry, TimeSeriesStats, MAX_VALUES};
pub use unsynced_blob::UnsyncedBlob;
pub use violation::{InvariantReport, Violation};
pub use write_txn::{DeleteOutcome, PutOutcome, WriteTxn};
