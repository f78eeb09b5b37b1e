//! Database statistics, computed from one snapshot.

use crate::{Database, EngineError};

#[derive(Debug, Clone)]
pub struct DatabaseStats {
    pub count_of_documents: u64,
    pub count_of_tombstones: u64,
    pub count_of_identities: u64,
    pub last_doc_etag: u64,
    pub last_database_etag: u64,
    pub database_id: String,
    pub size_on_disk: u64,
    pub queued_writes: u64,
    pub count_of_attachments: u64,
    pub count_of_unique_attachments: u64,
    /// Documents that have counters.
    pub count_of_counter_entries: u64,
}

#[derive(Debug, Clone)]
pub struct CollectionStats {
    pub count_of_documents: u64,
    pub collections: Vec<(String, u64)>,
}

impl Database {
    pub fn stats(&self) -> Result<DatabaseStats, EngineError> {
        let snapshot = self.store.read()?;
        let (attachments, unique, counter_docs) = snapshot.attachment_and_counter_counts()?;
        Ok(DatabaseStats {
            count_of_attachments: attachments,
            count_of_unique_attachments: unique,
            count_of_counter_entries: counter_docs,
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

    pub fn collection_stats(&self) -> Result<CollectionStats, EngineError> {
        let snapshot = self.store.read()?;
        Ok(CollectionStats { count_of_documents: snapshot.count_documents()?, collections: snapshot.collection_counts()? })
    }
}
