//! Reading series on any transaction (a snapshot or the merger's): stats rows, segments overlapping a range,
//! and the entries in it.

use std::ops::Bound;

use heed::RoTxn;

use super::keys::{document_prefix, segment_key, segment_prefix, segment_start, series_key};
use super::segment::{decode_segment, TimeSeriesEntry};
use super::series_stats::{self, TimeSeriesStats};
use crate::tables::Tables;
use crate::StorageError;

/// A segment as read: its key, its start and its bytes.
pub(crate) struct StoredSegment {
    pub key: Vec<u8>,
    pub start: i64,
    pub bytes: Vec<u8>,
}

/// Keys LMDB could not hold cannot have been written.
pub(crate) fn keyable(doc_key: &str, name: &str) -> bool {
    !doc_key.is_empty() && doc_key.len() <= 1024 && name.len() <= corvid_types::MAX_NAME_BYTES
}

/// The stats row of a series (`name_lower` lower-cased).
pub(crate) fn stats(tables: &Tables, txn: &RoTxn<'_>, doc_key: &str, name_lower: &str) -> Result<Option<TimeSeriesStats>, StorageError> {
    if !keyable(doc_key, name_lower) {
        return Ok(None);
    }
    tables.time_series_stats.get(txn, &series_key(doc_key, name_lower))?.map(series_stats::decode).transpose()
}

/// Every series of a document, by lower-cased name.
pub(crate) fn series_of(tables: &Tables, txn: &RoTxn<'_>, doc_key: &str) -> Result<Vec<TimeSeriesStats>, StorageError> {
    let mut out = Vec::new();
    if !keyable(doc_key, "") {
        return Ok(out);
    }
    for entry in tables.time_series_stats.prefix_iter(txn, &document_prefix(doc_key))? {
        out.push(series_stats::decode(entry?.1)?);
    }
    Ok(out)
}

/// The segment holding `timestamp` if any (the last one starting at or before it), else the first one after
/// it.
pub(crate) fn segment_for(tables: &Tables, txn: &RoTxn<'_>, prefix: &[u8], timestamp: i64) -> Result<Option<StoredSegment>, StorageError> {
    let key = segment_key(prefix, timestamp);
    if let Some((k, v)) = tables.time_series.get_lower_than_or_equal_to(txn, &key)? {
        if k.starts_with(prefix) && k.len() == prefix.len() + 8 {
            return Ok(Some(StoredSegment { key: k.to_vec(), start: segment_start(k).unwrap_or(timestamp), bytes: v.to_vec() }));
        }
    }
    if let Some((k, v)) = tables.time_series.get_greater_than(txn, &key)? {
        if k.starts_with(prefix) && k.len() == prefix.len() + 8 {
            return Ok(Some(StoredSegment { key: k.to_vec(), start: segment_start(k).unwrap_or(timestamp), bytes: v.to_vec() }));
        }
    }
    Ok(None)
}

/// The start of the first segment after the one starting at `start`.
pub(crate) fn next_segment_start(tables: &Tables, txn: &RoTxn<'_>, prefix: &[u8], start: i64) -> Result<Option<i64>, StorageError> {
    match tables.time_series.get_greater_than(txn, &segment_key(prefix, start))? {
        Some((k, _)) if k.starts_with(prefix) && k.len() == prefix.len() + 8 => Ok(segment_start(k)),
        _ => Ok(None),
    }
}

/// The key to start a range read at: the segment holding `from`, or where one starting at `from` would be.
fn range_begin(tables: &Tables, txn: &RoTxn<'_>, prefix: &[u8], from: i64) -> Result<Vec<u8>, StorageError> {
    Ok(match tables.time_series.get_lower_than_or_equal_to(txn, &segment_key(prefix, from))? {
        Some((k, _)) if k.starts_with(prefix) && k.len() == prefix.len() + 8 => k.to_vec(),
        _ => segment_key(prefix, from),
    })
}

/// Segments that may hold entries in `[from, to]`, in order.
pub(crate) fn segments_overlapping(
    tables: &Tables,
    txn: &RoTxn<'_>,
    prefix: &[u8],
    from: i64,
    to: i64,
) -> Result<Vec<StoredSegment>, StorageError> {
    let mut out = Vec::new();
    let begin = range_begin(tables, txn, prefix, from)?;
    let end = segment_key(prefix, to);
    let range = (Bound::Included(begin.as_slice()), Bound::Included(end.as_slice()));
    for entry in tables.time_series.range(txn, &range)? {
        let (k, v) = entry?;
        out.push(StoredSegment { key: k.to_vec(), start: segment_start(k).unwrap_or(from), bytes: v.to_vec() });
    }
    Ok(out)
}

/// Visits the entries of a series in `[from, to]` in timestamp order until `visit` returns false.
pub(crate) fn visit_range(
    tables: &Tables,
    txn: &RoTxn<'_>,
    doc_key: &str,
    name_lower: &str,
    from: i64,
    to: i64,
    mut visit: impl FnMut(TimeSeriesEntry) -> bool,
) -> Result<(), StorageError> {
    if !keyable(doc_key, name_lower) || from > to {
        return Ok(());
    }
    let prefix = segment_prefix(doc_key, name_lower);
    let begin = range_begin(tables, txn, &prefix, from)?;
    let end = segment_key(&prefix, to);
    let range = (Bound::Included(begin.as_slice()), Bound::Included(end.as_slice()));
    for entry in tables.time_series.range(txn, &range)? {
        let (k, v) = entry?;
        for e in decode_segment(segment_start(k).unwrap_or(from), v)? {
            if e.timestamp < from {
                continue;
            }
            if e.timestamp > to || !visit(e) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The first and last timestamps of a series from its segments; None when it has none.
pub(crate) fn bounds(tables: &Tables, txn: &RoTxn<'_>, prefix: &[u8]) -> Result<Option<(i64, i64)>, StorageError> {
    let Some(first) = tables.time_series.prefix_iter(txn, prefix)?.next().transpose()? else {
        return Ok(None);
    };
    let start = segment_start(first.0).unwrap_or_default();
    let Some((k, v)) = tables.time_series.rev_prefix_iter(txn, prefix)?.next().transpose()? else {
        return Ok(None);
    };
    let last = decode_segment(segment_start(k).unwrap_or_default(), v)?;
    Ok(last.last().map(|e| (start, e.timestamp)))
}

/// The timestamp of the `n`-th entry from the end of a series (its first when it has fewer); None when empty.
pub(crate) fn nth_from_end(tables: &Tables, txn: &RoTxn<'_>, prefix: &[u8], n: usize) -> Result<Option<i64>, StorageError> {
    let mut left = n.max(1);
    let mut earliest = None;
    for entry in tables.time_series.rev_prefix_iter(txn, prefix)? {
        let (k, v) = entry?;
        let entries = decode_segment(segment_start(k).unwrap_or_default(), v)?;
        if entries.len() >= left {
            return Ok(Some(entries[entries.len() - left].timestamp));
        }
        left -= entries.len();
        earliest = entries.first().map(|e| e.timestamp).or(earliest);
    }
    Ok(earliest)
}
