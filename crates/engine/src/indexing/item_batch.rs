//! What a counters or time-series index reads for one batch: the counters and segments changed after its last
//! etag (the storage's change log), each as the object RavenDB's maps see, and the items whose loaded
//! documents changed. An item is handed to the mapper like a document of its document's collection whose id is
//! the item key; an item that is gone (or whose document is) becomes a delete of that key.

use corvid_storage::{DocumentRecord, ItemChange, ItemKind, ReadTxn, ReferenceStore};
use corvid_types::{format_date_ms, id_key};
use serde_json::{json, Value};

use super::batch_apply::BatchInput;
use super::performance::BatchEnd;
use super::static_index::IndexSource;
use crate::EngineError;

/// The item kind an index source reads.
fn kind_of(source: IndexSource) -> Option<ItemKind> {
    match source {
        IndexSource::Counters => Some(ItemKind::Counter),
        IndexSource::TimeSeries => Some(ItemKind::TimeSeriesSegment),
        IndexSource::Documents => None,
    }
}

/// A counter as RavenDB's counter maps see it.
fn counter_json(document_id: &str, name: &str, value: i64) -> Value {
    json!({"Name": name, "Value": value, "DocumentId": document_id})
}

/// A value of an entry: whole numbers as integers, as RavenDB's index terms show them (`7`, not `7.0`).
fn value_json(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// A time-series segment as RavenDB's time-series maps see it.
fn segment_json(document_id: &str, segment: &corvid_storage::SegmentItem) -> Value {
    let entries: Vec<Value> = segment
        .entries
        .iter()
        .map(|e| {
            let values: Vec<Value> = e.values.iter().copied().map(value_json).collect();
            let first = values.first().cloned().unwrap_or(Value::Null);
            json!({"Timestamp": format_date_ms(e.timestamp), "Tag": e.tag, "Values": values, "Value": first})
        })
        .collect();
    // Per value position, over the entries that have it (RavenDB's segment summary).
    let width = segment.entries.iter().map(|e| e.values.len()).max().unwrap_or(0);
    let summary = |fold: fn(f64, f64) -> f64| -> Vec<Value> {
        (0..width)
            .map(|i| value_json(segment.entries.iter().filter_map(|e| e.values.get(i).copied()).reduce(fold).unwrap_or(0.0)))
            .collect()
    };
    let (min, max, sum) = (summary(f64::min), summary(f64::max), summary(|a, b| a + b));
    let start = segment.entries.first().map_or(0, |e| e.timestamp);
    let end = segment.entries.last().map_or(0, |e| e.timestamp);
    json!({
        "Name": segment.series_name, "DocumentId": document_id, "Start": format_date_ms(start), "End": format_date_ms(end),
        "Count": segment.entries.len(), "Min": min, "Max": max, "Sum": sum, "Entries": entries
    })
}

/// The item a change names as it is now, as a record to map; None when it is gone, its document is, or the
/// document is not in one of `collections` (empty: every collection).
fn current_item(snapshot: &ReadTxn<'_>, change: &ItemChange, collections: &[String]) -> Result<Option<DocumentRecord>, EngineError> {
    let Some(document) = snapshot.document(&change.doc_key)? else { return Ok(None) };
    if !collections.is_empty() && !collections.iter().any(|c| c.eq_ignore_ascii_case(&document.collection)) {
        return Ok(None);
    }
    let body = match (change.kind, change.segment_start) {
        (ItemKind::Counter, _) => match snapshot.counter(&change.doc_key, &change.name_lower)? {
            Some(counter) => counter_json(&document.id, &counter.name, counter.value),
            None => return Ok(None),
        },
        (ItemKind::TimeSeriesSegment, Some(start)) => match snapshot.time_series_segment(&change.doc_key, &change.name_lower, start)? {
            Some(segment) => segment_json(&document.id, &segment),
            None => return Ok(None),
        },
        (ItemKind::TimeSeriesSegment, None) => return Ok(None),
    };
    Ok(Some(DocumentRecord {
        id: change.item_key(),
        etag: change.etag,
        last_modified: document.last_modified,
        flags: 0,
        collection: document.collection,
        change_vector: document.change_vector,
        body: body.to_string(),
        client_metadata: "{}".to_owned(),
    }))
}

/// Reads the item changes after `from` (at most `batch`), and the items that load a document changed in
/// `(from, cut]`; None when `source` is documents.
pub(super) fn read_item_batch(
    source: IndexSource,
    collections: &[String],
    references: Option<&ReferenceStore>,
    snapshot: &ReadTxn<'_>,
    from: u64,
    last_etag: u64,
    batch: usize,
) -> Result<Option<(BatchInput, BatchEnd)>, EngineError> {
    let Some(kind) = kind_of(source) else { return Ok(None) };
    let mut changes = Vec::new();
    let mut cut = last_etag;
    let mut end = BatchEnd::NoMoreDocuments;
    snapshot.item_changes_after(from, |change| {
        if change.etag > last_etag {
            return false;
        }
        if change.kind != kind {
            return true;
        }
        changes.push(change);
        if changes.len() >= batch {
            cut = changes.last().map_or(last_etag, |c| c.etag);
            end = BatchEnd::DocumentCount(batch);
            return false;
        }
        true
    })?;
    // Items whose loaded documents changed are mapped again (their own change, if any, is in the batch).
    if let Some(references) = references.filter(|r| !r.is_empty().unwrap_or(true)) {
        let mut changed_documents = Vec::new();
        snapshot.documents_after_etag(from, |r| {
            if r.etag > cut {
                return false;
            }
            changed_documents.push(id_key(&r.id));
            true
        })?;
        snapshot.tombstones_after_etag(from, |t| {
            if t.etag > cut {
                return false;
            }
            changed_documents.push(id_key(&t.id));
            true
        })?;
        let own: std::collections::HashSet<String> = changes.iter().map(ItemChange::item_key).collect();
        let mut dependents = std::collections::BTreeSet::new();
        for key in changed_documents {
            for loading in references.loading(&key)? {
                if !own.contains(&loading) {
                    dependents.insert(loading);
                }
            }
        }
        changes.extend(dependents.iter().filter_map(|key| ItemChange::parse_key(kind, key)));
    }
    let mut records = Vec::new();
    let mut deletes = Vec::new();
    for change in &changes {
        match current_item(snapshot, change, collections)? {
            Some(record) => records.push(record),
            None => deletes.push(change.item_key()),
        }
    }
    Ok(Some((BatchInput { records, deletes, cut, bulk: false }, end)))
}
