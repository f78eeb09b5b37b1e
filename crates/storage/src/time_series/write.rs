//! Changing series inside the merger's transaction: appends merge into the segment that holds their
//! timestamps (an equal timestamp is overwritten, as in RavenDB), range deletes rewrite the segments they
//! touch, and the stats row follows every change.

use corvid_types::id_key;

use super::keys::{document_prefix, segment_key, segment_prefix, series_key};
use super::read::{self, keyable};
use super::segment::{decode_segment, encode_segments, TimeSeriesEntry};
use super::series_stats::{self, TimeSeriesStats};
use crate::item_changes::ItemKind;
use crate::{ReadTxn, StorageError, WriteTxn};

/// Merges two runs of entries in timestamp order; on equal timestamps the entry of `incoming` wins.
fn merge(existing: Vec<TimeSeriesEntry>, incoming: &[TimeSeriesEntry]) -> Vec<TimeSeriesEntry> {
    let mut out = Vec::with_capacity(existing.len() + incoming.len());
    let mut new = incoming.iter().peekable();
    for old in existing {
        while let Some(n) = new.next_if(|n| n.timestamp < old.timestamp) {
            out.push(n.clone());
        }
        match new.next_if(|n| n.timestamp == old.timestamp) {
            Some(n) => out.push(n.clone()),
            None => out.push(old),
        }
    }
    out.extend(new.cloned());
    out
}

/// Sorts entries by timestamp and keeps the last one written for each timestamp.
pub fn sorted_unique(mut entries: Vec<TimeSeriesEntry>) -> Vec<TimeSeriesEntry> {
    // A stable sort keeps the order of equal timestamps, so the last one written is the one kept.
    entries.sort_by_key(|e| e.timestamp);
    let mut out: Vec<TimeSeriesEntry> = Vec::with_capacity(entries.len());
    for e in entries {
        match out.last_mut() {
            Some(last) if last.timestamp == e.timestamp => *last = e,
            _ => out.push(e),
        }
    }
    out
}

impl WriteTxn<'_> {
    /// The series `name` (any case) of the document whose lower-cased id is `doc_key`.
    pub fn time_series_stats(&self, doc_key: &str, name: &str) -> Result<Option<TimeSeriesStats>, StorageError> {
        read::stats(&self.tables, &self.txn, doc_key, &id_key(name))
    }

    /// Every series of a document, by lower-cased name.
    pub fn time_series_of(&self, doc_key: &str) -> Result<Vec<TimeSeriesStats>, StorageError> {
        read::series_of(&self.tables, &self.txn, doc_key)
    }

    /// The entries of a series in `[from, to]` (unix milliseconds).
    pub fn time_series_entries(&self, doc_key: &str, name: &str, from: i64, to: i64) -> Result<Vec<TimeSeriesEntry>, StorageError> {
        let mut out = Vec::new();
        read::visit_range(&self.tables, &self.txn, doc_key, &id_key(name), from, to, |e| {
            out.push(e);
            true
        })?;
        Ok(out)
    }

    fn replace_segment(&mut self, prefix: &[u8], old_key: Option<&[u8]>, entries: &[TimeSeriesEntry]) -> Result<(), StorageError> {
        if let Some(key) = old_key {
            self.txn.delete(self.tables.time_series, key)?;
            self.record_item_change(ItemKind::TimeSeriesSegment, key)?;
        }
        for (start, bytes) in encode_segments(entries) {
            let key = segment_key(prefix, start);
            self.txn.put(self.tables.time_series, &key, &bytes)?;
            self.record_item_change(ItemKind::TimeSeriesSegment, &key)?;
        }
        Ok(())
    }

    /// Writes the stats row after the series' entries changed by `count_change`; removes it when none is left.
    fn refresh_stats(&mut self, doc_key: &str, name: &str, old: Option<TimeSeriesStats>, count_change: i64) -> Result<(), StorageError> {
        let name_lower = id_key(name);
        let key = series_key(doc_key, &name_lower);
        match read::bounds(&self.tables, &self.txn, &segment_prefix(doc_key, &name_lower))? {
            None => {
                self.txn.delete(self.tables.time_series_stats, &key)?;
            }
            Some((start, end)) => {
                let count = old.as_ref().map_or(0, |s| s.count as i64) + count_change;
                let name = old.map_or_else(|| name.to_owned(), |s| s.name);
                let stats = TimeSeriesStats { name, count: count.max(0) as u64, start, end };
                self.txn.put(self.tables.time_series_stats, &key, &series_stats::encode(&stats))?;
            }
        }
        Ok(())
    }

    /// Appends entries (sorted by timestamp, one per timestamp: see [`sorted_unique`]) to the series `name` of a
    /// document, creating it; an entry at an existing timestamp replaces it. True when the series is new.
    pub fn append_time_series(&mut self, doc_key: &str, name: &str, entries: &[TimeSeriesEntry]) -> Result<bool, StorageError> {
        self.refuse_growth_when_low_space()?;
        let name_lower = id_key(name);
        if entries.is_empty() || !keyable(doc_key, &name_lower) {
            return Ok(false);
        }
        let old = self.time_series_stats(doc_key, name)?;
        let created = old.is_none();
        let prefix = segment_prefix(doc_key, &name_lower);
        let mut count_change = 0i64;
        let mut i = 0;
        while i < entries.len() {
            let target = read::segment_for(&self.tables, &self.txn, &prefix, entries[i].timestamp)?;
            let (old_key, existing, upper) = match target {
                Some(segment) => {
                    let upper = read::next_segment_start(&self.tables, &self.txn, &prefix, segment.start)?;
                    (Some(segment.key), decode_segment(segment.start, &segment.bytes)?, upper)
                }
                None => (None, Vec::new(), None),
            };
            let end = entries[i..].iter().position(|e| upper.is_some_and(|u| e.timestamp >= u)).map_or(entries.len(), |n| i + n);
            let before = existing.len() as i64;
            let merged = merge(existing, &entries[i..end]);
            count_change += merged.len() as i64 - before;
            self.replace_segment(&prefix, old_key.as_deref(), &merged)?;
            i = end;
        }
        self.refresh_stats(doc_key, name, old, count_change)?;
        Ok(created)
    }

    /// Removes the entries of a series in `[from, to]` (unix milliseconds). True when the series had entries
    /// and has none left (it no longer exists).
    pub fn delete_time_series_range(&mut self, doc_key: &str, name: &str, from: i64, to: i64) -> Result<bool, StorageError> {
        let name_lower = id_key(name);
        let Some(old) = self.time_series_stats(doc_key, name)? else { return Ok(false) };
        if from > to {
            return Ok(false);
        }
        let prefix = segment_prefix(doc_key, &name_lower);
        let mut count_change = 0i64;
        for segment in read::segments_overlapping(&self.tables, &self.txn, &prefix, from, to)? {
            let entries = decode_segment(segment.start, &segment.bytes)?;
            let before = entries.len() as i64;
            let kept: Vec<_> = entries.into_iter().filter(|e| e.timestamp < from || e.timestamp > to).collect();
            if kept.len() as i64 == before {
                continue;
            }
            count_change += kept.len() as i64 - before;
            self.replace_segment(&prefix, Some(&segment.key), &kept)?;
        }
        self.refresh_stats(doc_key, name, Some(old), count_change)?;
        Ok(self.time_series_stats(doc_key, name)?.is_none())
    }

    /// Removes every series of a document (it is being deleted).
    pub(crate) fn delete_document_time_series(&mut self, doc_key: &str) -> Result<(), StorageError> {
        let prefix = document_prefix(doc_key);
        for table in [self.tables.time_series, self.tables.time_series_stats] {
            let keys: Vec<Vec<u8>> =
                table.prefix_iter(&self.txn, &prefix)?.map(|e| e.map(|(k, _)| k.to_vec())).collect::<Result<_, _>>()?;
            for key in keys {
                self.txn.delete(table, &key)?;
                if table.name == crate::tables::TIME_SERIES {
                    self.record_item_change(ItemKind::TimeSeriesSegment, &key)?;
                }
            }
        }
        Ok(())
    }
}

impl ReadTxn<'_> {
    /// The series `name` (any case) of the document whose lower-cased id is `doc_key`.
    pub fn time_series_stats(&self, doc_key: &str, name: &str) -> Result<Option<TimeSeriesStats>, StorageError> {
        read::stats(&self.tables, &self.txn, doc_key, &id_key(name))
    }

    /// Every series of a document, by lower-cased name.
    pub fn time_series_of(&self, doc_key: &str) -> Result<Vec<TimeSeriesStats>, StorageError> {
        read::series_of(&self.tables, &self.txn, doc_key)
    }

    /// Visits the entries of a series in `[from, to]` (unix milliseconds) in order until `visit` returns false.
    pub fn visit_time_series(
        &self,
        doc_key: &str,
        name: &str,
        from: i64,
        to: i64,
        visit: impl FnMut(TimeSeriesEntry) -> bool,
    ) -> Result<(), StorageError> {
        read::visit_range(&self.tables, &self.txn, doc_key, &id_key(name), from, to, visit)
    }

    /// The timestamp of the `n`-th entry from the end of a series (its first when it has fewer); None when the
    /// series has no entries.
    pub fn time_series_nth_from_end(&self, doc_key: &str, name: &str, n: usize) -> Result<Option<i64>, StorageError> {
        let name_lower = id_key(name);
        if !keyable(doc_key, &name_lower) {
            return Ok(None);
        }
        read::nth_from_end(&self.tables, &self.txn, &segment_prefix(doc_key, &name_lower), n)
    }

    /// Visits every series of the database (document key and stats) in key order until `visit` returns false;
    /// the time-series policy runner's retention pass reads them.
    pub fn visit_all_time_series(&self, mut visit: impl FnMut(&str, TimeSeriesStats) -> bool) -> Result<(), StorageError> {
        for entry in self.tables.time_series_stats.iter(&self.txn)? {
            let (key, value) = entry?;
            let Some(split) = key.iter().position(|b| *b == crate::tables::NAME_SEPARATOR) else { continue };
            let doc_key = std::str::from_utf8(&key[..split])
                .map_err(|_| StorageError::corrupted(crate::tables::TIME_SERIES_STATS, "a key is not UTF-8"))?;
            if !visit(doc_key, series_stats::decode(value)?) {
                break;
            }
        }
        Ok(())
    }

    /// Number of stored segments of every series (RavenDB's `CountOfTimeSeriesSegments`).
    pub fn time_series_segment_count(&self) -> Result<u64, StorageError> {
        Ok(self.tables.time_series.len(&self.txn)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(timestamp: i64, v: f64) -> TimeSeriesEntry {
        TimeSeriesEntry { timestamp, values: vec![v], tag: None }
    }

    #[test]
    fn merge_overwrites_equal_timestamps_and_interleaves() {
        let merged = merge(vec![e(1, 1.0), e(3, 3.0), e(5, 5.0)], &[e(0, 0.5), e(3, 30.0), e(4, 4.0), e(9, 9.0)]);
        let got: Vec<_> = merged.iter().map(|x| (x.timestamp, x.values[0])).collect();
        assert_eq!(got, vec![(0, 0.5), (1, 1.0), (3, 30.0), (4, 4.0), (5, 5.0), (9, 9.0)]);
    }

    #[test]
    fn sorted_unique_keeps_the_last_write() {
        let got = sorted_unique(vec![e(5, 1.0), e(1, 1.0), e(5, 2.0)]);
        assert_eq!(got, vec![e(1, 1.0), e(5, 2.0)]);
    }
}
