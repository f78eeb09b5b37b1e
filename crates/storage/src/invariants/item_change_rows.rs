//! Invariants of the change log of counters and segments: every row names a counter or segment key under an
//! etag no higher than `meta/last_etag`, the two log tables mirror each other, and every counter and segment
//! has its row (a counters or time-series index built later would not see an item without one).

use super::{text, Checker};
use crate::tables::{self, decode_etag};
use crate::violation::Violation;
use crate::StorageError;

impl Checker<'_> {
    pub(super) fn item_changes(&mut self) -> Result<(), StorageError> {
        for entry in self.tables.item_changes.iter(self.txn)? {
            let (key, value) = entry?;
            let Some(etag) = decode_etag(key) else {
                self.unreadable(tables::ITEM_CHANGES, text(key), "key is not an 8-byte etag");
                continue;
            };
            let key_text = format!("{etag}");
            if !matches!(value.first(), Some(b'C' | b'T')) {
                self.unreadable(tables::ITEM_CHANGES, key_text, "value does not start with a kind (C or T)");
                continue;
            }
            self.etag_at_most_last(tables::ITEM_CHANGES, &key_text, etag);
            if self.tables.item_change_etags.get(self.txn, value)?.and_then(decode_etag) != Some(etag) {
                self.violation(Violation::MissingIndexEntry { table: tables::ITEM_CHANGE_ETAGS, key: text(value), etag });
            }
        }
        for entry in self.tables.item_change_etags.iter(self.txn)? {
            let (key, value) = entry?;
            let points_back = match decode_etag(value) {
                Some(etag) => self.tables.item_changes.get(self.txn, &etag.to_be_bytes())? == Some(key),
                None => false,
            };
            if !points_back {
                self.violation(Violation::Dangling { table: tables::ITEM_CHANGE_ETAGS, key: text(key), target: text(value) });
            }
        }
        for (kind, table) in [(b'C', self.tables.counters), (b'T', self.tables.time_series)] {
            for entry in table.iter(self.txn)? {
                let mut logged = vec![kind];
                logged.extend_from_slice(entry?.0);
                if self.tables.item_change_etags.get(self.txn, &logged)?.is_none() {
                    self.violation(Violation::MissingIndexEntry { table: tables::ITEM_CHANGES, key: text(&logged[1..]), etag: 0 });
                }
            }
        }
        Ok(())
    }
}
