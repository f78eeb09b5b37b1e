//! One pass of the policy runner. Which windows need rolling up is learnt from the change log of segments
//! (`item_changes`): every segment written or removed since the last pass marks its series dirty from the segment's
//! start (at or before every entry it changed), as RavenDB marks a series for rollup from a changed timestamp.
//! A dirty series is rolled up, in one merged write per series, for every window that closed since the mark: the
//! windows are recomputed from the source and the rollup series is rewritten from the first window that differs,
//! so late appends and deletes give the same answer as rolling up from scratch. Windows whose source is already
//! past its own retention are only filled in, never recomputed (their source is partly gone). Rollups of a
//! policy mark the next policy's series dirty in the same pass. Then retention removes, per level, entries older
//! than the level's retention, skipping series whose rollup of those entries is still pending.
//!
//! The dirty marks live in memory: after a restart the first pass reads the whole log, so every series is
//! checked once again (the rewrite changes nothing where the rollups are already right).

use std::collections::HashMap;
use std::sync::Arc;

use corvid_storage::{ItemKind, ReadTxn, Store, TransactionMerger, WriteTxn};
use corvid_types::id_key;

use super::config::{CollectionPolicies, TimeSeriesPolicies};
use super::rollup::roll_up;
use super::time_value::TimeValue;
use crate::write::metadata::refresh_document;
use crate::EngineError;

/// Series trimmed per merged write of the retention pass.
const RETENTION_BATCH: usize = 64;

/// A series: the document's lower-cased id and the lower-cased series name.
type SeriesKey = (String, String);

/// What the runner keeps between passes.
#[derive(Debug, Default)]
pub(crate) struct PassState {
    /// The last change-log etag read.
    pub cursor: u64,
    /// Series with windows to roll up, from this timestamp (unix milliseconds) on.
    pub dirty: HashMap<SeriesKey, i64>,
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PassOutcome {
    /// Series whose rollup series changed.
    pub series_rolled_up: u64,
    /// Rollup entries written.
    pub rollup_entries_written: u64,
    /// Series trimmed by retention.
    pub series_retained: u64,
    /// Entries removed by retention.
    pub entries_deleted: u64,
    /// Failures of single series (the pass goes on with the others).
    pub errors: Vec<String>,
}

/// One series to roll up into the next policy.
struct RollupWork {
    doc_key: String,
    source: String,
    level: usize,
    from: i64,
}

/// What rolling up one series changed.
struct RollupWrite {
    written: u64,
    first_changed: Option<i64>,
    source_end: Option<i64>,
}

fn collection_of(
    snapshot: &ReadTxn<'_>,
    cache: &mut HashMap<String, Option<String>>,
    doc_key: &str,
) -> Result<Option<String>, EngineError> {
    if let Some(known) = cache.get(doc_key) {
        return Ok(known.clone());
    }
    let collection = snapshot.document(doc_key)?.map(|d| d.collection);
    cache.insert(doc_key.to_owned(), collection.clone());
    Ok(collection)
}

/// The rollup series of `source` (`<raw>@<policy>`).
fn target_name(source: &str, policy: &str) -> String {
    let raw = source.split_once('@').map_or(source, |(raw, _)| raw);
    format!("{raw}@{policy}")
}

/// Rolls up the windows `[start, end)` of a series in the merger's transaction: windows before `fill_before`
/// are only added when missing; the others are rewritten from the first one that differs.
#[allow(clippy::too_many_arguments)]
fn rollup_series(
    txn: &mut WriteTxn<'_>,
    doc_key: &str,
    source: &str,
    target: &str,
    aggregation: TimeValue,
    from_rollup: bool,
    (start, end, fill_before): (i64, i64, i64),
    now_nanos: i64,
) -> Result<RollupWrite, EngineError> {
    let source_stats = txn.time_series_stats(doc_key, source)?;
    let source_end = source_stats.as_ref().map(|s| s.end);
    let entries = txn.time_series_entries(doc_key, source, start, end - 1)?;
    let computed = roll_up(&entries, aggregation, from_rollup).map_err(|e| EngineError::InvalidOperation(e.to_string()))?;
    let existing = txn.time_series_entries(doc_key, target, start, end - 1)?;
    let existed = txn.time_series_stats(doc_key, target)?.is_some();
    let (fill_computed, recomputed): (Vec<_>, Vec<_>) = computed.into_iter().partition(|e| e.timestamp < fill_before);
    let (fill_existing, kept): (Vec<_>, Vec<_>) = existing.into_iter().partition(|e| e.timestamp < fill_before);
    let mut additions: Vec<_> = fill_computed.into_iter().filter(|c| !fill_existing.iter().any(|e| e.timestamp == c.timestamp)).collect();
    let mut first_changed = additions.first().map(|e| e.timestamp);
    // The first window where what is stored and what the source gives part ways.
    let differs_at = recomputed.iter().zip(&kept).find(|(c, e)| c != e).map(|(c, e)| c.timestamp.min(e.timestamp)).or_else(|| {
        match recomputed.len().cmp(&kept.len()) {
            std::cmp::Ordering::Greater => Some(recomputed[kept.len()].timestamp),
            std::cmp::Ordering::Less => Some(kept[recomputed.len()].timestamp),
            std::cmp::Ordering::Equal => None,
        }
    });
    if let Some(at) = differs_at {
        txn.delete_time_series_range(doc_key, target, at, end - 1)?;
        additions.extend(recomputed.into_iter().filter(|e| e.timestamp >= at));
        first_changed = Some(first_changed.map_or(at, |f| f.min(at)));
    }
    let written = additions.len() as u64;
    if !additions.is_empty() {
        additions.sort_by_key(|e| e.timestamp);
        // The series keeps the source's spelling of the raw name.
        let name = source_stats.map_or_else(|| target.to_owned(), |s| target_name(&s.name, target.split_once('@').map_or("", |(_, p)| p)));
        txn.append_time_series(doc_key, &name, &additions)?;
    }
    let exists = txn.time_series_stats(doc_key, target)?.is_some();
    if existed != exists && txn.document(doc_key)?.is_some() {
        refresh_document(txn, doc_key, now_nanos)?;
    }
    Ok(RollupWrite { written, first_changed, source_end })
}

/// Runs one pass over the series of the configured collections.
pub(crate) fn run_pass(
    store: &Arc<Store>,
    merger: &Arc<TransactionMerger>,
    config: &TimeSeriesPolicies,
    state: &mut PassState,
    now_ms: i64,
    now_nanos: i64,
) -> Result<PassOutcome, EngineError> {
    let mut outcome = PassOutcome::default();
    let mut collections = HashMap::new();
    let mut work: Vec<RollupWork> = Vec::new();
    {
        let snapshot = store.read()?;
        let mut cursor = state.cursor;
        snapshot.item_changes_after(state.cursor, |change| {
            cursor = change.etag;
            if let (ItemKind::TimeSeriesSegment, Some(start)) = (change.kind, change.segment_start) {
                let mark = state.dirty.entry((change.doc_key, change.name_lower)).or_insert(start);
                *mark = (*mark).min(start);
            }
            true
        })?;
        state.cursor = cursor;
        let dirty = std::mem::take(&mut state.dirty);
        for ((doc_key, name_lower), from) in dirty {
            let Some(collection) = collection_of(&snapshot, &mut collections, &doc_key)? else { continue };
            let Some(policies) = config.collection(&collection).filter(|c| !c.disabled) else { continue };
            let Some(level) = policies.level_of(&name_lower).filter(|l| *l < policies.policies.len()) else { continue };
            let source = snapshot.time_series_stats(&doc_key, &name_lower)?.map_or(name_lower, |s| s.name);
            work.push(RollupWork { doc_key, source, level, from });
        }
    }
    work.sort_by_key(|w| w.level);
    let mut queue = std::collections::VecDeque::from(work);
    while let Some(item) = queue.pop_front() {
        let collection = collections.get(&item.doc_key).cloned().flatten().unwrap_or_default();
        let Some(policies) = config.collection(&collection) else { continue };
        match roll_up_one(merger, policies, &item, now_ms, now_nanos) {
            Ok(None) => {
                state.dirty.insert((item.doc_key.clone(), id_key(&item.source)), item.from);
            }
            Ok(Some((write, end))) => {
                if write.written > 0 || write.first_changed.is_some() {
                    outcome.series_rolled_up += 1;
                    outcome.rollup_entries_written += write.written;
                }
                let target = target_name(&item.source, &policies.policies[item.level].name);
                if let (Some(changed), true) = (write.first_changed, item.level + 1 < policies.policies.len()) {
                    // The next policy rolls up this rollup, later in this pass.
                    queue.push_back(RollupWork { doc_key: item.doc_key.clone(), source: target, level: item.level + 1, from: changed });
                }
                if write.source_end.is_some_and(|last| last >= end) {
                    state.dirty.insert((item.doc_key, id_key(&item.source)), end);
                }
            }
            Err(e) => {
                outcome.errors.push(format!("Rollup of '{}' of '{}' failed: {e}", item.source, item.doc_key));
            }
        }
    }
    retention(store, merger, config, state, &mut collections, now_ms, now_nanos, &mut outcome)?;
    Ok(outcome)
}

/// Rolls up one dirty series; None when none of its windows has closed yet.
fn roll_up_one(
    merger: &Arc<TransactionMerger>,
    policies: &CollectionPolicies,
    item: &RollupWork,
    now_ms: i64,
    now_nanos: i64,
) -> Result<Option<(RollupWrite, i64)>, EngineError> {
    let policy = &policies.policies[item.level];
    let aggregation = policy.aggregation;
    let end = aggregation.window_start(now_ms);
    let mut start = aggregation.window_start(item.from);
    let target_cutoff = policies.retention_cutoff(item.level + 1, now_ms);
    if target_cutoff != i64::MIN {
        start = start.max(aggregation.window_at_or_after(target_cutoff));
    }
    let source_cutoff = policies.retention_cutoff(item.level, now_ms);
    let fill_before = if source_cutoff == i64::MIN { i64::MIN } else { aggregation.window_at_or_after(source_cutoff) };
    if start >= end {
        return Ok(None);
    }
    let (doc_key, source) = (item.doc_key.clone(), item.source.clone());
    let target = target_name(&source, &policy.name);
    let from_rollup = item.level > 0;
    let write = merger.write_blocking(move |txn| {
        rollup_series(txn, &doc_key, &source, &target, aggregation, from_rollup, (start, end, fill_before), now_nanos)
    })?;
    Ok(Some((write, end)))
}

/// Removes entries past their level's retention, in merged writes of a few series each.
#[allow(clippy::too_many_arguments)]
fn retention(
    store: &Arc<Store>,
    merger: &Arc<TransactionMerger>,
    config: &TimeSeriesPolicies,
    state: &PassState,
    collections: &mut HashMap<String, Option<String>>,
    now_ms: i64,
    now_nanos: i64,
    outcome: &mut PassOutcome,
) -> Result<(), EngineError> {
    let mut due: Vec<(String, String, i64)> = Vec::new();
    {
        let snapshot = store.read()?;
        let mut failure = None;
        snapshot.visit_all_time_series(|doc_key, stats| {
            let collection = match collection_of(&snapshot, collections, doc_key) {
                Ok(c) => c,
                Err(e) => {
                    failure = Some(e);
                    return false;
                }
            };
            let Some(policies) = collection.and_then(|c| config.collection(&c).cloned()).filter(|c| !c.disabled) else { return true };
            let Some(level) = policies.level_of(&stats.name) else { return true };
            let cutoff = policies.retention_cutoff(level, now_ms);
            let pending = state.dirty.get(&(doc_key.to_owned(), id_key(&stats.name))).is_some_and(|from| *from <= cutoff);
            if cutoff != i64::MIN && stats.start <= cutoff && !pending {
                due.push((doc_key.to_owned(), stats.name, cutoff));
            }
            true
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
    }
    for batch in due.chunks(RETENTION_BATCH) {
        let batch = batch.to_vec();
        let (series, deleted) = merger.write_blocking(move |txn| {
            let (mut series, mut deleted) = (0u64, 0u64);
            for (doc_key, name, cutoff) in batch {
                let Some(before) = txn.time_series_stats(&doc_key, &name)? else { continue };
                let removed = txn.delete_time_series_range(&doc_key, &name, i64::MIN, cutoff)?;
                let after = txn.time_series_stats(&doc_key, &name)?.map_or(0, |s| s.count);
                deleted += before.count.saturating_sub(after);
                series += 1;
                if removed && txn.document(&doc_key)?.is_some() {
                    refresh_document(txn, &doc_key, now_nanos)?;
                }
            }
            Ok::<_, EngineError>((series, deleted))
        })?;
        outcome.series_retained += series;
        outcome.entries_deleted += deleted;
    }
    Ok(())
}
