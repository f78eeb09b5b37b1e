//! Reading a subscription's next batch: documents after its position in etag order, at most
//! `MaxDocsPerBatch` scanned (filtered-out ones count, as in RavenDB) and about 32 MB sent, each evaluated
//! against the criteria on one storage snapshot, with the documents they include.

use std::time::Duration;

use corvid_storage::DocumentRecord;
use corvid_types::id_key;

use super::criteria::{Collection, Outcome, SubscriptionCriteria};
use crate::document_json::DocumentJson;
use crate::{Database, EngineError};

/// RavenDB stops a batch at about this much document data.
const MAX_BATCH_BYTES: usize = 32 << 20;

/// One item of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchItem {
    /// The JSON object sent as `Data` (with `@metadata`, `@id` and `@change-vector`).
    pub data: String,
    /// The projection's error for this document, sent beside its metadata.
    pub exception: Option<String>,
}

/// A batch read from the subscription's position.
#[derive(Debug, Default)]
pub struct SubscriptionBatch {
    /// What to send, in etag order.
    pub items: Vec<BatchItem>,
    /// Included documents (wire JSON), by id, each once.
    pub includes: Vec<(String, String)>,
    /// The etag of the last document scanned (the position once acknowledged); the start position when
    /// nothing was scanned.
    pub last_etag: u64,
    /// Change vector of the last document scanned.
    pub last_change_vector: Option<String>,
    /// Documents scanned (sent or filtered out).
    pub scanned: usize,
    /// The database's last etag in the batch's snapshot: nothing newer exists until a commit passes it.
    pub database_etag: u64,
}

impl Database {
    /// The next batch after etag `after`. Runs on the caller's thread (a blocking one).
    pub fn read_subscription_batch(
        &self,
        criteria: &SubscriptionCriteria,
        after: u64,
        max_docs: usize,
    ) -> Result<SubscriptionBatch, EngineError> {
        let snapshot = self.store.read()?;
        let sandbox = criteria.sandbox()?;
        let max_docs = max_docs.max(1);
        let mut batch = SubscriptionBatch { last_etag: after, database_etag: snapshot.last_etag()?, ..Default::default() };
        let mut records: Vec<DocumentRecord> = Vec::new();
        let mut bytes = 0usize;
        let mut collect = |record: DocumentRecord| {
            bytes += record.body.len();
            records.push(record);
            records.len() < max_docs && bytes < MAX_BATCH_BYTES
        };
        match &criteria.collection {
            Collection::Named(name) => snapshot.collection_documents_after_etag(name, after, &mut collect)?,
            Collection::All => snapshot.documents_after_etag(after, &mut collect)?,
        }
        let mut included = std::collections::HashSet::new();
        for record in records {
            batch.scanned += 1;
            batch.last_etag = record.etag;
            match criteria.evaluate(&record, &snapshot, sandbox.as_ref())? {
                Outcome::Skip => {}
                Outcome::Send { data, include_ids } => {
                    batch.items.push(BatchItem { data, exception: None });
                    for id in include_ids {
                        let key = id_key(&id);
                        if included.insert(key.clone()) {
                            if let Some(document) = snapshot.document(&key)? {
                                batch.includes.push((document.id.clone(), document.to_json_string(false)));
                            }
                        }
                    }
                }
                Outcome::Failed { metadata, error } => {
                    batch.items.push(BatchItem { data: format!("{{\"@metadata\":{metadata}}}"), exception: Some(error) })
                }
            }
            batch.last_change_vector = Some(record.change_vector);
        }
        Ok(batch)
    }

    /// The last etag committed in this database.
    pub fn last_committed_etag(&self) -> u64 {
        self.watch.current()
    }

    /// Waits (on this thread) until a commit goes past etag `seen`, or `timeout` passes; the last etag.
    /// How subscription connections wait for new documents without polling.
    pub fn wait_for_commit_beyond(&self, seen: u64, timeout: Duration) -> u64 {
        self.watch.wait_beyond(seen, timeout)
    }
}
