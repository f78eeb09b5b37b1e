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
}

/// The journal being written.
pub(crate) struct Journal {
    dir: PathBuf,
    database_id: String,
    current: JournalFile,
    /// Offset of the next record in the current file.
    end: u64,
    /// Every file since the one holding the last checkpoint record, current included, by sequence.
    files: Vec<(u64, PathBuf)>,
    spares: Vec<PathBuf>,
    /// Id of the next transaction record.
    next_id: u64,
    /// The last record written, until the next: the merger takes it back when its commit fails.
    last: Option<(u64, usize)>,
    /// Record bytes since the last checkpoint record.
    pub bytes_since_checkpoint: u64,
    /// Record bytes ever written by this process.
    pub bytes_written: u64,
}

/// The LMDB state a checkpoint record names.
pub(crate) struct CheckpointState {
    pub lmdb_txn: u64,
    pub page_size: u32,
    pub meta_pages: Vec<u8>,
}

/// The state of the data file of the environment in `db_dir` right after `mdb_env_sync`: read before any
/// other commit (on the merger thread, or while opening).
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
            files: previous,
            end: HEADER_BYTES,
            spares,
            next_id,
            last: None,
            bytes_since_checkpoint: 0,
            bytes_written: 0,
            current,
        };
        journal.files.push((seq, journal.current.path.clone()));
        journal.checkpoint(checkpoint)?;
        Ok(journal)
    }

    /// Appends the record of the next merged commit (not flushed).
    pub fn append_transaction(&mut self, ops: &OpBuffer) -> Result<Appended, StorageError> {
        let needed = (RECORD_HEADER_LEN + 4 + ops.bytes.len()) as u64;
        self.make_room(needed)?;
        let record = journal_record::encode_transaction(self.current.seq, self.next_id, ops);
        self.write(&record)?;
        self.next_id += 1;
        Ok(Appended { file: self.current.file.clone(), path: self.current.path.clone() })
    }

    /// Takes back the last transaction record (its commit failed): its length is zeroed, so it reads as the
    /// end of the journal, and the next record overwrites it.
    pub fn discard_last(&mut self) -> Result<(), StorageError> {
        let Some((offset, len)) = self.last.take() else { return Ok(()) };
        journal_file::write_at(&self.current.file, &self.current.path, &[0u8; RECORD_HEADER_LEN], offset)?;
        self.end = offset;
        self.next_id -= 1;
        self.bytes_since_checkpoint -= len as u64;
        Ok(())
    }

    /// Writes and flushes a checkpoint record (the data file is flushed at `state`, which holds every
    /// transaction record written so far), then recycles the files before the one holding it.
    pub fn checkpoint(&mut self, state: &CheckpointState) -> Result<(), StorageError> {
        let needed = (RECORD_HEADER_LEN + 16 + state.meta_pages.len()) as u64;
        self.make_room(needed)?;
        let record =
            journal_record::encode_checkpoint(self.current.seq, self.next_id - 1, state.lmdb_txn, state.page_size, &state.meta_pages);
        self.write(&record)?;
        self.last = None;
        journal_file::sync(&self.current.file, &self.current.path)?;
        let keep_from = self.files.iter().position(|(seq, _)| *seq == self.current.seq).unwrap_or(0);
        let obsolete: Vec<_> = self.files.drain(..keep_from).collect();
        if !obsolete.is_empty() {
            journal_file::recycle(&self.dir, &obsolete, &mut self.spares)?;
        }
        self.bytes_since_checkpoint = 0;
        Ok(())
    }

    fn make_room(&mut self, needed: u64) -> Result<(), StorageError> {
        if self.end + needed <= self.current.capacity {
            return Ok(());
        }
        let seq = self.current.seq + 1;
        self.current = journal_file::create(&self.dir, seq, &self.database_id, needed, &mut self.spares)?;
        self.files.push((seq, self.current.path.clone()));
        self.end = HEADER_BYTES;
        self.last = None;
        Ok(())
    }

    fn write(&mut self, record: &[u8]) -> Result<(), StorageError> {
        journal_file::write_at(&self.current.file, &self.current.path, record, self.end)?;
        self.last = Some((self.end, record.len()));
        self.end += record.len() as u64;
        self.bytes_since_checkpoint += record.len() as u64;
        self.bytes_written += record.len() as u64;
        Ok(())
    }
}
