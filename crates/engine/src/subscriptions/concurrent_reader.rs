//! Reading a batch for one of several `Concurrent` workers: the documents owed again (resend list) first,
//! in their current version, then documents past the shared scan, leaving out (and reporting) those another
//! worker holds. Limits as for a single worker's batch: `MaxDocsPerBatch` documents looked at, about 32 MB.

use std::collections::HashSet;

use corvid_storage::DocumentRecord;
use corvid_types::id_key;

use super::batch_reader::{SubscriptionBatch, MAX_BATCH_BYTES};
use super::concurrent_dispatch::{ConcurrentBatch, ConcurrentRead, ConcurrentSource};
use super::criteria::{Collection, SubscriptionCriteria};
use crate::{Database, EngineError};

impl ConcurrentBatch for SubscriptionBatch {
    fn sent(&self) -> &[(String, u64)] {
        &self.sent
    }

    fn set_position(&mut self, etag: u64, change_vector: Option<String>) {
        self.last_etag = etag;
        self.last_change_vector = change_vector;
    }
}

impl ConcurrentSource for Database {
    type Criteria = SubscriptionCriteria;
    type Batch = SubscriptionBatch;

    fn source_database_id(&self) -> &str {
        self.database_id()
    }

    fn read_concurrent_batch(
        &self,
        criteria: &SubscriptionCriteria,
        after: u64,
        max_docs: usize,
        owed: &[(String, u64)],
        held: &dyn Fn(&str) -> bool,
    ) -> Result<ConcurrentRead<SubscriptionBatch>, EngineError> {
        let snapshot = self.store.read()?;
        let sandbox = criteria.sandbox()?;
        let max_docs = max_docs.max(1);
        let batch = SubscriptionBatch { last_etag: after, database_etag: snapshot.last_etag()?, ..Default::default() };
        let mut read = ConcurrentRead { batch, consumed: Vec::new(), deferred: Vec::new(), scanned_to: after, resent: 0 };
        let mut records: Vec<DocumentRecord> = Vec::new();
        let mut bytes = 0usize;
        for (key, _) in owed {
            if read.consumed.len() >= max_docs || bytes >= MAX_BATCH_BYTES {
                break;
            }
            read.consumed.push(key.clone());
            match snapshot.document(key)? {
                // Deleted meanwhile, moved to another collection, or changed past the scan (which sends it).
                None => {}
                Some(document) if document.etag > after || !criteria_collection_has(criteria, &document) => {}
                Some(document) => {
                    bytes += document.body.len();
                    records.push(document);
                }
            }
        }
        read.resent = records.len();
        let mut looked_at = read.consumed.len();
        let room_left = looked_at < max_docs && bytes < MAX_BATCH_BYTES;
        let mut collect = |record: DocumentRecord| {
            looked_at += 1;
            read.scanned_to = record.etag;
            let key = id_key(&record.id);
            if held(&key) {
                read.deferred.push((key, record.etag));
            } else {
                bytes += record.body.len();
                records.push(record);
            }
            looked_at < max_docs && bytes < MAX_BATCH_BYTES
        };
        if room_left {
            match &criteria.collection {
                Collection::Named(name) => snapshot.collection_documents_after_etag(name, after, &mut collect)?,
                Collection::All => snapshot.documents_after_etag(after, &mut collect)?,
            }
        }
        read.batch.scanned = looked_at;
        let mut included = HashSet::new();
        for record in records {
            self.evaluate_into(&mut read.batch, record, &snapshot, criteria, sandbox.as_ref(), &mut included)?;
        }
        self.add_extra_includes(&mut read.batch, &snapshot, criteria)?;
        Ok(read)
    }
}

/// Whether a document read by key still belongs to the subscription's collection.
fn criteria_collection_has(criteria: &SubscriptionCriteria, document: &DocumentRecord) -> bool {
    match &criteria.collection {
        Collection::Named(name) => document.collection.eq_ignore_ascii_case(name),
        Collection::All => true,
    }
}
