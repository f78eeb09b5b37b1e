//! Storage of a static map-reduce index: every document's map entries grouped by reduce key (so an update
//! or delete takes its old contribution back) and the reduce results of every key. The reduce function is
//! the caller's (JavaScript or C#): each batch re-reduces only the keys it touched, in one transaction that
//! also records the last indexed etag. Re-applying a batch gives the same state, so a crash between this
//! store's commit and the search index's commit is repaired by replaying the batch.

use std::collections::BTreeSet;
use std::path::Path;

use std::sync::Arc;

use corvid_types::io_metrics::{IoMetrics, SlowIoThreshold};
use heed::types::Bytes;
use heed::{Database, Env, WithoutTls};

use crate::index_env::record_commit;
use crate::StorageError;

const ENTRIES: &str = "entries";
const DOC_KEYS: &str = "doc_keys";
const RESULTS: &str = "results";
const META: &str = "meta";
const LAST_ETAG: &[u8] = b"last_etag";

/// What one document contributes: map entries (JSON objects) under their reduce keys.
pub type DocumentEntries = Vec<(String, String)>;

/// Reduces all entries (JSON texts) of one key into result objects (JSON texts).
pub type Reducer<'a> = dyn FnMut(&str, &[String]) -> Result<Vec<String>, String> + 'a;

/// How the results of a batch changed: keys with new results, keys that are gone.
#[derive(Debug, Default, PartialEq)]
pub struct ReduceChanges {
    /// Reduce keys whose results changed, with their new results (JSON texts).
    pub updated: Vec<(String, Vec<String>)>,
    /// Reduce keys that no document maps to any more.
    pub removed: Vec<String>,
}

/// A static map-reduce index's map entries per document and reduce key, and its reduce results (LMDB in the
/// index directory).
pub struct MapReduceStore {
    env: Env<WithoutTls>,
    /// reduce key, 0x00, document key -> JSON array of that document's entries for the key
    entries: Database<Bytes, Bytes>,
    /// document key -> JSON array of the reduce keys it contributes to
    doc_keys: Database<Bytes, Bytes>,
    /// reduce key -> JSON array of result objects
    results: Database<Bytes, Bytes>,
    meta: Database<Bytes, Bytes>,
    /// Recent durable commits (`/debug/io-metrics`).
    io: Arc<IoMetrics>,
}

fn entry_key(reduce_key: &str, doc_key: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(reduce_key.len() + 1 + doc_key.len());
    key.extend_from_slice(reduce_key.as_bytes());
    key.push(0);
    key.extend_from_slice(doc_key.as_bytes());
    key
}

/// A stored JSON array of strings (reduce keys).
fn string_list(bytes: &[u8]) -> Result<Vec<String>, StorageError> {
    serde_json::from_slice(bytes).map_err(|e| StorageError::corrupted("map_reduce.doc_keys", e.to_string()))
}

/// A stored JSON array of objects, each as JSON text.
fn json_texts(bytes: &[u8], table: &'static str) -> Result<Vec<String>, StorageError> {
    let values: Vec<serde_json::Value> = serde_json::from_slice(bytes).map_err(|e| StorageError::corrupted(table, e.to_string()))?;
    Ok(values.into_iter().map(|v| v.to_string()).collect())
}

fn json_array(texts: &[String]) -> String {
    format!("[{}]", texts.join(","))
}

impl MapReduceStore {
    /// The store's recent durable commits.
    pub fn io_metrics(&self) -> &Arc<IoMetrics> {
        &self.io
    }

    /// The environment's directory.
    pub fn path(&self) -> &Path {
        self.env.path()
    }

    /// Opens (creating if needed) the store in `path`.
    pub fn open(path: &Path, slow_io_threshold: SlowIoThreshold) -> Result<MapReduceStore, StorageError> {
        let env = crate::index_env::open_index_env(path, 64 << 30, 4)?;
        let mut wtxn = env.write_txn()?;
        let entries = env.create_database(&mut wtxn, Some(ENTRIES))?;
        let doc_keys = env.create_database(&mut wtxn, Some(DOC_KEYS))?;
        let results = env.create_database(&mut wtxn, Some(RESULTS))?;
        let meta = env.create_database(&mut wtxn, Some(META))?;
        wtxn.commit()?;
        Ok(MapReduceStore {
            env,
            entries,
            doc_keys,
            results,
            meta,
            io: Arc::new(IoMetrics::new(path.display().to_string(), slow_io_threshold)),
        })
    }

    /// The etag the stored entries and results are up to date with.
    pub fn last_etag(&self) -> Result<u64, StorageError> {
        let rtxn = self.env.read_txn()?;
        Ok(self.meta.get(&rtxn, LAST_ETAG)?.and_then(crate::tables::decode_etag).unwrap_or(0))
    }

    /// Replaces each document's entries (None or empty: it contributes nothing now), re-reduces the keys
    /// touched, records `last_etag`, commits; returns how the results changed. A reducer error aborts the
    /// whole batch (nothing is written).
    pub fn apply(
        &self,
        changes: &[(String, Option<DocumentEntries>)],
        last_etag: u64,
        reducer: &mut Reducer<'_>,
    ) -> Result<ReduceChanges, StorageError> {
        let mut wtxn = self.env.write_txn()?;
        let mut touched = BTreeSet::new();
        for (doc_key, new) in changes {
            if doc_key.is_empty() {
                continue;
            }
            if let Some(bytes) = self.doc_keys.get(&wtxn, doc_key.as_bytes())? {
                for reduce_key in string_list(bytes)? {
                    self.entries.delete(&mut wtxn, &entry_key(&reduce_key, doc_key))?;
                    touched.insert(reduce_key);
                }
                self.doc_keys.delete(&mut wtxn, doc_key.as_bytes())?;
            }
            let Some(new) = new.as_ref().filter(|n| !n.is_empty()) else { continue };
            let mut by_key: std::collections::BTreeMap<&str, Vec<String>> = std::collections::BTreeMap::new();
            for (reduce_key, entry) in new {
                by_key.entry(reduce_key.as_str()).or_default().push(entry.clone());
            }
            for (reduce_key, entries) in &by_key {
                self.entries.put(&mut wtxn, &entry_key(reduce_key, doc_key), json_array(entries).as_bytes())?;
                touched.insert((*reduce_key).to_owned());
            }
            let keys: Vec<&str> = by_key.keys().copied().collect();
            self.doc_keys.put(&mut wtxn, doc_key.as_bytes(), serde_json::to_string(&keys).expect("strings serialize").as_bytes())?;
        }
        let mut out = ReduceChanges::default();
        for reduce_key in touched {
            let mut prefix = reduce_key.as_bytes().to_vec();
            prefix.push(0);
            let mut values = Vec::new();
            for item in self.entries.prefix_iter(&wtxn, &prefix)? {
                let (_, bytes) = item?;
                values.extend(json_texts(bytes, "map_reduce.entries")?);
            }
            if values.is_empty() {
                self.results.delete(&mut wtxn, reduce_key.as_bytes())?;
                out.removed.push(reduce_key);
                continue;
            }
            let results = reducer(&reduce_key, &values).map_err(|e| StorageError::Reduce { reduce_key: reduce_key.clone(), message: e })?;
            self.results.put(&mut wtxn, reduce_key.as_bytes(), json_array(&results).as_bytes())?;
            out.updated.push((reduce_key, results));
        }
        self.meta.put(&mut wtxn, LAST_ETAG, &last_etag.to_be_bytes())?;
        let timer = IoMetrics::start();
        wtxn.commit()?;
        record_commit(&self.io, timer);
        Ok(out)
    }

    /// The results of one reduce key (JSON texts).
    pub fn results(&self, reduce_key: &str) -> Result<Vec<String>, StorageError> {
        let rtxn = self.env.read_txn()?;
        match self.results.get(&rtxn, reduce_key.as_bytes())? {
            Some(bytes) => json_texts(bytes, "map_reduce.results"),
            None => Ok(Vec::new()),
        }
    }

    /// Number of reduce keys with results.
    pub fn count(&self) -> Result<u64, StorageError> {
        let rtxn = self.env.read_txn()?;
        Ok(self.results.len(&rtxn)?)
    }

    /// Every reduce key with its results (JSON texts), in key order.
    pub fn all_results(&self) -> Result<Vec<(String, Vec<String>)>, StorageError> {
        let rtxn = self.env.read_txn()?;
        let mut out = Vec::new();
        for item in self.results.iter(&rtxn)? {
            let (key, bytes) = item?;
            out.push((String::from_utf8_lossy(key).into_owned(), json_texts(bytes, "map_reduce.results")?));
        }
        Ok(out)
    }

    /// Bytes of the data file.
    pub fn size_on_disk(&self) -> u64 {
        self.env.real_disk_size().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums the `n` of every entry: `{"k": key, "n": total}`.
    fn sum(key: &str, entries: &[String]) -> Result<Vec<String>, String> {
        let total: i64 = entries.iter().map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap()["n"].as_i64().unwrap()).sum();
        Ok(vec![format!("{{\"k\":{key:?},\"n\":{total}}}")])
    }

    fn doc(pairs: &[(&str, i64)]) -> Option<DocumentEntries> {
        Some(pairs.iter().map(|(k, n)| (k.to_string(), format!("{{\"n\":{n}}}"))).collect())
    }

    #[test]
    fn re_reduces_only_touched_keys_and_moves_contributions() {
        let dir = tempfile::tempdir().unwrap();
        let store = MapReduceStore::open(dir.path(), SlowIoThreshold::default()).unwrap();
        let changes =
            store.apply(&[("d1".into(), doc(&[("a", 1), ("a", 2), ("b", 5)])), ("d2".into(), doc(&[("a", 10)]))], 2, &mut sum).unwrap();
        assert_eq!(changes.updated.len(), 2);
        assert_eq!(store.results("a").unwrap(), vec![r#"{"k":"a","n":13}"#.to_owned()]);
        let changes = store.apply(&[("d1".into(), doc(&[("c", 7)]))], 3, &mut sum).unwrap();
        assert_eq!(changes.removed, vec!["b".to_owned()]);
        assert_eq!(store.results("a").unwrap(), vec![r#"{"k":"a","n":10}"#.to_owned()]);
        // Replaying the same batch changes nothing.
        store.apply(&[("d1".into(), doc(&[("c", 7)]))], 3, &mut sum).unwrap();
        assert_eq!(store.results("c").unwrap(), vec![r#"{"k":"c","n":7}"#.to_owned()]);
        store.apply(&[("d1".into(), None), ("d2".into(), None)], 4, &mut sum).unwrap();
        assert_eq!(store.count().unwrap(), 0);
        assert_eq!(store.last_etag().unwrap(), 4);
    }

    #[test]
    fn a_failing_reduce_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = MapReduceStore::open(dir.path(), SlowIoThreshold::default()).unwrap();
        let mut failing = |_: &str, _: &[String]| -> Result<Vec<String>, String> { Err("boom".into()) };
        assert!(store.apply(&[("d1".into(), doc(&[("a", 1)]))], 1, &mut failing).is_err());
        assert_eq!(store.count().unwrap(), 0);
        assert_eq!(store.last_etag().unwrap(), 0);
    }
}
