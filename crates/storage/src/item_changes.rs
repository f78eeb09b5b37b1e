//! The change log of counters and time-series segments, read by counters and time-series indexes: every write
//! of a counter row or a segment row takes the next etag of the database (the sequence documents use), and the
//! log keeps one row per item at its latest etag. An index reads the rows after its last etag and looks each
//! item up in the same snapshot: present, it is mapped again; gone, its entries are removed.

use crate::tables::{decode_etag, etag_key, split_named_key, NAME_SEPARATOR};
use crate::time_series::{decode_segment, split_segment_key, TimeSeriesEntry};
use crate::{ReadTxn, StorageError, WriteTxn};

/// What kind of row an item change names (the first byte of a log value and of a `item_change_etags` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A counter row (`counters`).
    Counter,
    /// A time-series segment row (`time_series`).
    TimeSeriesSegment,
}

impl ItemKind {
    fn byte(self) -> u8 {
        match self {
            ItemKind::Counter => b'C',
            ItemKind::TimeSeriesSegment => b'T',
        }
    }

    fn from_byte(b: u8) -> Option<ItemKind> {
        match b {
            b'C' => Some(ItemKind::Counter),
            b'T' => Some(ItemKind::TimeSeriesSegment),
            _ => None,
        }
    }
}

/// One row of the change log: the latest change of a counter or a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemChange {
    /// The etag of the change.
    pub etag: u64,
    /// Counter or segment.
    pub kind: ItemKind,
    /// The document's lower-cased id.
    pub doc_key: String,
    /// The counter's or series' lower-cased name.
    pub name_lower: String,
    /// The segment's start (unix milliseconds); None for counters.
    pub segment_start: Option<i64>,
}

impl ItemChange {
    /// The item's key as index entries name it: document key, 0x1E, lower-cased name, and for a segment
    /// 0x1E and its start in decimal. Neither ids nor names may hold 0x1E, so it parses back ([`Self::parse_key`]).
    pub fn item_key(&self) -> String {
        let sep = NAME_SEPARATOR as char;
        match self.segment_start {
            None => format!("{}{sep}{}", self.doc_key, self.name_lower),
            Some(start) => format!("{}{sep}{}{sep}{start}", self.doc_key, self.name_lower),
        }
    }

    /// The change named by an item key of `kind` (etag 0); None when it is not one.
    pub fn parse_key(kind: ItemKind, key: &str) -> Option<ItemChange> {
        let mut parts = key.split(NAME_SEPARATOR as char);
        let doc_key = parts.next()?.to_owned();
        let name_lower = parts.next()?.to_owned();
        let segment_start = match kind {
            ItemKind::Counter => None,
            ItemKind::TimeSeriesSegment => Some(parts.next()?.parse().ok()?),
        };
        parts.next().is_none().then_some(ItemChange { etag: 0, kind, doc_key, name_lower, segment_start })
    }
}

/// A segment as a time-series index maps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentItem {
    /// The series' name as first written.
    pub series_name: String,
    /// The segment's entries, in timestamp order (never empty).
    pub entries: Vec<TimeSeriesEntry>,
}

fn decode_log_value(etag: u64, value: &[u8]) -> Result<ItemChange, StorageError> {
    let corrupted = || StorageError::corrupted(crate::tables::ITEM_CHANGES, format!("row {etag} does not name a counter or segment"));
    let (&kind, row_key) = value.split_first().ok_or_else(corrupted)?;
    let kind = ItemKind::from_byte(kind).ok_or_else(corrupted)?;
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| corrupted());
    match kind {
        ItemKind::Counter => {
            let (doc, name) = split_named_key(row_key).ok_or_else(corrupted)?;
            Ok(ItemChange { etag, kind, doc_key: text(doc)?, name_lower: text(name)?, segment_start: None })
        }
        ItemKind::TimeSeriesSegment => {
            let (series, start) = split_segment_key(row_key).ok_or_else(corrupted)?;
            let (doc, name) = split_named_key(series).ok_or_else(corrupted)?;
            Ok(ItemChange { etag, kind, doc_key: text(doc)?, name_lower: text(name)?, segment_start: Some(start) })
        }
    }
}

impl WriteTxn<'_> {
    /// Records that the row `row_key` of a counter or segment changed (written or removed): the item's log
    /// row moves to a new etag.
    pub(crate) fn record_item_change(&mut self, kind: ItemKind, row_key: &[u8]) -> Result<(), StorageError> {
        let mut latest_key = Vec::with_capacity(row_key.len() + 1);
        latest_key.push(kind.byte());
        latest_key.extend_from_slice(row_key);
        if let Some(old) = self.tables.item_change_etags.get(&self.txn, &latest_key)?.and_then(decode_etag) {
            self.txn.delete(self.tables.item_changes, &etag_key(old))?;
        }
        let etag = self.next_etag()?;
        self.txn.put(self.tables.item_changes, &etag_key(etag), &latest_key)?;
        self.txn.put(self.tables.item_change_etags, &latest_key, &etag_key(etag))?;
        Ok(())
    }
}

impl ReadTxn<'_> {
    /// The latest change of every counter and segment changed after `etag`, in etag order, until `visit`
    /// returns false.
    pub fn item_changes_after(&self, etag: u64, mut visit: impl FnMut(ItemChange) -> bool) -> Result<(), StorageError> {
        let start = etag_key(etag.saturating_add(1));
        let range = (std::ops::Bound::Included(&start[..]), std::ops::Bound::Unbounded);
        for entry in self.tables.item_changes.range(&self.txn, &range)? {
            let (key, value) = entry?;
            let etag = decode_etag(key).ok_or_else(|| StorageError::corrupted(crate::tables::ITEM_CHANGES, "key is not an etag"))?;
            if !visit(decode_log_value(etag, value)?) {
                break;
            }
        }
        Ok(())
    }

    /// The etag of the latest counter or segment change (0 when none).
    pub fn last_item_change_etag(&self) -> Result<u64, StorageError> {
        Ok(self.tables.item_changes.last(&self.txn)?.and_then(|(k, _)| decode_etag(k)).unwrap_or(0))
    }

    /// The segment of a series (lower-cased name) starting at `start`, with the series' name as written; None
    /// when it is gone.
    pub fn time_series_segment(&self, doc_key: &str, name_lower: &str, start: i64) -> Result<Option<SegmentItem>, StorageError> {
        let Some(stats) = self.time_series_stats(doc_key, name_lower)? else { return Ok(None) };
        let key = crate::time_series::segment_row_key(doc_key, name_lower, start);
        let Some(bytes) = self.tables.time_series.get(&self.txn, &key)? else { return Ok(None) };
        let entries = decode_segment(start, bytes)?;
        Ok((!entries.is_empty()).then_some(SegmentItem { series_name: stats.name, entries }))
    }
}

/// Gives every counter and segment of a database written before the change log existed (format 4) a log row,
/// so indexes defined later see them. Runs at open, before the journal starts, like the other format upgrades.
pub(crate) fn backfill_item_changes(env: &heed::Env<heed::WithoutTls>, tables: &crate::tables::Tables) -> Result<(), StorageError> {
    let mut wtxn = env.write_txn()?;
    if !tables.item_change_etags.is_empty(&wtxn)? || (tables.counters.is_empty(&wtxn)? && tables.time_series.is_empty(&wtxn)?) {
        return Ok(());
    }
    let mut rows: Vec<Vec<u8>> = Vec::new();
    for (kind, table) in [(ItemKind::Counter, tables.counters), (ItemKind::TimeSeriesSegment, tables.time_series)] {
        for entry in table.iter(&wtxn)? {
            let mut key = vec![kind.byte()];
            key.extend_from_slice(entry?.0);
            rows.push(key);
        }
    }
    let meta_keys = crate::tables::meta_keys::LAST_ETAG;
    let stored = tables.meta.get(&wtxn, meta_keys)?.and_then(decode_etag).unwrap_or(0);
    let last_doc = tables.docs_by_etag.last(&wtxn)?.and_then(|(k, _)| decode_etag(k)).unwrap_or(0);
    let last_tomb = tables.tombstones.last(&wtxn)?.and_then(|(k, _)| decode_etag(k)).unwrap_or(0);
    let mut etag = stored.max(last_doc).max(last_tomb);
    for row in rows {
        etag += 1;
        tables.item_changes.put(&mut wtxn, &etag_key(etag), &row)?;
        tables.item_change_etags.put(&mut wtxn, &row, &etag_key(etag))?;
    }
    tables.meta.put(&mut wtxn, meta_keys, &etag_key(etag))?;
    wtxn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_series::TimeSeriesEntry;
    use crate::{Store, StoreOptions, TransactionMerger};
    use std::sync::Arc;

    type WriteOp = dyn FnOnce(&mut WriteTxn<'_>) -> Result<(), StorageError> + Send;

    fn changes(store: &Store) -> Vec<(ItemKind, String, String, Option<i64>)> {
        let read = store.read().unwrap();
        let mut out = Vec::new();
        read.item_changes_after(0, |c| {
            out.push((c.kind, c.doc_key, c.name_lower, c.segment_start));
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn every_counter_and_segment_change_moves_its_row_to_a_new_etag() {
        let root = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() };
        let store = Arc::new(Store::open(root.path(), &options).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
        let write = |f: Box<WriteOp>| merger.write_blocking(f).unwrap();
        write(Box::new(|t| {
            t.put_document("users/1", "Users", "{}".into(), "{}".into(), 0, 1)?;
            t.increment_counter("users/1", "Likes", 1)?;
            t.increment_counter("users/1", "Views", 1)?;
            t.append_time_series("users/1", "HeartRate", &[TimeSeriesEntry { timestamp: 1000, values: vec![1.0], tag: None }])?;
            Ok(())
        }));
        write(Box::new(|t| t.increment_counter("users/1", "likes", 2).map(|_| ())));
        let got = changes(&store);
        assert_eq!(got.len(), 3, "one row per item: {got:?}");
        assert_eq!(got[2], (ItemKind::Counter, "users/1".into(), "likes".into(), None), "the latest change is last");
        assert_eq!(got[1].0, ItemKind::TimeSeriesSegment);
        let last = store.read().unwrap().last_etag().unwrap();
        assert_eq!(store.read().unwrap().last_item_change_etag().unwrap(), last);
        // Deleting the document records the removal of each of its items.
        write(Box::new(|t| t.delete_document("users/1", 1).map(|_| ())));
        let read = store.read().unwrap();
        let mut after = Vec::new();
        read.item_changes_after(last, |c| {
            after.push(c.item_key());
            true
        })
        .unwrap();
        assert_eq!(after.len(), 3, "{after:?}");
        assert!(read.counter("users/1", "likes").unwrap().is_none());
        drop(read);
        merger.stop();
        assert!(store.check_invariants().unwrap().violations.is_empty());
    }

    #[test]
    fn a_database_of_format_4_gets_a_row_for_every_counter_and_segment() {
        let root = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() };
        {
            let store = Arc::new(Store::open(root.path(), &options).unwrap());
            let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
            merger
                .write_blocking(|t| {
                    t.put_document("users/1", "Users", "{}".into(), "{}".into(), 0, 1)?;
                    t.increment_counter("users/1", "Likes", 1)?;
                    t.append_time_series("users/1", "HeartRate", &[TimeSeriesEntry { timestamp: 5, values: vec![1.0], tag: None }])
                })
                .unwrap();
            merger.stop();
            // What format 4 left: no change log.
            let mut wtxn = store.env.write_txn().unwrap();
            store.tables.item_changes.clear(&mut wtxn).unwrap();
            store.tables.item_change_etags.clear(&mut wtxn).unwrap();
            wtxn.commit().unwrap();
            store.env.force_sync().unwrap();
        }
        let store = Store::open(root.path(), &options).unwrap();
        let got = changes(&store);
        assert_eq!(got.len(), 2, "{got:?}");
        let read = store.read().unwrap();
        assert_eq!(read.last_item_change_etag().unwrap(), read.last_etag().unwrap());
    }

    #[test]
    fn item_keys_parse_back() {
        let counter =
            ItemChange { etag: 0, kind: ItemKind::Counter, doc_key: "users/1".into(), name_lower: "likes".into(), segment_start: None };
        assert_eq!(ItemChange::parse_key(ItemKind::Counter, &counter.item_key()), Some(counter));
        let segment = ItemChange {
            etag: 0,
            kind: ItemKind::TimeSeriesSegment,
            doc_key: "users/1".into(),
            name_lower: "heartrate".into(),
            segment_start: Some(-5),
        };
        assert_eq!(ItemChange::parse_key(ItemKind::TimeSeriesSegment, &segment.item_key()), Some(segment));
        assert_eq!(ItemChange::parse_key(ItemKind::TimeSeriesSegment, "users/1"), None);
    }
}
