//! Database statistics, computed from one snapshot.

use crate::{Database, EngineError};

/// The counts and etags of `/stats`, all read from one snapshot.
#[derive(Debug, Clone)]
pub struct DatabaseStats {
    /// Live documents.
    pub count_of_documents: u64,
    /// Deleted documents still remembered as tombstones.
    pub count_of_tombstones: u64,
    /// Identities (`users|` style counters) that have a value.
    pub count_of_identities: u64,
    /// The highest etag of a live document.
    pub last_doc_etag: u64,
    /// The highest etag given to anything (documents, tombstones, counters, attachments).
    pub last_database_etag: u64,
    /// This database's id, the one in its change vectors.
    pub database_id: String,
    /// Bytes the database's files take.
    pub size_on_disk: u64,
    /// Writes waiting in the merger's queue.
    pub queued_writes: u64,
    /// Attachments, one per document and name.
    pub count_of_attachments: u64,
    /// Distinct attachment blobs (by content hash).
    pub count_of_unique_attachments: u64,
    /// Documents that have counters.
    pub count_of_counter_entries: u64,
    /// Compare-exchange values.
    pub count_of_compare_exchange: u64,
    /// Revisions of every document (delete revisions included).
    pub count_of_revision_documents: u64,
    /// Stored time-series segments.
    pub count_of_time_series_segments: u64,
}

/// The per-collection document counts of `/collections/stats`.
#[derive(Debug, Clone)]
pub struct CollectionStats {
    /// Live documents in all collections.
    pub count_of_documents: u64,
    /// Each collection's name and document count.
    pub collections: Vec<(String, u64)>,
}

impl Database {
    /// The database's statistics, from one snapshot.
    pub fn stats(&self) -> Result<DatabaseStats, EngineError> {
        let snapshot = self.store.read()?;
        let (attachments, unique, counter_docs) = snapshot.attachment_and_counter_counts()?;
        Ok(DatabaseStats {
            count_of_attachments: attachments,
            count_of_unique_attachments: unique,
            count_of_counter_entries: counter_docs,
            count_of_compare_exchange: snapshot.count_compare_exchange()?,
            count_of_revision_documents: snapshot.count_revisions()?,
            count_of_time_series_segments: snapshot.time_series_segment_count()?,
            count_of_documents: snapshot.count_documents()?,
            count_of_tombstones: snapshot.count_tombstones()?,
            count_of_identities: snapshot.identities()?.len() as u64,
            last_doc_etag: snapshot.last_document_etag()?,
            last_database_etag: snapshot.last_etag()?,
            database_id: self.database_id().to_owned(),
            size_on_disk: self.store.size_on_disk(),
            queued_writes: self.merger_stats().queued_commands,
        })
    }

    /// Document counts per collection, from one snapshot.
    pub fn collection_stats(&self) -> Result<CollectionStats, EngineError> {
        let snapshot = self.store.read()?;
        Ok(CollectionStats { count_of_documents: snapshot.count_documents()?, collections: snapshot.collection_counts()? })
    }
}

/// What a monitoring scrape reports of a database: table sizes only, no scan, so a scrape stays cheap
/// however large the database is.
#[derive(Debug, Clone, Default)]
pub struct DatabaseCounts {
    /// Live documents.
    pub documents: u64,
    /// Tombstones of deleted documents.
    pub tombstones: u64,
    /// Revisions of every document.
    pub revisions: u64,
    /// Attachments, one per document and name.
    pub attachments: u64,
    /// Distinct attachment blobs.
    pub unique_attachments: u64,
    /// Bytes the database's document store takes on disk.
    pub size_on_disk: u64,
}

impl Database {
    /// The database's table sizes, from one snapshot (each an O(1) read of LMDB's statistics).
    pub fn counts(&self) -> Result<DatabaseCounts, EngineError> {
        let snapshot = self.store.read()?;
        let (attachments, unique_attachments) = snapshot.attachment_counts()?;
        Ok(DatabaseCounts {
            documents: snapshot.count_documents()?,
            tombstones: snapshot.count_tombstones()?,
            revisions: snapshot.count_revisions()?,
            attachments,
            unique_attachments,
            size_on_disk: self.store.size_on_disk(),
        })
    }
}
