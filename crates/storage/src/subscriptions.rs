//! Data subscription definitions, kept as rows of the `meta` table under their own key prefix (one row per
//! subscription, keyed by its id) so they commit with the documents and survive restarts. The storage layer
//! keeps each definition as opaque bytes: the engine decides what a definition holds.

use crate::tables::{decode_etag, etag_key};
use crate::{ReadTxn, StorageError, WriteTxn};

/// Prefix of every subscription row in `meta`; the id follows as u64 BE.
const ROW_PREFIX: &[u8] = b"subscription/";
/// u64 BE: the last subscription id handed out (ids are never reused, even after a delete).
const LAST_ID_KEY: &[u8] = b"subscription_last_id";

fn row_key(id: u64) -> Vec<u8> {
    let mut key = ROW_PREFIX.to_vec();
    key.extend_from_slice(&etag_key(id));
    key
}

impl WriteTxn<'_> {
    /// A new subscription id, higher than every id handed out before.
    pub fn next_subscription_id(&mut self) -> Result<u64, StorageError> {
        let last = self.tables.meta.get(&self.txn, LAST_ID_KEY)?.and_then(decode_etag).unwrap_or(0);
        let id = last + 1;
        self.txn.put(self.tables.meta, LAST_ID_KEY, &etag_key(id))?;
        Ok(id)
    }

    /// Stores (or replaces) the definition of subscription `id`.
    pub fn put_subscription(&mut self, id: u64, definition: &[u8]) -> Result<(), StorageError> {
        self.refuse_growth_when_low_space()?;
        self.txn.put(self.tables.meta, &row_key(id), definition)?;
        Ok(())
    }

    /// The stored definition of subscription `id`.
    pub fn subscription(&self, id: u64) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables.meta.get(&self.txn, &row_key(id))?.map(<[u8]>::to_vec))
    }

    /// Removes subscription `id`; false when there was none.
    pub fn delete_subscription(&mut self, id: u64) -> Result<bool, StorageError> {
        self.txn.delete(self.tables.meta, &row_key(id))
    }

    /// Every stored definition, by id.
    pub fn subscriptions(&self) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        collect(self.tables.meta.prefix_iter(&self.txn, ROW_PREFIX)?)
    }
}

impl ReadTxn<'_> {
    /// Every stored definition, by id.
    pub fn subscriptions(&self) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        collect(self.tables.meta.prefix_iter(&self.txn, ROW_PREFIX)?)
    }
}

fn collect<'a>(rows: impl Iterator<Item = heed::Result<(&'a [u8], &'a [u8])>>) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
    let mut out = Vec::new();
    for row in rows {
        let (key, value) = row?;
        let id = decode_etag(&key[ROW_PREFIX.len()..])
            .ok_or_else(|| StorageError::corrupted(crate::tables::META, "a subscription key does not end with an 8-byte id"))?;
        out.push((id, value.to_vec()));
    }
    Ok(out)
}
