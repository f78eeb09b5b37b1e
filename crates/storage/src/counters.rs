//! Counter rows: one signed total per (document, counter name); names compare case-insensitively and keep
//! their first spelling.

use crate::codec::{Reader, Writer};
use crate::item_changes::ItemKind;
use crate::tables::{self, named_key};
use crate::{ReadTxn, StorageError, WriteTxn};
use corvid_types::id_key;

/// A counter of a document: its name and total.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    /// As first written (names compare case-insensitively).
    pub name: String,
    /// The total of every increment.
    pub value: i64,
}

fn encode(counter: &CounterValue) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(10 + counter.name.len()));
    w.0.extend_from_slice(&counter.value.to_be_bytes());
    w.str16(&counter.name);
    w.0
}

pub(crate) fn decode(bytes: &[u8]) -> Result<CounterValue, StorageError> {
    let mut r = Reader { bytes, table: tables::COUNTERS };
    let value = r.u64()? as i64;
    Ok(CounterValue { value, name: r.str16()? })
}

impl WriteTxn<'_> {
    /// The counter `name` (any case) of the document whose lower-cased id is `doc_key`.
    pub fn counter(&self, doc_key: &str, name: &str) -> Result<Option<CounterValue>, StorageError> {
        self.tables.counters.get(&self.txn, &named_key(doc_key, &id_key(name)))?.map(decode).transpose()
    }

    /// Counters of a document, by lower-cased name.
    pub fn counters_of(&self, doc_key: &str) -> Result<Vec<CounterValue>, StorageError> {
        let mut out = Vec::new();
        for entry in self.tables.counters.prefix_iter(&self.txn, &named_key(doc_key, ""))? {
            out.push(decode(entry?.1)?);
        }
        Ok(out)
    }

    /// Adds `delta` (wrapping like RavenDB's checked add would refuse: saturating here) and returns the
    /// counter, with whether it was created.
    pub fn increment_counter(&mut self, doc_key: &str, name: &str, delta: i64) -> Result<(CounterValue, bool), StorageError> {
        self.refuse_growth_when_low_space()?;
        let current = self.counter(doc_key, name)?;
        let created = current.is_none();
        let counter = match current {
            Some(c) => CounterValue { value: c.value.saturating_add(delta), name: c.name },
            None => CounterValue { value: delta, name: name.to_owned() },
        };
        let key = named_key(doc_key, &id_key(name));
        self.txn.put(self.tables.counters, &key, &encode(&counter))?;
        self.record_item_change(ItemKind::Counter, &key)?;
        Ok((counter, created))
    }

    /// Removes a counter; false when it did not exist.
    pub fn delete_counter(&mut self, doc_key: &str, name: &str) -> Result<bool, StorageError> {
        let key = named_key(doc_key, &id_key(name));
        let deleted = self.txn.delete(self.tables.counters, &key)?;
        if deleted {
            self.record_item_change(ItemKind::Counter, &key)?;
        }
        Ok(deleted)
    }
}

impl ReadTxn<'_> {
    /// The counter `name` (any case) of the document whose lower-cased id is `doc_key`.
    pub fn counter(&self, doc_key: &str, name: &str) -> Result<Option<CounterValue>, StorageError> {
        // Keys LMDB could not hold cannot have been written.
        if doc_key.is_empty() || doc_key.len() > 1024 || name.len() > corvid_types::MAX_NAME_BYTES {
            return Ok(None);
        }
        self.tables.counters.get(&self.txn, &named_key(doc_key, &id_key(name)))?.map(decode).transpose()
    }

    /// Counters of a document, by lower-cased name.
    pub fn counters_of(&self, doc_key: &str) -> Result<Vec<CounterValue>, StorageError> {
        let mut out = Vec::new();
        if doc_key.is_empty() || doc_key.len() > 1024 {
            return Ok(out);
        }
        for entry in self.tables.counters.prefix_iter(&self.txn, &named_key(doc_key, ""))? {
            out.push(decode(entry?.1)?);
        }
        Ok(out)
    }
}
