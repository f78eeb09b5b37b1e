//! Which documents an index's maps loaded (`load()`, `LoadDocument`), so that a change to a loaded document
//! re-indexes the documents that loaded it. One LMDB environment in the index's directory; each indexing
//! batch replaces the references of the documents it mapped, in one transaction.

use std::path::Path;

use heed::types::Bytes;
use heed::{Database, Env, WithoutTls};

use crate::StorageError;

const REFS: &str = "refs";
const BY_DOC: &str = "by_doc";

/// Which documents a static index's map loaded (`load()`, `LoadDocument`) while mapping which (LMDB in the
/// index directory).
pub struct ReferenceStore {
    env: Env<WithoutTls>,
    /// loaded key, 0x00, loading key -> ()
    refs: Database<Bytes, Bytes>,
    /// loading key -> JSON array of loaded keys
    by_doc: Database<Bytes, Bytes>,
}

fn pair_key(loaded: &str, loading: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(loaded.len() + 1 + loading.len());
    key.extend_from_slice(loaded.as_bytes());
    key.push(0);
    key.extend_from_slice(loading.as_bytes());
    key
}

impl ReferenceStore {
    /// Opens (creating if needed) the store in `path`.
    pub fn open(path: &Path) -> Result<ReferenceStore, StorageError> {
        let env = crate::index_env::open_index_env(path, 16 << 30, 2)?;
        let mut wtxn = env.write_txn()?;
        let refs = env.create_database(&mut wtxn, Some(REFS))?;
        let by_doc = env.create_database(&mut wtxn, Some(BY_DOC))?;
        wtxn.commit()?;
        Ok(ReferenceStore { env, refs, by_doc })
    }

    /// Replaces what each loading document loaded (an empty list: nothing now).
    pub fn apply(&self, changes: &[(String, Vec<String>)]) -> Result<(), StorageError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut wtxn = self.env.write_txn()?;
        for (loading, loaded) in changes {
            if loading.is_empty() {
                continue;
            }
            if let Some(old) = self.by_doc.get(&wtxn, loading.as_bytes())? {
                let old: Vec<String> =
                    serde_json::from_slice(old).map_err(|e| StorageError::corrupted("references.by_doc", e.to_string()))?;
                for key in old {
                    self.refs.delete(&mut wtxn, &pair_key(&key, loading))?;
                }
                self.by_doc.delete(&mut wtxn, loading.as_bytes())?;
            }
            let mut unique: Vec<&String> = loaded.iter().filter(|k| !k.is_empty()).collect();
            unique.sort();
            unique.dedup();
            if unique.is_empty() {
                continue;
            }
            for key in &unique {
                self.refs.put(&mut wtxn, &pair_key(key, loading), &[])?;
            }
            self.by_doc.put(&mut wtxn, loading.as_bytes(), serde_json::to_string(&unique).expect("strings serialize").as_bytes())?;
        }
        wtxn.commit()?;
        Ok(())
    }

    /// The documents that loaded `loaded`.
    pub fn loading(&self, loaded: &str) -> Result<Vec<String>, StorageError> {
        let rtxn = self.env.read_txn()?;
        let mut prefix = loaded.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        for item in self.refs.prefix_iter(&rtxn, &prefix)? {
            let (key, _) = item?;
            out.push(String::from_utf8_lossy(&key[prefix.len()..]).into_owned());
        }
        Ok(out)
    }

    /// Whether any document loaded anything (then every document change may concern the index).
    pub fn is_empty(&self) -> Result<bool, StorageError> {
        let rtxn = self.env.read_txn()?;
        Ok(self.by_doc.is_empty(&rtxn)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_finds_references() {
        let dir = tempfile::tempdir().unwrap();
        let store = ReferenceStore::open(dir.path()).unwrap();
        assert!(store.is_empty().unwrap());
        store
            .apply(&[
                ("orders/1".into(), vec!["companies/1".into(), "companies/1".into()]),
                ("orders/2".into(), vec!["companies/1".into()]),
            ])
            .unwrap();
        assert_eq!(store.loading("companies/1").unwrap(), vec!["orders/1".to_owned(), "orders/2".to_owned()]);
        store.apply(&[("orders/1".into(), vec!["companies/2".into()])]).unwrap();
        assert_eq!(store.loading("companies/1").unwrap(), vec!["orders/2".to_owned()]);
        assert_eq!(store.loading("companies/2").unwrap(), vec!["orders/1".to_owned()]);
        store.apply(&[("orders/1".into(), vec![]), ("orders/2".into(), vec![])]).unwrap();
        assert!(store.is_empty().unwrap());
        assert!(store.loading("companies/2").unwrap().is_empty());
    }
}
