//! The indexing loop of one index: after each commit it reads the documents and tombstones newer than its
//! last processed etag from a storage snapshot, maps them and commits them to tantivy with the last etag as
//! the commit payload (so a restart resumes there).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

use corvid_index::MappedDocument;
use corvid_storage::MapOutput;
use corvid_storage::Store;
use corvid_types::{id_key, now_nanos};

use super::definition::{Aggregation, AutoIndexDefinition};
use super::registry::{IndexBackend, IndexHandle, IndexRegistry, IndexingError};
use crate::commit_watch::CommitWatch;
use crate::query::projection::value_at;
use crate::EngineError;

/// Documents per tantivy commit when keeping up with writes: small enough that new writes become visible
/// quickly.
const BATCH: usize = 8192;
/// Documents per commit while far behind (a new index over existing data): a commit costs fsyncs and a new
/// segment, so catching up commits rarely.
const CATCH_UP_BATCH: usize = 65_536;

pub fn run(handle: &IndexHandle, store: &Store, watch: &CommitWatch, registry: &Weak<IndexRegistry>) {
    let mut retired_narrower = false;
    while !handle.should_stop() {
        let outcome = catch_unwind(AssertUnwindSafe(|| run_batch(handle, store)));
        match outcome {
            Ok(Ok(true)) => continue,
            Ok(Ok(false)) => {
                *handle.faulted.lock() = None;
                if !retired_narrower {
                    if let Some(registry) = registry.upgrade() {
                        registry.retire_superseded(&handle.definition);
                    }
                    retired_narrower = true;
                }
                *handle.status.lock() = "Idle: caught up".into();
                watch.wait_beyond(handle.processed_etag.load(Ordering::Relaxed), Duration::from_secs(1));
            }
            Ok(Err(e)) => {
                tracing::error!(index = %handle.definition.name, error = %e, "indexing batch failed; retrying");
                *handle.faulted.lock() = Some(e.to_string());
                *handle.status.lock() = format!("Error: {e}");
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(_) => {
                tracing::error!(index = %handle.definition.name, "indexing batch panicked; retrying");
                *handle.faulted.lock() = Some("the indexing batch panicked".into());
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
    *handle.status.lock() = "Stopped".into();
}

/// Parses each document's body; a body that is not JSON is an indexing error of that document only.
fn map_documents(handle: &IndexHandle, records: Vec<corvid_storage::DocumentRecord>) -> Vec<MappedDocument> {
    let mut mapped = Vec::with_capacity(records.len());
    for record in records {
        handle.counters.map_attempts.fetch_add(1, Ordering::Relaxed);
        match serde_json::from_str(&record.body) {
            Ok(body) => {
                handle.counters.map_successes.fetch_add(1, Ordering::Relaxed);
                mapped.push(MappedDocument { key: id_key(&record.id), body });
            }
            Err(e) => {
                handle.counters.map_errors.fetch_add(1, Ordering::Relaxed);
                handle.record_error(IndexingError { document: record.id, message: e.to_string(), at: now_nanos(), action: "Map".into() });
            }
        }
    }
    mapped
}

/// A document's contribution to a map-reduce index: its reduce key (the JSON array of its group values)
/// and its count and sums.
fn reduce_output(definition: &AutoIndexDefinition, body: &serde_json::Value) -> MapOutput {
    let key: Vec<serde_json::Value> = definition.group_by.iter().map(|path| value_at(body, path)).collect();
    let mut values = vec![1.0];
    for aggregation in definition.sums() {
        if let Aggregation::Sum(path) = aggregation {
            values.push(number_sum(&value_at(body, path)));
        }
    }
    MapOutput { reduce_key: serde_json::Value::Array(key).to_string(), values }
}

fn number_sum(value: &serde_json::Value) -> f64 {
    match value {
        serde_json::Value::Number(n) => n.as_f64().unwrap_or(0.0),
        serde_json::Value::String(s) => s.trim().parse().unwrap_or(0.0),
        serde_json::Value::Array(items) => items.iter().map(number_sum).sum(),
        _ => 0.0,
    }
}

/// Indexes one batch; false when there was nothing to do.
fn run_batch(handle: &IndexHandle, store: &Store) -> Result<bool, EngineError> {
    let from = handle.processed_etag.load(Ordering::Relaxed);
    let snapshot = store.read()?;
    let last_etag = snapshot.last_etag()?;
    if last_etag <= from {
        return Ok(false);
    }
    *handle.status.lock() = format!("Indexing documents after etag {from}");
    let definition = &handle.definition;
    let batch = if last_etag - from > CATCH_UP_BATCH as u64 { CATCH_UP_BATCH } else { BATCH };
    let mut records = Vec::new();
    let mut cut = last_etag;
    let mut visit = |record: corvid_storage::DocumentRecord| {
        let etag = record.etag;
        records.push(record);
        if records.len() >= batch {
            cut = etag;
            return false;
        }
        true
    };
    if definition.is_all_docs() {
        snapshot.documents_after_etag(from, &mut visit)?;
    } else {
        snapshot.collection_documents_after_etag(&id_key(&definition.collection), from, &mut visit)?;
    }
    let mut deletes: Vec<String> = Vec::new();
    snapshot.tombstones_after_etag(from, |t| {
        if t.etag > cut {
            return false;
        }
        if definition.is_all_docs() || t.collection.eq_ignore_ascii_case(&definition.collection) {
            deletes.push(id_key(&t.id));
        }
        true
    })?;
    drop(snapshot);
    let indexed = match &handle.index {
        IndexBackend::Search(index) => {
            let upserts = map_documents(handle, records);
            // A document deleted and then written again in this batch stays.
            if !deletes.is_empty() && !upserts.is_empty() {
                let written: std::collections::HashSet<&str> = upserts.iter().map(|u| u.key.as_str()).collect();
                deletes.retain(|d| !written.contains(d.as_str()));
            }
            let changed = !upserts.is_empty() || !deletes.is_empty();
            if changed {
                index.apply(&upserts, &deletes, cut).map_err(|e| EngineError::Internal(format!("index {}: {e}", definition.name)))?;
            }
            changed
        }
        IndexBackend::Reduce(store) => {
            // Deletes first, so a document deleted and written again in this batch keeps its new output.
            let mut changes: Vec<(String, Option<MapOutput>)> = deletes.into_iter().map(|d| (d, None)).collect();
            for document in map_documents(handle, records) {
                let output = reduce_output(definition, &document.body);
                changes.push((document.key, Some(output)));
            }
            let changed = !changes.is_empty();
            if changed {
                store.apply(&changes, cut)?;
            }
            changed
        }
    };
    if indexed {
        handle.counters.batches.fetch_add(1, Ordering::Relaxed);
        handle.counters.last_indexing_time.store(now_nanos(), Ordering::Relaxed);
    }
    handle.processed_etag.store(cut, Ordering::Relaxed);
    Ok(true)
}
