//! Applies one batch of documents and tombstones to an index: maps them (by paths, or through a static
//! index's maps), writes the entries or reduce changes, and commits with the batch's last etag. The worker
//! gives it what it read from a storage snapshot; a trace replay (`trace_replay.rs`) gives it what a trace
//! recorded.

use std::sync::atomic::Ordering;
use std::time::Instant;

use corvid_index::MappedDocument;
use corvid_storage::{DocumentEntries, DocumentRecord, MapOutput, TransactionMerger};
use corvid_types::{id_key, now_nanos};

use super::aggregation::{array_content_path, Aggregation};
use super::definition::AutoIndexDefinition;
use super::handle::{IndexBackend, IndexHandle, IndexingAction, IndexingError};
use super::mapper::{DocumentSource, MapError, Mapper, SnapshotHost};
use super::output_collection::OutputChanges;
use super::performance::BatchPerformance;
use crate::query::projection::value_at;
use crate::EngineError;

/// Several entries of one document become one: each field holds every entry's values.
pub(super) fn merge_entries(mut entries: Vec<serde_json::Map<String, serde_json::Value>>) -> serde_json::Value {
    if entries.len() == 1 {
        return serde_json::Value::Object(entries.pop().expect("one entry"));
    }
    let mut merged: serde_json::Map<String, serde_json::Value> = serde_json::Map::new();
    for entry in entries {
        for (field, value) in entry {
            let slot = merged.entry(field).or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if let serde_json::Value::Array(values) = slot {
                match value {
                    serde_json::Value::Array(items) => values.extend(items),
                    other => values.push(other),
                }
            }
        }
    }
    serde_json::Value::Object(merged)
}

/// What mapping made of one document for a search index.
enum Mapped {
    Entry(MappedDocument),
    /// No entries (or the map failed): the document's old entry goes.
    Nothing(String),
}

/// Whether the worker must drop its batch: the index is being deleted or stopped, or has failed too often.
fn interrupted(handle: &IndexHandle) -> bool {
    handle.should_stop() || handle.error_if_failing(false)
}

/// Runs a static index's maps, handing each document's outcome to `emit` as soon as it is mapped. A
/// failing document is an indexing error of that document only. False when the batch was interrupted
/// (see [`interrupted`]): it must not be committed.
fn map_static(
    handle: &IndexHandle,
    program: &Mapper,
    snapshot: &dyn DocumentSource,
    records: Vec<DocumentRecord>,
    references: &mut Vec<(String, Vec<String>)>,
    emit: &mut dyn FnMut(Mapped) -> Result<(), EngineError>,
) -> Result<bool, EngineError> {
    let mut host = SnapshotHost::new(snapshot);
    for record in records {
        if interrupted(handle) {
            return Ok(false);
        }
        handle.counters.map_attempts.fetch_add(1, Ordering::Relaxed);
        let mapped_entries = program.map_document(&record, &mut host);
        references.push((id_key(&record.id), host.take_loaded()));
        match mapped_entries {
            Ok(entries) => {
                handle.counters.map_successes.fetch_add(1, Ordering::Relaxed);
                if entries.is_empty() {
                    emit(Mapped::Nothing(id_key(&record.id)))?;
                } else {
                    emit(Mapped::Entry(MappedDocument { key: id_key(&record.id), body: merge_entries(entries) }))?;
                }
            }
            Err(e) => {
                handle.counters.map_errors.fetch_add(1, Ordering::Relaxed);
                let message = e.to_string();
                handle.record_error(IndexingError { document: record.id.clone(), message, at: now_nanos(), action: IndexingAction::Map });
                emit(Mapped::Nothing(id_key(&record.id)))?;
            }
        }
    }
    Ok(true)
}

/// The reduce key of the `n`-th entry of an item in a counters or time-series map index: each entry is its
/// own result, which the identity reduce hands back unchanged.
fn identity_key(item_key: &str, n: usize) -> String {
    serde_json::Value::String(format!("{item_key}\u{1e}{n}")).to_string()
}

/// Maps documents for a static map-reduce index: each document's entries under their reduce keys (None
/// for deleted documents and documents whose map failed, so their old contributions are taken back).
/// `None` when the batch was interrupted (see [`interrupted`]).
fn map_for_reduce(
    handle: &IndexHandle,
    program: &Mapper,
    identity: bool,
    snapshot: &dyn DocumentSource,
    records: Vec<DocumentRecord>,
    deletes: Vec<String>,
    references: &mut Vec<(String, Vec<String>)>,
) -> Option<Vec<(String, Option<DocumentEntries>)>> {
    let mut host = SnapshotHost::new(snapshot);
    // Deletes first, so a document deleted and written again in this batch keeps its new entries.
    let mut changes: Vec<(String, Option<DocumentEntries>)> = deletes.into_iter().map(|d| (d, None)).collect();
    for record in records {
        if interrupted(handle) {
            return None;
        }
        handle.counters.map_attempts.fetch_add(1, Ordering::Relaxed);
        let keyed = program.map_document(&record, &mut host).and_then(|entries| {
            entries
                .into_iter()
                .enumerate()
                .map(|(n, entry)| {
                    let text = serde_json::Value::Object(entry).to_string();
                    let key = if identity { identity_key(&record.id, n) } else { program.reduce_key(&text)? };
                    Ok((key, text))
                })
                .collect::<Result<DocumentEntries, MapError>>()
        });
        references.push((id_key(&record.id), host.take_loaded()));
        match keyed {
            Ok(entries) => {
                handle.counters.map_successes.fetch_add(1, Ordering::Relaxed);
                changes.push((id_key(&record.id), Some(entries)));
            }
            Err(e) => {
                handle.counters.map_errors.fetch_add(1, Ordering::Relaxed);
                let message = e.to_string();
                handle.record_error(IndexingError { document: record.id.clone(), message, at: now_nanos(), action: IndexingAction::Map });
                changes.push((id_key(&record.id), None));
            }
        }
    }
    Some(changes)
}

/// Parses each document's body, handing it to `emit`; a body that is not JSON is an indexing error of that
/// document only.
fn parse_documents(
    handle: &IndexHandle,
    records: Vec<DocumentRecord>,
    emit: &mut dyn FnMut(MappedDocument) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    for record in records {
        handle.counters.map_attempts.fetch_add(1, Ordering::Relaxed);
        match corvid_types::json::parse(&record.body) {
            Ok(body) => {
                handle.counters.map_successes.fetch_add(1, Ordering::Relaxed);
                emit(MappedDocument { key: id_key(&record.id), body })?;
            }
            Err(e) => {
                handle.counters.map_errors.fetch_add(1, Ordering::Relaxed);
                handle.record_error(IndexingError {
                    document: record.id,
                    message: e.to_string(),
                    at: now_nanos(),
                    action: IndexingAction::Map,
                });
            }
        }
    }
    Ok(())
}

/// A document's contribution to a map-reduce index: its reduce key (the JSON array of its group values)
/// and its count and sums.
fn reduce_output(definition: &AutoIndexDefinition, body: &serde_json::Value) -> MapOutput {
    // `array(path)` keys hold the whole array at the path, as a plain path with `[]` does here.
    let key: Vec<serde_json::Value> = definition.group_by.iter().map(|g| value_at(body, array_content_path(g).unwrap_or(g))).collect();
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

/// The results index entry of one reduce key, from its results (JSON texts); `None` when it has none.
pub(super) fn result_entry(key: String, texts: &[String]) -> Option<MappedDocument> {
    let entries: Vec<serde_json::Map<String, serde_json::Value>> = texts.iter().filter_map(|t| corvid_types::json::parse(t).ok()).collect();
    (!entries.is_empty()).then(|| MappedDocument { key, body: merge_entries(entries) })
}

/// What one batch holds: documents (in etag order, then documents re-read because what they load changed)
/// and tombstones up to `cut`.
pub(super) struct BatchInput {
    /// Documents to map.
    pub records: Vec<DocumentRecord>,
    /// Keys of deleted documents.
    pub deletes: Vec<String>,
    /// The etag the batch indexes up to: the commit payload.
    pub cut: u64,
    /// Read while catching up: tantivy indexes with more threads and merges once caught up.
    pub bulk: bool,
}

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Applied {
    /// The index was stopped, deleted or errored while mapping: nothing was committed.
    Interrupted,
    /// Committed when `changed` (a batch that changes nothing commits nothing).
    Done {
        /// Whether the batch changed the index.
        changed: bool,
    },
}

/// Where a batch reads what `load()` asks for; released (a storage snapshot: its read transaction ended)
/// before the batch commits, so a long commit never holds a snapshot.
pub(super) trait BatchSource: DocumentSource {
    /// Done reading.
    fn release(self);
}

impl BatchSource for corvid_storage::ReadTxn<'_> {
    fn release(self) {}
}

/// Maps and writes one batch and commits it with `input.cut` as the payload, filling the batch's counts and
/// stage times in `stats`. `merger` writes `OutputReduceToCollection` documents (none in a trace replay).
pub(super) fn apply_batch<S: BatchSource>(
    handle: &IndexHandle,
    merger: Option<&TransactionMerger>,
    mapper: &Mapper,
    source: S,
    input: BatchInput,
    stats: &mut BatchPerformance,
) -> Result<Applied, EngineError> {
    let counted = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let (mapped_before, map_errors_before) = (counted(&handle.counters.map_successes), counted(&handle.counters.map_errors));
    let (reduced_before, reduce_errors_before) = (counted(&handle.counters.reduce_attempts), counted(&handle.counters.reduce_errors));
    let outcome = apply(handle, merger, mapper, source, input, stats);
    stats.mapped = counted(&handle.counters.map_successes).saturating_sub(mapped_before);
    stats.map_errors = counted(&handle.counters.map_errors).saturating_sub(map_errors_before);
    stats.reduced_keys = counted(&handle.counters.reduce_attempts).saturating_sub(reduced_before);
    stats.reduce_errors = counted(&handle.counters.reduce_errors).saturating_sub(reduce_errors_before);
    outcome
}

fn apply<S: BatchSource>(
    handle: &IndexHandle,
    merger: Option<&TransactionMerger>,
    mapper: &Mapper,
    source: S,
    input: BatchInput,
    stats: &mut BatchPerformance,
) -> Result<Applied, EngineError> {
    let BatchInput { records, deletes, cut, bulk } = input;
    let definition = &handle.definition;
    let mut reference_changes: Vec<(String, Vec<String>)> = deletes.iter().map(|d| (d.clone(), Vec::new())).collect();
    let changed = match &handle.index {
        IndexBackend::Search(index) => {
            let failed = |e: corvid_index::IndexError| EngineError::Internal(format!("index {}: {e}", definition.name));
            index.set_bulk(bulk);
            // Entries go to tantivy as they are mapped, so mapping and indexing overlap.
            let mut writes = index.batch().map_err(failed)?;
            // Tombstones first: a document deleted and then written again in this batch stays.
            for key in &deletes {
                writes.delete(key).map_err(failed)?;
            }
            let mut written = deletes.len() as u64;
            let map_started = Instant::now();
            let complete = match mapper {
                Mapper::Paths => {
                    parse_documents(handle, records, &mut |entry| {
                        written += 1;
                        writes.upsert(&entry).map_err(failed)
                    })?;
                    true
                }
                static_mapper => map_static(handle, static_mapper, &source, records, &mut reference_changes, &mut |outcome| {
                    written += 1;
                    match outcome {
                        Mapped::Entry(entry) => writes.upsert(&entry),
                        Mapped::Nothing(key) => writes.delete(&key),
                    }
                    .map_err(failed)
                })?,
            };
            stats.map = map_started.elapsed();
            stats.entries_written = written;
            if !complete {
                // Dropping the uncommitted writes rolls them back; the batch is read again if indexing resumes.
                return Ok(Applied::Interrupted);
            }
            source.release();
            if let Some(references) = &handle.references {
                references.apply(&reference_changes)?;
            }
            let changed = written > 0;
            if changed {
                let commit_started = Instant::now();
                writes.commit(cut).map_err(failed)?;
                stats.commit = commit_started.elapsed();
            }
            changed
        }
        IndexBackend::StaticReduce { store, results } => {
            if matches!(mapper, Mapper::Paths) {
                return Err(EngineError::Internal(format!("index {} has no reduce program", definition.name)));
            }
            let program = mapper;
            let map_started = Instant::now();
            // A counters or time-series map index has no reduce: each entry is kept as its own result.
            let identity = definition.static_index.as_ref().is_some_and(|s| s.reduce.is_none());
            let mapped = map_for_reduce(handle, program, identity, &source, records, deletes, &mut reference_changes);
            stats.map = map_started.elapsed();
            let Some(changes) = mapped else {
                return Ok(Applied::Interrupted);
            };
            source.release();
            if let Some(references) = &handle.references {
                references.apply(&reference_changes)?;
            }
            let changed = !changes.is_empty();
            if changed {
                let mut reducing = std::time::Duration::ZERO;
                let mut reducer = |key: &str, entries: &[String]| -> Result<Vec<String>, String> {
                    handle.counters.reduce_attempts.fetch_add(1, Ordering::Relaxed);
                    let reduce_started = Instant::now();
                    let reduced = if identity { Ok(entries.to_vec()) } else { program.reduce(key, entries) };
                    reducing += reduce_started.elapsed();
                    match reduced {
                        Ok(out) => Ok(out),
                        Err(e) => {
                            handle.counters.reduce_errors.fetch_add(1, Ordering::Relaxed);
                            // One key's failure is that key's error; the other keys keep their results.
                            handle.record_error(IndexingError {
                                document: key.to_owned(),
                                message: e.to_string(),
                                at: now_nanos(),
                                action: IndexingAction::Reduce,
                            });
                            Ok(Vec::new())
                        }
                    }
                };
                let store_started = Instant::now();
                let outcome = store.apply(&changes, cut, &mut reducer)?;
                stats.reduce = reducing;
                stats.commit = store_started.elapsed().saturating_sub(reducing);
                let output_changes =
                    handle.output.as_ref().map(|_| OutputChanges { updated: outcome.updated.clone(), removed: outcome.removed.clone() });
                let mut removed = outcome.removed;
                let mut upserts = Vec::with_capacity(outcome.updated.len());
                for (key, texts) in outcome.updated {
                    match result_entry(key.clone(), &texts) {
                        Some(entry) => upserts.push(entry),
                        None => removed.push(key),
                    }
                }
                stats.entries_written = (upserts.len() + removed.len()) as u64;
                results.set_bulk(bulk);
                let merge_started = Instant::now();
                results.apply(&upserts, &removed, cut).map_err(|e| EngineError::Internal(format!("index {}: {e}", definition.name)))?;
                stats.merge = merge_started.elapsed();
                if let (Some(output), Some(output_changes), Some(merger)) = (&handle.output, output_changes, merger) {
                    if let Err(e) = output.apply(merger, output_changes) {
                        // The index has these results already; a resync writes them at the next batch.
                        handle.output_resync.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            changed
        }
        IndexBackend::Reduce(store) => {
            source.release();
            // Deletes first, so a document deleted and written again in this batch keeps its new output.
            let mut changes: Vec<(String, Option<MapOutput>)> = deletes.into_iter().map(|d| (d, None)).collect();
            let map_started = Instant::now();
            parse_documents(handle, records, &mut |document| {
                let output = reduce_output(definition, &document.body);
                changes.push((document.key, Some(output)));
                Ok(())
            })?;
            stats.map = map_started.elapsed();
            let changed = !changes.is_empty();
            stats.entries_written = changes.len() as u64;
            if changed {
                let commit_started = Instant::now();
                store.apply(&changes, cut)?;
                stats.commit = commit_started.elapsed();
            }
            changed
        }
    };
    if changed {
        handle.counters.batches.fetch_add(1, Ordering::Relaxed);
        handle.counters.last_indexing_time.store(now_nanos(), Ordering::Relaxed);
    }
    handle.processed_etag.store(cut, Ordering::Relaxed);
    Ok(Applied::Done { changed })
}
