//! The expiration queue: when a document should be deleted (`@expires`) or refreshed (`@refresh`), and when a
//! compare-exchange value expires, as rows ordered by that time so a sweep reads only the due ones. Rows are
//! only added by writes; a row whose target changed or went since is stale and the engine drops it when it
//! comes due (it checks the target's current metadata), so no write has to find and remove old rows.

use crate::tables::{self, meta_keys};
use crate::{ReadTxn, StorageError, WriteTxn};

/// What a queue row asks for when it comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// Delete the document (`@expires`).
    Expire,
    /// Refresh the document (`@refresh`).
    Refresh,
    /// Delete the compare-exchange value (`@expires` in its metadata).
    CompareExchangeExpire,
}

impl TimerKind {
    fn tag(self) -> u8 {
        match self {
            TimerKind::Expire => b'E',
            TimerKind::Refresh => b'R',
            TimerKind::CompareExchangeExpire => b'C',
        }
    }
}

/// A due row: its time (unix nanoseconds) and the lower-cased key it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueTimer {
    /// When it came due, unix nanoseconds.
    pub at: i64,
    /// The lower-cased document id or compare-exchange key.
    pub key: String,
}

/// Longest target key queued (longer ones cannot be stored as documents or values anyway).
const MAX_TARGET_BYTES: usize = 1024;

/// `kind tag + at (i64 BE, sign bit flipped) + lower-cased key`.
fn row_key(kind: TimerKind, at: i64, key_lower: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(9 + key_lower.len());
    key.push(kind.tag());
    key.extend_from_slice(&((at as u64) ^ (1 << 63)).to_be_bytes());
    key.extend_from_slice(key_lower.as_bytes());
    key
}

fn decode_row(bytes: &[u8]) -> Result<DueTimer, StorageError> {
    let corrupted = || StorageError::corrupted(tables::EXPIRATION, "row key is shorter than 9 bytes or not UTF-8");
    let time: [u8; 8] = bytes.get(1..9).ok_or_else(corrupted)?.try_into().map_err(|_| corrupted())?;
    let at = (u64::from_be_bytes(time) ^ (1 << 63)) as i64;
    let key = std::str::from_utf8(&bytes[9..]).map_err(|_| corrupted())?.to_owned();
    Ok(DueTimer { at, key })
}

fn due_rows(
    table: &heed::Database<heed::types::Bytes, heed::types::Bytes>,
    txn: &heed::RoTxn<'_, heed::WithoutTls>,
    kind: TimerKind,
    now: i64,
    limit: usize,
) -> Result<Vec<DueTimer>, StorageError> {
    let mut out = Vec::new();
    for row in table.prefix_iter(txn, &[kind.tag()])? {
        let (key, _) = row?;
        let timer = decode_row(key)?;
        if timer.at > now || out.len() >= limit {
            break;
        }
        out.push(timer);
    }
    Ok(out)
}

impl WriteTxn<'_> {
    /// Queues `key_lower` for `kind` at `at` (unix nanoseconds); keys too long to be stored are ignored.
    pub fn queue_timer(&mut self, kind: TimerKind, at: i64, key_lower: &str) -> Result<(), StorageError> {
        if key_lower.is_empty() || key_lower.len() > MAX_TARGET_BYTES {
            return Ok(());
        }
        self.txn.put(self.tables.expiration, &row_key(kind, at, key_lower), &[])
    }

    /// Removes a queue row (it was acted on or found stale).
    pub fn remove_timer(&mut self, kind: TimerKind, timer: &DueTimer) -> Result<(), StorageError> {
        self.txn.delete(self.tables.expiration, &row_key(kind, timer.at, &timer.key))?;
        Ok(())
    }

    /// The engine's expiration or refresh configuration, as it stored it.
    pub fn expiration_config(&self, refresh: bool) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables.meta.get(&self.txn, config_key(refresh))?.map(<[u8]>::to_vec))
    }

    /// Replaces the engine's expiration (or, with `refresh`, refresh) configuration.
    pub fn set_expiration_config(&mut self, refresh: bool, config: &[u8]) -> Result<(), StorageError> {
        self.txn.put(self.tables.meta, config_key(refresh), config)
    }

    /// Records that every document was looked at for `@expires`/`@refresh` (the queue is complete).
    pub fn mark_expiration_backfilled(&mut self) -> Result<(), StorageError> {
        self.txn.put(self.tables.meta, meta_keys::EXPIRATION_BACKFILLED, &[1])
    }
}

fn config_key(refresh: bool) -> &'static [u8] {
    if refresh {
        meta_keys::REFRESH_CONFIG
    } else {
        meta_keys::EXPIRATION_CONFIG
    }
}

impl ReadTxn<'_> {
    /// At most `limit` rows of `kind` due at `now` (unix nanoseconds), earliest first.
    pub fn due_timers(&self, kind: TimerKind, now: i64, limit: usize) -> Result<Vec<DueTimer>, StorageError> {
        due_rows(&self.tables.expiration, &self.txn, kind, now, limit)
    }

    /// The engine's expiration (or, with `refresh`, refresh) configuration, as it stored it.
    pub fn expiration_config(&self, refresh: bool) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables.meta.get(&self.txn, config_key(refresh))?.map(<[u8]>::to_vec))
    }

    /// Whether every document was looked at for `@expires`/`@refresh` (see `mark_expiration_backfilled`).
    pub fn expiration_backfilled(&self) -> Result<bool, StorageError> {
        Ok(self.tables.meta.get(&self.txn, meta_keys::EXPIRATION_BACKFILLED)?.is_some())
    }

    /// Rows in the queue (all kinds, stale ones included).
    pub fn queued_timer_count(&self) -> Result<u64, StorageError> {
        Ok(self.tables.expiration.len(&self.txn)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_sort_by_time_within_a_kind() {
        let early = row_key(TimerKind::Expire, -5, "b");
        let late = row_key(TimerKind::Expire, 7, "a");
        assert!(early < late);
        assert_eq!(decode_row(&late).unwrap(), DueTimer { at: 7, key: "a".into() });
        assert_eq!(decode_row(&early).unwrap().at, -5);
    }
}
