//! Reading a subscription's next batch: documents after its position in etag order, at most
//! `MaxDocsPerBatch` scanned (filtered-out ones count, as in RavenDB) and about 32 MB sent, each evaluated
//! against the criteria on one storage snapshot, with the documents they include.

use std::collections::HashSet;
use std::time::Duration;

use corvid_storage::DocumentRecord;
use corvid_types::id_key;

use super::criteria::{Collection, Outcome, SubscriptionCriteria};
use crate::document_json::DocumentJson;
use crate::time_series::{series_of_documents, TimeSeriesRange};
use crate::{CounterDetail, Database, EngineError};

/// RavenDB stops a batch at about this much document data.
pub(super) const MAX_BATCH_BYTES: usize = 32 << 20;

/// A document's included counters: its id, the counters (None: a named one it lacks), the names asked
/// for (empty: all).
pub type IncludedCounters = (String, Vec<Option<CounterDetail>>, Vec<String>);

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
    /// `include counters(...)`: per document sent; None when the query includes no counters.
    pub counter_includes: Option<Vec<IncludedCounters>>,
    /// `include timeseries(...)`: per document sent, one range per include; None when it includes none.
    pub time_series_includes: Option<Vec<(String, Vec<TimeSeriesRange>)>>,
    /// The etag of the last document scanned (the position once acknowledged); the start position when
    /// nothing was scanned.
    pub last_etag: u64,
    /// Change vector of the last document scanned.
    pub last_change_vector: Option<String>,
    /// Documents scanned (sent or filtered out).
    pub scanned: usize,
    /// The database's last etag in the batch's snapshot: nothing newer exists until a commit passes it.
    pub database_etag: u64,
    /// The stored key and etag of each item sent, in the order of `items` (what a concurrent worker holds).
    pub sent: Vec<(String, u64)>,
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
        match (&criteria.collection, criteria.revisions) {
            (Collection::Named(name), true) => snapshot.collection_revisions_after_etag(name, after, &mut collect)?,
            (Collection::Named(name), false) => snapshot.collection_documents_after_etag(name, after, &mut collect)?,
            (Collection::All, _) => snapshot.documents_after_etag(after, &mut collect)?,
        }
        if criteria.revisions {
            records = records.into_iter().map(|revision| with_predecessor(&snapshot, revision)).collect::<Result<_, _>>()?;
        }
        let mut included = HashSet::new();
        for record in records {
            batch.scanned += 1;
            batch.last_etag = record.etag;
            let change_vector = record.change_vector.clone();
            self.evaluate_into(&mut batch, record, &snapshot, criteria, sandbox.as_ref(), &mut included)?;
            batch.last_change_vector = Some(change_vector);
        }
        self.add_extra_includes(&mut batch, &snapshot, criteria)?;
        Ok(batch)
    }

    /// Evaluates one document against the criteria and adds what is sent (with its includes) to `batch`.
    pub(super) fn evaluate_into(
        &self,
        batch: &mut SubscriptionBatch,
        record: DocumentRecord,
        snapshot: &corvid_storage::ReadTxn<'_>,
        criteria: &SubscriptionCriteria,
        sandbox: Option<&corvid_js::Sandbox>,
        included: &mut HashSet<String>,
    ) -> Result<(), EngineError> {
        let key = id_key(&record.id);
        match criteria.evaluate(&record, snapshot, sandbox)? {
            Outcome::Skip => {}
            Outcome::Send { data, include_ids } => {
                batch.items.push(BatchItem { data, exception: None });
                batch.sent.push((key, record.etag));
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
                batch.items.push(BatchItem { data: format!("{{\"@metadata\":{metadata}}}"), exception: Some(error) });
                batch.sent.push((key, record.etag));
            }
        }
        Ok(())
    }

    /// The counters and time series the query includes, for every document sent.
    pub(super) fn add_extra_includes(
        &self,
        batch: &mut SubscriptionBatch,
        snapshot: &corvid_storage::ReadTxn<'_>,
        criteria: &SubscriptionCriteria,
    ) -> Result<(), EngineError> {
        let sent_keys: Vec<String> = batch.sent.iter().map(|(key, _)| key.clone()).collect();
        let extra = &criteria.extra_includes;
        if let Some(names) = &extra.counters {
            batch.counter_includes = Some(counters_of(snapshot, &sent_keys, names)?);
        }
        if !extra.time_series.is_empty() {
            batch.time_series_includes = Some(series_of_documents(snapshot, &sent_keys, &extra.time_series)?);
        }
        Ok(())
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

/// A revision as a revisions subscription evaluates and sends it: a document whose body is
/// `{"Current": revision, "Previous": the document's revision before it}` (null for a delete revision or
/// when there is none), under the revision's id, etag and change vector.
fn with_predecessor(snapshot: &corvid_storage::ReadTxn<'_>, revision: DocumentRecord) -> Result<DocumentRecord, EngineError> {
    let deleted = |r: &DocumentRecord| r.flags & corvid_storage::flags::DELETE_REVISION != 0;
    let previous = snapshot.revision_preceding(&id_key(&revision.id), revision.etag)?;
    let previous = previous.filter(|p| !deleted(p)).map(|p| p.to_json_string(false));
    let current = (!deleted(&revision)).then(|| revision.to_json_string(false));
    let body = format!("{{\"Current\":{},\"Previous\":{}}}", current.as_deref().unwrap_or("null"), previous.as_deref().unwrap_or("null"));
    Ok(DocumentRecord { body, client_metadata: "{}".into(), flags: 0, ..revision })
}

/// The counters `names` (empty: all) of each document, by stored key, as a batch includes them.
fn counters_of(snapshot: &corvid_storage::ReadTxn<'_>, keys: &[String], names: &[String]) -> Result<Vec<IncludedCounters>, EngineError> {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(id) = snapshot.document(key)?.map(|d| d.id) else { continue };
        let detail = |c: corvid_storage::CounterValue| CounterDetail { document_id: id.clone(), name: c.name, value: c.value };
        let counters = if names.is_empty() {
            snapshot.counters_of(key)?.into_iter().map(|c| Some(detail(c))).collect()
        } else {
            names.iter().map(|n| Ok(snapshot.counter(key, n)?.map(detail))).collect::<Result<Vec<_>, EngineError>>()?
        };
        out.push((id.clone(), counters, names.to_vec()));
    }
    Ok(out)
}
