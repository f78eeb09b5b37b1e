//! Compare-exchange values (RavenDB's cluster-wide key/value store, kept per database here): a put or delete
//! names the index it expects the value to have, and changes it only when that holds. Every change takes the
//! database's next compare-exchange index, so a client that read index `n` can tell whether anyone wrote since.

use corvid_storage::{CompareExchangeRecord, WriteTxn, MAX_COMPARE_EXCHANGE_KEY_BYTES};
use corvid_types::json;
use serde_json::Value;

use crate::{Database, EngineError};

/// A stored compare-exchange value.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareExchangeValue {
    /// The key as first written.
    pub key: String,
    /// The index of the write that last changed it.
    pub index: u64,
    /// The stored JSON object (`{"Object": ..., "@metadata": ...}`).
    pub value: String,
}

impl From<CompareExchangeRecord> for CompareExchangeValue {
    fn from(r: CompareExchangeRecord) -> Self {
        CompareExchangeValue { key: r.key, index: r.index, value: r.value }
    }
}

/// What a put or delete answered (RavenDB's `CompareExchangeResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompareExchangeOutcome {
    /// On success the index of this write; otherwise the index the value has.
    pub index: u64,
    /// On success the value written (or deleted); otherwise the value as it is. None when there is none.
    pub value: Option<String>,
    /// Whether the expected index held and the change was made.
    pub successful: bool,
}

/// Refuses keys the storage cannot hold (empty or too long), with RavenDB's messages.
pub fn validate_key(key: &str) -> Result<(), EngineError> {
    if key.is_empty() {
        return Err(EngineError::bad_request("The key argument must have value"));
    }
    let bytes = corvid_types::id_key(key).len();
    if bytes > MAX_COMPARE_EXCHANGE_KEY_BYTES {
        return Err(EngineError::bad_request(format!(
            "Compare Exchange key cannot exceed {MAX_COMPARE_EXCHANGE_KEY_BYTES} bytes, but the key was {bytes} bytes. The invalid key is '{key}'."
        )));
    }
    Ok(())
}

/// Checks a value a client sent (a JSON object within the document limits) and returns its compact text.
pub fn validate_value(value: &Value) -> Result<String, EngineError> {
    json::check_value(value, json::max_depth())
        .map_err(|e| EngineError::bad_request(format!("The compare exchange value was refused: {e}")))?;
    if !value.is_object() {
        return Err(EngineError::bad_request("A compare exchange value must be a JSON object"));
    }
    Ok(value.to_string())
}

/// What scripts see of a stored value (`cmpxchg(key)` in patches and projections): its `Object`, or null
/// when there is none.
pub(crate) fn object_of(stored: Option<&str>) -> Value {
    stored
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|mut value| value.get_mut("Object").map(Value::take))
        .unwrap_or(Value::Null)
}

/// Puts `value` under `key` as write `index` if the stored value has index `expected` (a missing value
/// accepts any expectation, as RavenDB's single put does).
pub(crate) fn put_in_txn(
    txn: &mut WriteTxn<'_>,
    key: &str,
    value: String,
    expected: u64,
    index: u64,
) -> Result<CompareExchangeOutcome, EngineError> {
    if let Some(current) = txn.compare_exchange(key)? {
        if current.index != expected {
            return Ok(CompareExchangeOutcome { index: current.index, value: Some(current.value), successful: false });
        }
    }
    let record = txn.put_compare_exchange(key, index, value)?;
    crate::expiration::schedule::on_compare_exchange_put(txn, key, &record.value)?;
    Ok(CompareExchangeOutcome { index, value: Some(record.value), successful: true })
}

/// Deletes `key` if its value has index `expected`; deleting a missing value succeeds.
pub(crate) fn delete_in_txn(txn: &mut WriteTxn<'_>, key: &str, expected: u64, index: u64) -> Result<CompareExchangeOutcome, EngineError> {
    match txn.compare_exchange(key)? {
        Some(current) if current.index != expected => {
            Ok(CompareExchangeOutcome { index: current.index, value: Some(current.value), successful: false })
        }
        Some(current) => {
            txn.delete_compare_exchange(key)?;
            Ok(CompareExchangeOutcome { index, value: Some(current.value), successful: true })
        }
        None => Ok(CompareExchangeOutcome { index, value: None, successful: true }),
    }
}

impl Database {
    /// Queues a put of `value` (checked by [`validate_value`]) under `key` expecting index `expected` (0: the
    /// value must not exist); `reply` gets the outcome once durable.
    pub fn submit_compare_exchange_put(
        &self,
        key: String,
        value: String,
        expected: u64,
        reply: impl FnOnce(Result<CompareExchangeOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_key(&key)?;
        self.write(
            move |txn| {
                let index = txn.next_compare_exchange_index()?;
                put_in_txn(txn, &key, value, expected, index)
            },
            reply,
        )
    }

    /// Queues a delete of `key` expecting index `expected`; `reply` gets the outcome once durable.
    pub fn submit_compare_exchange_delete(
        &self,
        key: String,
        expected: u64,
        reply: impl FnOnce(Result<CompareExchangeOutcome, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        validate_key(&key)?;
        self.write(
            move |txn| {
                let index = txn.next_compare_exchange_index()?;
                delete_in_txn(txn, &key, expected, index)
            },
            reply,
        )
    }

    /// The values of `keys` from one snapshot, in order (None where missing).
    pub fn compare_exchange_values(&self, keys: &[String]) -> Result<Vec<Option<CompareExchangeValue>>, EngineError> {
        let snapshot = self.store.read()?;
        keys.iter().map(|key| Ok(snapshot.compare_exchange(key)?.map(CompareExchangeValue::from))).collect()
    }

    /// Values whose key starts with `prefix` (any case), in key order, `start` skipped, at most `page_size`.
    pub fn compare_exchange_values_starting_with(
        &self,
        prefix: &str,
        start: usize,
        page_size: usize,
    ) -> Result<Vec<CompareExchangeValue>, EngineError> {
        let snapshot = self.store.read()?;
        Ok(snapshot.compare_exchange_with_prefix(prefix, start, page_size)?.into_iter().map(CompareExchangeValue::from).collect())
    }
}

impl Database {
    /// The values named by `paths` in `documents` (wire JSON; each string at a path is a key), once each in
    /// the order first met, from one snapshot: RavenDB's `CompareExchangeValueIncludes` (None where missing).
    pub fn compare_exchange_includes(
        &self,
        documents: &[&str],
        paths: &[String],
    ) -> Result<Vec<(String, Option<CompareExchangeValue>)>, EngineError> {
        let mut keys = Vec::new();
        for document in documents {
            let Ok(parsed) = serde_json::from_str::<Value>(document) else { continue };
            for path in paths {
                crate::includes::referenced_ids(&parsed, path, &mut keys);
            }
        }
        let mut seen = std::collections::HashSet::new();
        keys.retain(|key| !key.is_empty() && seen.insert(corvid_types::id_key(key)));
        let values = self.compare_exchange_values(&keys)?;
        Ok(keys.into_iter().zip(values).collect())
    }
}
