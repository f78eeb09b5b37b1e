//! Checkpoints, on the merger thread between commits: the data file is flushed (`mdb_env_sync`), a read
//! transaction is opened on the snapshot just flushed, and a checkpoint record carrying that snapshot's meta
//! pages is made durable in the journal; then the read transaction on the previous checkpoint is let go.
//!
//! Why the read transaction: LMDB commits without flushing (`MDB_NOSYNC`), so after a power loss the data
//! file may hold a newer meta page than the pages it points to. Recovery puts the checkpoint's meta pages
//! back; that is only sound if none of the checkpointed snapshot's pages were overwritten since, and LMDB
//! reuses a freed page only once no reader can see it. Holding a reader on the checkpointed snapshot until the
//! next checkpoint record is durable keeps its pages as they were flushed.

use std::time::{Duration, Instant};

use heed::{RoTxn, WithoutTls};

use crate::journal::{flushed_state, Journal};
use crate::journal_file;
use crate::store::Store;
use crate::StorageError;

/// A checkpoint once this many record bytes were written since the last (most of a journal file, so files
/// are recycled rather than created).
pub(crate) const CHECKPOINT_BYTES: u64 = journal_file::FILE_BYTES * 3 / 4;
/// A checkpoint at least this often while there are writes (bounds replay time after a crash).
pub(crate) const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);

/// The merger's checkpoint state: the read transaction that protects the last checkpoint's pages.
pub(crate) struct Checkpointer<'s> {
    store: &'s Store,
    protected: Option<RoTxn<'s, WithoutTls>>,
    last: Instant,
}

impl<'s> Checkpointer<'s> {
    /// Protects the snapshot the journal's last checkpoint names: the latest commit, as no commit happened
    /// since it (at open, or the previous writer stopped with a checkpoint).
    pub fn new(store: &'s Store) -> Result<Checkpointer<'s>, StorageError> {
        Ok(Checkpointer { store, protected: Some(store.env.read_txn()?), last: Instant::now() })
    }

    /// Whether the journal has grown enough, or enough time passed with writes, for a checkpoint.
    pub fn due(&self, journal: &Journal) -> bool {
        journal.bytes_since_checkpoint >= CHECKPOINT_BYTES
            || (journal.bytes_since_checkpoint > 0 && self.last.elapsed() >= CHECKPOINT_INTERVAL)
    }

    /// Flushes the data file and makes a checkpoint record durable. Only between commits.
    pub fn checkpoint(&mut self, journal: &mut Journal) -> Result<(), StorageError> {
        #[cfg(test)]
        journal_file::io_log::data_copy(self.store.path());
        self.store.env.force_sync()?;
        let fresh = self.store.env.read_txn()?;
        let state = flushed_state(&self.store.env, self.store.path())?;
        #[cfg(test)]
        journal_file::io_log::mark(self.store.path(), "data-synced");
        journal.checkpoint(&state)?;
        #[cfg(test)]
        journal_file::io_log::mark(self.store.path(), "checkpoint-durable");
        self.protected = Some(fresh);
        self.last = Instant::now();
        Ok(())
    }

    /// Runs `f` (which must not commit) with no read transaction of the merger open: resizing the map
    /// needs that. A checkpoint first, so the snapshot protected afterwards is again the checkpointed one.
    pub fn without_protection<T>(&mut self, journal: &mut Journal, f: impl FnOnce() -> T) -> Result<T, StorageError> {
        self.checkpoint(journal)?;
        self.protected = None;
        let result = f();
        self.protected = Some(self.store.env.read_txn()?);
        Ok(result)
    }
}
