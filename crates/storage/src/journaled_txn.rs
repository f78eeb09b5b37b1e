//! The only way the merger's jobs write to the database environment: every put and delete goes to LMDB and
//! into the transaction's journal buffer, which becomes part of the merged commit's journal record. The raw
//! `RwTxn` is private to this module, so a write that would bypass the journal does not compile; a new table
//! declared in `tables.rs` is covered without further work.

use heed::{RoTxn, RwTxn, WithoutTls};

use crate::journal_record::OpBuffer;
use crate::tables::Table;
use crate::StorageError;

/// A (nested) write transaction of the merger that records what it writes.
pub(crate) struct JournaledTxn<'t> {
    txn: RwTxn<'t>,
    ops: OpBuffer,
}

impl<'t> JournaledTxn<'t> {
    pub fn new(txn: RwTxn<'t>) -> JournaledTxn<'t> {
        JournaledTxn { txn, ops: OpBuffer::default() }
    }

    /// `table[key] = value`, recorded.
    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        table.put(&mut self.txn, key, value)?;
        self.ops.put(table.name, key, value);
        Ok(())
    }

    /// Removes `table[key]`, recorded when it existed; whether it did.
    pub fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, StorageError> {
        let existed = table.delete(&mut self.txn, key)?;
        if existed {
            self.ops.delete(table.name, key);
        }
        Ok(existed)
    }

    /// The LMDB transaction and the writes it recorded, for the merger to commit or abort.
    pub fn into_parts(self) -> (RwTxn<'t>, OpBuffer) {
        (self.txn, self.ops)
    }
}

impl<'t> std::ops::Deref for JournaledTxn<'t> {
    type Target = RoTxn<'t, WithoutTls>;
    fn deref(&self) -> &Self::Target {
        &self.txn
    }
}
