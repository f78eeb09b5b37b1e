//! Storage of a map-reduce index: the map output of every document (so an update or delete can take its
//! old contribution back) and the reduce result of every reduce key. One LMDB environment in the index's
//! own directory, so indexing never contends with document writes. Each batch is one transaction that
//! also records the last indexed etag: after a crash the index resumes exactly where its state is.

use std::path::Path;

use std::sync::Arc;

use corvid_types::io_metrics::{IoMetrics, SlowIoThreshold};
use heed::types::Bytes;
use heed::{Database, Env, WithoutTls};

use crate::index_env::record_commit;
use crate::StorageError;

const ENTRIES: &str = "entries";
const RESULTS: &str = "results";
const META: &str = "meta";
const LAST_ETAG: &[u8] = b"last_etag";

/// What one document contributes to one reduce key: `values[0]` is its count (1), the rest its sums.
#[derive(Debug, Clone, PartialEq)]
pub struct MapOutput {
    /// The group's key.
    pub reduce_key: String,
    /// Count, then one sum per summed field.
    pub values: Vec<f64>,
}

/// The reduced values of one reduce key.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceRow {
    /// The group's key.
    pub reduce_key: String,
    /// Count, then one sum per summed field, over every document of the group.
    pub values: Vec<f64>,
}

/// An automatic map-reduce (`group by`) index's map outputs per document and reduce results per key (LMDB in
/// the index directory).
pub struct ReduceStore {
    env: Env<WithoutTls>,
    entries: Database<Bytes, Bytes>,
    results: Database<Bytes, Bytes>,
    meta: Database<Bytes, Bytes>,
    /// Recent durable commits (`/debug/io-metrics`).
    io: Arc<IoMetrics>,
}

fn encode_values(values: &[f64], out: &mut Vec<u8>) {
    for v in values {
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn decode_values(bytes: &[u8]) -> Result<Vec<f64>, StorageError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(StorageError::corrupted("reduce.results", "value length is not a multiple of 8"));
    }
    Ok(bytes.chunks_exact(8).map(|c| f64::from_be_bytes(c.try_into().expect("8 bytes"))).collect())
}

fn encode_entry(output: &MapOutput) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + output.reduce_key.len() + 8 * output.values.len());
    out.extend_from_slice(&(output.reduce_key.len() as u32).to_be_bytes());
    out.extend_from_slice(output.reduce_key.as_bytes());
    encode_values(&output.values, &mut out);
    out
}

fn decode_entry(bytes: &[u8]) -> Result<MapOutput, StorageError> {
    let bad = || StorageError::corrupted("reduce.entries", "entry is truncated");
    let len = u32::from_be_bytes(bytes.get(..4).ok_or_else(bad)?.try_into().expect("4 bytes")) as usize;
    let key = bytes.get(4..4 + len).ok_or_else(bad)?;
    Ok(MapOutput {
        reduce_key: String::from_utf8(key.to_vec()).map_err(|_| StorageError::corrupted("reduce.entries", "key is not UTF-8"))?,
        values: decode_values(&bytes[4 + len..])?,
    })
}

impl ReduceStore {
    /// The store's recent durable commits.
    pub fn io_metrics(&self) -> &Arc<IoMetrics> {
        &self.io
    }

    /// The environment's directory.
    pub fn path(&self) -> &Path {
        self.env.path()
    }

    /// Opens (creating if needed) the store in `path`.
    pub fn open(path: &Path, slow_io_threshold: SlowIoThreshold) -> Result<ReduceStore, StorageError> {
        let env = crate::index_env::open_index_env(path, 16 << 30, 4)?;
        let mut wtxn = env.write_txn()?;
        let entries = env.create_database(&mut wtxn, Some(ENTRIES))?;
        let results = env.create_database(&mut wtxn, Some(RESULTS))?;
        let meta = env.create_database(&mut wtxn, Some(META))?;
        wtxn.commit()?;
        Ok(ReduceStore { env, entries, results, meta, io: Arc::new(IoMetrics::new(path.display().to_string(), slow_io_threshold)) })
    }

    /// The etag the stored outputs and results are up to date with.
    pub fn last_etag(&self) -> Result<u64, StorageError> {
        let rtxn = self.env.read_txn()?;
        Ok(self.meta.get(&rtxn, LAST_ETAG)?.and_then(crate::tables::decode_etag).unwrap_or(0))
    }

    /// Replaces the map output of each document (None: the document is gone), re-reduces only the keys
    /// touched, and records `last_etag`, all in one durable transaction.
    pub fn apply(&self, changes: &[(String, Option<MapOutput>)], last_etag: u64) -> Result<(), StorageError> {
        let mut wtxn = self.env.write_txn()?;
        for (doc_key, new) in changes {
            if doc_key.is_empty() {
                continue;
            }
            if let Some(old) = self.entries.get(&wtxn, doc_key.as_bytes())?.map(decode_entry).transpose()? {
                self.add(&mut wtxn, &old.reduce_key, &old.values, -1.0)?;
                self.entries.delete(&mut wtxn, doc_key.as_bytes())?;
            }
            if let Some(new) = new {
                self.add(&mut wtxn, &new.reduce_key, &new.values, 1.0)?;
                self.entries.put(&mut wtxn, doc_key.as_bytes(), &encode_entry(new))?;
            }
        }
        self.meta.put(&mut wtxn, LAST_ETAG, &last_etag.to_be_bytes())?;
        let timer = IoMetrics::start();
        wtxn.commit()?;
        record_commit(&self.io, timer);
        Ok(())
    }

    fn add(&self, wtxn: &mut heed::RwTxn<'_>, reduce_key: &str, values: &[f64], sign: f64) -> Result<(), StorageError> {
        let key = reduce_key.as_bytes();
        let mut current = match self.results.get(wtxn, key)? {
            Some(bytes) => decode_values(bytes)?,
            None => vec![0.0; values.len()],
        };
        current.resize(values.len().max(current.len()), 0.0);
        for (c, v) in current.iter_mut().zip(values) {
            *c += sign * v;
        }
        if current.first().copied().unwrap_or(0.0) <= 0.0 {
            self.results.delete(wtxn, key)?;
        } else {
            let mut bytes = Vec::with_capacity(current.len() * 8);
            encode_values(&current, &mut bytes);
            self.results.put(wtxn, key, &bytes)?;
        }
        Ok(())
    }

    /// Every reduce result, in reduce-key order.
    pub fn rows(&self) -> Result<Vec<ReduceRow>, StorageError> {
        let rtxn = self.env.read_txn()?;
        let mut out = Vec::new();
        for entry in self.results.iter(&rtxn)? {
            let (k, v) = entry?;
            out.push(ReduceRow { reduce_key: String::from_utf8_lossy(k).into_owned(), values: decode_values(v)? });
        }
        Ok(out)
    }

    /// Number of reduce keys with results.
    pub fn count(&self) -> Result<u64, StorageError> {
        let rtxn = self.env.read_txn()?;
        Ok(self.results.len(&rtxn)?)
    }

    /// Bytes of the data file.
    pub fn size_on_disk(&self) -> u64 {
        self.env.real_disk_size().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(key: &str, sum: f64) -> Option<MapOutput> {
        Some(MapOutput { reduce_key: key.into(), values: vec![1.0, sum] })
    }

    #[test]
    fn updates_and_deletes_move_contributions_between_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = ReduceStore::open(dir.path(), SlowIoThreshold::default()).unwrap();
        store.apply(&[("o/1".into(), out("a", 10.0)), ("o/2".into(), out("a", 5.0)), ("o/3".into(), out("b", 1.0))], 3).unwrap();
        store.apply(&[("o/2".into(), out("b", 7.0)), ("o/3".into(), None)], 5).unwrap();
        let rows = store.rows().unwrap();
        assert_eq!(
            rows,
            vec![
                ReduceRow { reduce_key: "a".into(), values: vec![1.0, 10.0] },
                ReduceRow { reduce_key: "b".into(), values: vec![1.0, 7.0] }
            ]
        );
        assert_eq!(store.last_etag().unwrap(), 5);
        drop(store);
        let reopened = ReduceStore::open(dir.path(), SlowIoThreshold::default()).unwrap();
        assert_eq!(reopened.rows().unwrap().len(), 2);
        reopened.apply(&[("o/1".into(), None), ("o/2".into(), None)], 6).unwrap();
        assert!(reopened.rows().unwrap().is_empty(), "keys whose count drops to zero disappear");
    }
}
