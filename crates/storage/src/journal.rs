//! A database's write-ahead journal, written by the merger thread: one transaction record per merged
//! commit, appended in commit order, and checkpoint records. The merger writes a record before the LMDB
//! commit it describes (so a process crash never loses a commit readers saw) and the flusher makes it durable
//! (`group_flusher.rs`); a checkpoint record is written and flushed here.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use heed::{Env, WithoutTls};

use crate::journal_file::{self, JournalFile, HEADER_BYTES};
use crate::journal_record::{self, OpBuffer, RECORD_HEADER_LEN};
use crate::tables::DATA_FILE;
use crate::StorageError;

/// Where a record went, for the flusher.
pub(crate) struct Appended {
    pub file: Arc<File>,
    pub path: PathBuf,
    /// The file's size (preallocated).
    pub capacity: u64,
}

/// The journal being written.
pub(crate) struct Journal {
    dir: PathBuf,
    database_id: String,
    current: JournalFile,
    /// Offset of the next record in the current file.
    end: u64,
    /// Every file a recovery may need, current included, by sequence, with the id of the first transaction
    /// record written to it (records in a file are below the next file's first id).
    files: Vec<(u64, PathBuf, u64)>,
    spares: Vec<PathBuf>,
    /// Id of the next transaction record.
    next_id: u64,
    /// The last record written, until the next: the merger takes it back when its commit fails.
    last: Option<(u64, usize)>,
    /// `bytes_written` when the data file was flushed for the last checkpoint record.
    checkpointed_bytes: u64,
    /// Transaction record bytes written since the journal started.
    pub bytes_written: u64,
}

/// The transactions a flush of the data file covers.
#[derive(Clone, Copy)]
pub(crate) struct Covered {
    id: u64,
    bytes_written: u64,
}

/// The LMDB state a checkpoint record names.
pub(crate) struct CheckpointState {
    pub lmdb_txn: u64,
    pub page_size: u32,
    pub meta_pages: Vec<u8>,
}

/// The state of the latest commit of the environment in `db_dir` (its LMDB transaction id and the meta
/// pages naming it), read before any other commit (on the merger thread, or while opening).
pub(crate) fn flushed_state(env: &Env<WithoutTls>, db_dir: &Path) -> Result<CheckpointState, StorageError> {
    let page_size = env.stat().page_size;
    let path = db_dir.join(DATA_FILE);
    let file = File::open(&path).map_err(journal_file::io_error(&path))?;
    let mut meta_pages = vec![0u8; 2 * page_size as usize];
    file.read_exact_at(&mut meta_pages, 0).map_err(journal_file::io_error(&path))?;
    Ok(CheckpointState { lmdb_txn: env.info().last_txn_id as u64, page_size, meta_pages })
}

impl Journal {
    /// Starts writing in a new file after `previous` (the files found at open, now replaced), with a
    /// checkpoint of the data file as flushed at open; the old files are recycled once it is durable.
    pub fn start(
        dir: &Path,
        database_id: &str,
        next_id: u64,
        previous: Vec<(u64, PathBuf)>,
        spares: Vec<PathBuf>,
        checkpoint: &CheckpointState,
    ) -> Result<Journal, StorageError> {
        std::fs::create_dir_all(dir).map_err(journal_file::io_error(dir))?;
        let mut spares = spares;
        let seq = previous.last().map_or(1, |(seq, _)| seq + 1);
        let current = journal_file::create(dir, seq, database_id, 0, &mut spares)?;
        let mut journal = Journal {
            dir: dir.to_owned(),
            database_id: database_id.to_owned(),
            files: previous.into_iter().map(|(seq, path)| (seq, path, 0)).collect(),
            end: HEADER_BYTES,
            spares,
            next_id,
            last: None,
            checkpointed_bytes: 0,
            bytes_written: 0,
            current,
        };
        journal.files.push((seq, journal.current.path.clone(), next_id));
        let covered = journal.covered_now();
        journal.checkpoint(checkpoint, covered)?;
        Ok(journal)
    }

    /// Appends the record of the next merged commit (not flushed).
    pub fn append_transaction(&mut self, ops: &OpBuffer) -> Result<Appended, StorageError> {
        let needed = (RECORD_HEADER_LEN + 4 + ops.bytes.len()) as u64;
        self.make_room(needed)?;
        let record = journal_record::encode_transaction(self.current.seq, self.next_id, ops);
        self.write(&record)?;
        self.bytes_written += record.len() as u64;
        self.next_id += 1;
        Ok(Appended { file: self.current.file.clone(), path: self.current.path.clone(), capacity: self.current.capacity })
    }

    /// Takes back the last transaction record (its commit failed): its length is zeroed, so it reads as the
    /// end of the journal, and the next record overwrites it.
    pub fn discard_last(&mut self) -> Result<(), StorageError> {
        let Some((offset, len)) = self.last.take() else { return Ok(()) };
        journal_file::write_at(&self.current.file, &self.current.path, &[0u8; RECORD_HEADER_LEN], offset)?;
        self.end = offset;
        self.next_id -= 1;
        self.bytes_written -= len as u64;
        Ok(())
    }

    /// What a flush of the data file now covers: every transaction written so far.
    pub fn covered_now(&self) -> Covered {
        Covered { id: self.next_id - 1, bytes_written: self.bytes_written }
    }

    /// The file being written.
    pub fn current_path(&self) -> PathBuf {
        self.current.path.clone()
    }

    /// Record bytes since the data file was last flushed for a checkpoint (what a crash would replay).
    pub fn bytes_since_checkpoint(&self) -> u64 {
        self.bytes_written - self.checkpointed_bytes
    }

    /// Writes and flushes a checkpoint record: the data file was flushed at `state`, which holds every
    /// transaction up to `covers` (later records may precede this one: the merger goes on committing while
    /// the data file is flushed). Then recycles the files holding only records up to `covers`.
    pub fn checkpoint(&mut self, state: &CheckpointState, covered: Covered) -> Result<(), StorageError> {
        let covers = covered.id;
        let needed = (RECORD_HEADER_LEN + 16 + state.meta_pages.len()) as u64;
        self.make_room(needed)?;
        let record = journal_record::encode_checkpoint(self.current.seq, covers, state.lmdb_txn, state.page_size, &state.meta_pages);
        self.write(&record)?;
        self.last = None;
        journal_file::sync(&self.current.file, &self.current.path)?;
        let obsolete_count = (0..self.files.len().saturating_sub(1)).take_while(|i| self.files[i + 1].2 <= covers + 1).count();
        let obsolete: Vec<_> = self.files.drain(..obsolete_count).map(|(seq, path, _)| (seq, path)).collect();
        if !obsolete.is_empty() {
            journal_file::recycle(&self.dir, &obsolete, &mut self.spares)?;
        }
        self.checkpointed_bytes = covered.bytes_written;
        Ok(())
    }

    fn make_room(&mut self, needed: u64) -> Result<(), StorageError> {
        if self.end + needed <= self.current.capacity {
            return Ok(());
        }
        let seq = self.current.seq + 1;
        self.current = journal_file::create(&self.dir, seq, &self.database_id, needed, &mut self.spares)?;
        self.files.push((seq, self.current.path.clone(), self.next_id));
        self.end = HEADER_BYTES;
        self.last = None;
        Ok(())
    }

    fn write(&mut self, record: &[u8]) -> Result<(), StorageError> {
        journal_file::write_at(&self.current.file, &self.current.path, record, self.end)?;
        self.last = Some((self.end, record.len()));
        self.end += record.len() as u64;
        Ok(())
    }
}
