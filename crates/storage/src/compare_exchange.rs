//! Compare-exchange rows: one JSON value per key (keys compare case-insensitively and keep their first
//! spelling), each with the index of its last change. Indexes come from one counter per database
//! (`meta/compare_exchange_last_index`), so they only grow; the rules of *when* a row may change (the
//! expected index) belong to the engine.

use crate::codec::{Reader, Writer};
use crate::tables::{self, decode_etag, meta_keys};
use crate::{ReadTxn, StorageError, WriteTxn};
use corvid_types::id_key;

/// Longest key (in bytes, lower-cased), RavenDB's limit.
pub const MAX_COMPARE_EXCHANGE_KEY_BYTES: usize = 512;

/// A compare-exchange value as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareExchangeRecord {
    /// The key as first written.
    pub key: String,
    /// The index of the write that last changed it.
    pub index: u64,
    /// The stored JSON object (`{"Object": ..., "@metadata": ...}`), compact.
    pub value: String,
}

impl CompareExchangeRecord {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(14 + self.key.len() + self.value.len()));
        w.0.extend_from_slice(&self.index.to_be_bytes());
        w.str16(&self.key);
        w.str32(&self.value);
        w.0
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<CompareExchangeRecord, StorageError> {
        let mut r = Reader { bytes, table: tables::COMPARE_EXCHANGE };
        let index = r.u64()?;
        let key = r.str16()?;
        let value = r.str32()?;
        Ok(CompareExchangeRecord { key, index, value })
    }
}

/// Whether LMDB could hold this key at all (longer ones cannot have been written).
fn storable(key_lower: &str) -> bool {
    !key_lower.is_empty() && key_lower.len() <= MAX_COMPARE_EXCHANGE_KEY_BYTES
}

impl WriteTxn<'_> {
    /// The value stored under `key` (any case).
    pub fn compare_exchange(&self, key: &str) -> Result<Option<CompareExchangeRecord>, StorageError> {
        let lower = id_key(key);
        if !storable(&lower) {
            return Ok(None);
        }
        self.tables.compare_exchange.get(&self.txn, lower.as_bytes())?.map(CompareExchangeRecord::decode).transpose()
    }

    /// Takes the next compare-exchange index of this database.
    pub fn next_compare_exchange_index(&mut self) -> Result<u64, StorageError> {
        let last = self.tables.meta.get(&self.txn, meta_keys::COMPARE_EXCHANGE_LAST_INDEX)?.and_then(decode_etag).unwrap_or(0);
        let next = last + 1;
        self.txn.put(self.tables.meta, meta_keys::COMPARE_EXCHANGE_LAST_INDEX, &next.to_be_bytes())?;
        Ok(next)
    }

    /// Stores a value (new or replacing); the key keeps the spelling of its first write.
    pub fn put_compare_exchange(&mut self, key: &str, index: u64, value: String) -> Result<CompareExchangeRecord, StorageError> {
        self.refuse_growth_when_low_space()?;
        let lower = id_key(key);
        if !storable(&lower) {
            return Err(StorageError::corrupted(tables::COMPARE_EXCHANGE, format!("key of {} bytes cannot be stored", lower.len())));
        }
        let key = match self.compare_exchange(key)? {
            Some(old) => old.key,
            None => key.to_owned(),
        };
        let record = CompareExchangeRecord { key, index, value };
        self.txn.put(self.tables.compare_exchange, lower.as_bytes(), &record.encode())?;
        Ok(record)
    }

    /// Removes a value; false when there was none.
    pub fn delete_compare_exchange(&mut self, key: &str) -> Result<bool, StorageError> {
        let lower = id_key(key);
        if !storable(&lower) {
            return Ok(false);
        }
        self.txn.delete(self.tables.compare_exchange, lower.as_bytes())
    }
}

impl ReadTxn<'_> {
    /// The value stored under `key` (any case).
    pub fn compare_exchange(&self, key: &str) -> Result<Option<CompareExchangeRecord>, StorageError> {
        let lower = id_key(key);
        if !storable(&lower) {
            return Ok(None);
        }
        self.tables.compare_exchange.get(&self.txn, lower.as_bytes())?.map(CompareExchangeRecord::decode).transpose()
    }

    /// Values whose key starts with `prefix` (any case), in key order: `start` skipped, at most `page_size`.
    pub fn compare_exchange_with_prefix(
        &self,
        prefix: &str,
        start: usize,
        page_size: usize,
    ) -> Result<Vec<CompareExchangeRecord>, StorageError> {
        let lower = id_key(prefix);
        let mut out = Vec::new();
        if lower.len() > MAX_COMPARE_EXCHANGE_KEY_BYTES {
            return Ok(out);
        }
        // LMDB cannot seek to an empty key: no prefix is a plain scan.
        type Entries<'a> = Box<dyn Iterator<Item = heed::Result<(&'a [u8], &'a [u8])>> + 'a>;
        let entries: Entries<'_> = if lower.is_empty() {
            Box::new(self.tables.compare_exchange.iter(&self.txn)?)
        } else {
            Box::new(self.tables.compare_exchange.prefix_iter(&self.txn, lower.as_bytes())?)
        };
        for entry in entries.skip(start).take(page_size) {
            out.push(CompareExchangeRecord::decode(entry?.1)?);
        }
        Ok(out)
    }

    /// Number of compare-exchange values.
    pub fn count_compare_exchange(&self) -> Result<u64, StorageError> {
        Ok(self.tables.compare_exchange.len(&self.txn)?)
    }

    /// The highest compare-exchange index handed out so far, or 0.
    pub fn last_compare_exchange_index(&self) -> Result<u64, StorageError> {
        Ok(self.tables.meta.get(&self.txn, meta_keys::COMPARE_EXCHANGE_LAST_INDEX)?.and_then(decode_etag).unwrap_or(0))
    }
}
