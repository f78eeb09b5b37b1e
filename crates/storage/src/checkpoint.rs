//! Checkpoints, started on the merger thread between commits: a read transaction is opened on the latest
//! commit and its meta pages are read, the data file is flushed (`mdb_env_sync`) on another thread while the
//! merger goes on, and then a checkpoint record carrying those meta pages is made durable in the journal;
//! only then is the read transaction on the previous checkpoint let go.
//!
//! Why the read transaction: LMDB commits without flushing (`MDB_NOSYNC`), so after a power loss the data
//! file may hold a newer meta page than the pages it points to. Recovery puts the checkpoint's meta pages
//! back; that is only sound if none of the checkpointed snapshot's pages were overwritten since, and LMDB
//! reuses a freed page only once no reader can see it. Holding a reader on the checkpointed snapshot until the
//! next checkpoint record is durable keeps its pages as they were flushed.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use corvid_types::io_metrics::{IoKind, IoMetrics, IoTimer};
use heed::{RoTxn, WithoutTls};

use crate::journal::{flushed_state, CheckpointState, Covered, Journal};
use crate::journal_file;
use crate::store::Store;
use crate::tables::DATA_FILE;
use crate::StorageError;

/// A checkpoint once this many record bytes were written since the last (most of a journal file, so files
/// are recycled rather than created).
pub(crate) const CHECKPOINT_BYTES: u64 = journal_file::FILE_BYTES * 3 / 4;
/// A checkpoint at least this often while there are writes (bounds replay time after a crash).
pub(crate) const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);

/// A checkpoint whose data-file flush runs on its own thread while the merger goes on committing.
struct InFlight<'s> {
    /// The flush's result, start (Unix nanoseconds) and duration.
    sync: JoinHandle<(heed::Result<()>, IoTimer)>,
    /// The snapshot being flushed; protected from now on.
    reader: RoTxn<'s, WithoutTls>,
    state: CheckpointState,
    covered: Covered,
}

/// The merger's checkpoint state: the read transaction that protects the last checkpoint's pages, and the
/// checkpoint in progress.
pub(crate) struct Checkpointer<'s> {
    store: &'s Store,
    protected: Option<RoTxn<'s, WithoutTls>>,
    in_flight: Option<InFlight<'s>>,
    last: Instant,
}

impl<'s> Checkpointer<'s> {
    /// Protects the snapshot the journal's last checkpoint names: the latest commit, as no commit happened
    /// since it (at open, or the previous writer stopped with a checkpoint).
    pub fn new(store: &'s Store) -> Result<Checkpointer<'s>, StorageError> {
        Ok(Checkpointer { store, protected: Some(store.env.read_txn()?), in_flight: None, last: Instant::now() })
    }

    /// Whether the journal has grown enough, or enough time passed with writes, for a checkpoint (and none
    /// is in progress).
    pub fn due(&self, journal: &Journal) -> bool {
        let pending = journal.bytes_since_checkpoint();
        self.in_flight.is_none() && (pending >= CHECKPOINT_BYTES || (pending > 0 && self.last.elapsed() >= CHECKPOINT_INTERVAL))
    }

    /// Starts a checkpoint of the latest commit: its meta pages are read now (the file holds them: no
    /// commit can happen meanwhile), a reader protects its pages, and the data file is flushed on another
    /// thread. Only between commits.
    pub fn start(&mut self, journal: &Journal) -> Result<(), StorageError> {
        if self.in_flight.is_some() {
            return Ok(());
        }
        #[cfg(test)]
        journal_file::io_log::data_copy(self.store.path(), "start");
        let reader = self.store.env.read_txn()?;
        let state = flushed_state(&self.store.env, self.store.path())?;
        let env = self.store.env.clone();
        let sync = std::thread::Builder::new()
            .name("checkpoint-sync".into())
            .spawn(move || {
                let timer = IoMetrics::start();
                (env.force_sync(), timer)
            })
            .map_err(|e| StorageError::WriterFailed(e.to_string()))?;
        self.in_flight = Some(InFlight { sync, reader, state, covered: journal.covered_now() });
        Ok(())
    }

    /// Finishes the checkpoint in progress once its flush is done (or, with `wait`, after waiting for it):
    /// the checkpoint record is made durable, the old protected snapshot let go, obsolete files recycled.
    /// Whether one finished.
    pub fn finish(&mut self, journal: &mut Journal, wait: bool) -> Result<bool, StorageError> {
        let Some(in_flight) = self.in_flight.take() else { return Ok(false) };
        if !wait && !in_flight.sync.is_finished() {
            self.in_flight = Some(in_flight);
            return Ok(false);
        }
        let (flushed, timer) = in_flight.sync.join().map_err(|_| StorageError::WriterFailed("the data file flush panicked".into()))?;
        let data_file = self.store.path().join(DATA_FILE);
        let file_size = std::fs::metadata(&data_file).map_or(0, |m| m.len());
        self.store.record_io(timer, &data_file, IoKind::DataSync, 0, file_size);
        flushed?;
        #[cfg(test)]
        journal_file::io_log::mark(self.store.path(), "data-synced");
        let timer = IoMetrics::start();
        journal.checkpoint(&in_flight.state, in_flight.covered)?;
        self.store.record_io(timer, &journal.current_path(), IoKind::JournalSync, in_flight.state.meta_pages.len() as u64, 0);
        #[cfg(test)]
        journal_file::io_log::data_copy(self.store.path(), "end");
        #[cfg(test)]
        journal_file::io_log::mark(self.store.path(), "checkpoint-durable");
        self.protected = Some(in_flight.reader);
        self.last = Instant::now();
        Ok(true)
    }

    /// A whole checkpoint of the latest commit, waited for. Only between commits.
    pub fn checkpoint(&mut self, journal: &mut Journal) -> Result<(), StorageError> {
        self.finish(journal, true)?;
        self.start(journal)?;
        self.finish(journal, true)?;
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
