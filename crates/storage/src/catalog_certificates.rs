//! The catalog's table of client certificates: thumbprint -> the record the server keeps for it (opaque
//! JSON bytes here). Each change is its own LMDB transaction, synced at commit like the database entries.

use crate::catalog::Catalog;
use crate::StorageError;

impl Catalog {
    /// Every stored certificate record, in thumbprint order.
    pub fn certificates(&self) -> Result<Vec<Vec<u8>>, StorageError> {
        let Some(table) = self.certificates else {
            return Ok(Vec::new());
        };
        let rtxn = self.env.read_txn()?;
        let mut out = Vec::new();
        for entry in table.iter(&rtxn)? {
            out.push(entry?.1.to_vec());
        }
        Ok(out)
    }

    /// Stores (or replaces) the record of `thumbprint`.
    pub fn put_certificate(&self, thumbprint: &str, record: &[u8]) -> Result<(), StorageError> {
        let table = self.certificates.ok_or_else(|| StorageError::corrupted("catalog.certificates", "the catalog is read-only"))?;
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wtxn = self.env.write_txn()?;
        table.put(&mut wtxn, thumbprint.as_bytes(), record)?;
        wtxn.commit()?;
        Ok(())
    }

    /// Removes the record of `thumbprint`; whether there was one.
    pub fn delete_certificate(&self, thumbprint: &str) -> Result<bool, StorageError> {
        let table = self.certificates.ok_or_else(|| StorageError::corrupted("catalog.certificates", "the catalog is read-only"))?;
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wtxn = self.env.write_txn()?;
        let existed = table.delete(&mut wtxn, thumbprint.as_bytes())?;
        wtxn.commit()?;
        Ok(existed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let catalog = Catalog::open(dir.path()).unwrap();
            catalog.put_certificate("AB", br#"{"a":1}"#).unwrap();
            catalog.put_certificate("CD", b"{}").unwrap();
            assert!(catalog.delete_certificate("CD").unwrap());
            assert!(!catalog.delete_certificate("CD").unwrap());
        }
        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.certificates().unwrap(), vec![br#"{"a":1}"#.to_vec()]);
    }
}
