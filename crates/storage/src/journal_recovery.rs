//! Opening a database with a journal: find the last durable checkpoint record, put its meta pages back into
//! the data file (so LMDB opens exactly the snapshot that was flushed, whatever later unflushed writes reached
//! the disk), and replay the transaction records after it in order. The first record that is torn, fails its
//! checksum or does not follow its predecessor ends the replay: it was never acknowledged.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use heed::{Env, WithoutTls};

use crate::journal_file::{self, HEADER_BYTES};
use crate::journal_record::{self, Record, TableOp};
use crate::tables::{Tables, DATA_FILE};
use crate::StorageError;

/// File in the database directory naming the database the journal must belong to (written with the first
/// journal, so a journal copied from another database is refused before it touches the data file).
pub(crate) const DATABASE_ID_FILE: &str = "database.id";

/// The last checkpoint record found.
#[derive(Debug, Clone)]
pub(crate) struct FoundCheckpoint {
    pub covers: u64,
    pub lmdb_txn: u64,
    pub page_size: u32,
    pub meta_pages: Vec<u8>,
}

/// What the journal directory holds.
#[derive(Default)]
pub(crate) struct RecoveryPlan {
    pub checkpoint: Option<FoundCheckpoint>,
    /// Transactions after the checkpoint, in order, ids consecutive.
    pub replay: Vec<(u64, Vec<TableOp>)>,
    pub files: Vec<(u64, PathBuf)>,
    pub spares: Vec<PathBuf>,
    /// Bytes of the records to replay (to size the map).
    pub replay_bytes: u64,
}

/// Reads the database id file, if any.
pub(crate) fn recorded_database_id(db_dir: &Path) -> Result<Option<String>, StorageError> {
    let path = db_dir.join(DATABASE_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(journal_file::io_error(&path)(e)),
    }
}

/// Writes the database id file durably.
pub(crate) fn record_database_id(db_dir: &Path, database_id: &str) -> Result<(), StorageError> {
    let path = db_dir.join(DATABASE_ID_FILE);
    let tmp = db_dir.join(format!("{DATABASE_ID_FILE}.tmp"));
    let io = journal_file::io_error(&path);
    let written =
        std::fs::write(&tmp, database_id).and_then(|()| std::fs::File::open(&tmp)?.sync_all()).and_then(|()| std::fs::rename(&tmp, &path));
    written.map_err(io)?;
    journal_file::sync_dir(db_dir)
}

/// Scans the journal of the database in `db_dir`.
pub(crate) fn scan(db_dir: &Path, database_id: Option<&str>) -> Result<RecoveryPlan, StorageError> {
    let dir = db_dir.join(journal_file::JOURNAL_DIR);
    let (files, spares) = journal_file::list(&dir)?;
    if files.is_empty() {
        return Ok(RecoveryPlan { files, spares, ..RecoveryPlan::default() });
    }
    let Some(database_id) = database_id else {
        return Err(StorageError::Journal { path: dir, reason: format!("the database has no {DATABASE_ID_FILE} to match it with") });
    };
    let mut plan = RecoveryPlan { files: files.clone(), spares, ..RecoveryPlan::default() };
    // Every whole transaction record (a file's records end at its first bad one), by id: the merger goes on
    // committing while a checkpoint's data-file flush runs, so records after the checkpoint may precede its
    // record, possibly in an earlier file.
    let mut transactions: BTreeMap<u64, (Vec<TableOp>, u64)> = BTreeMap::new();
    for (seq, path) in &files {
        let bytes = journal_file::read(path, *seq, database_id)?;
        let mut at = HEADER_BYTES as usize;
        loop {
            let (record, len) = match journal_record::decode(bytes.get(at..).unwrap_or(&[]), *seq) {
                Ok(decoded) => decoded,
                Err(end) => {
                    tracing::debug!(file = %path.display(), offset = at, ?end, "end of journal records");
                    break;
                }
            };
            at += len;
            match record {
                Record::Checkpoint { covers, lmdb_txn, page_size, meta_pages } => {
                    plan.checkpoint = Some(FoundCheckpoint { covers, lmdb_txn, page_size, meta_pages });
                }
                Record::Transaction { id, ops } => {
                    transactions.insert(id, (ops, len as u64));
                }
            }
        }
    }
    // Replay from the checkpoint while ids follow each other: the first missing one was never acknowledged,
    // nor was anything after it.
    if let Some(checkpoint) = &plan.checkpoint {
        let mut next = checkpoint.covers + 1;
        while let Some((ops, len)) = transactions.remove(&next) {
            plan.replay.push((next, ops));
            plan.replay_bytes += len;
            next += 1;
        }
    }
    #[cfg(test)]
    if broken_recovery::drops_last_record() {
        plan.replay.pop();
    }
    Ok(plan)
}

/// Puts the checkpoint's meta pages back at the start of the data file (a no-op after a clean shutdown,
/// when they are already there), durably.
pub(crate) fn restore_meta_pages(db_dir: &Path, checkpoint: &FoundCheckpoint) -> Result<(), StorageError> {
    let path = db_dir.join(DATA_FILE);
    if checkpoint.meta_pages.len() != 2 * checkpoint.page_size as usize {
        return Err(StorageError::Journal { path, reason: "its checkpoint does not hold two meta pages".into() });
    }
    let file = OpenOptions::new().read(true).write(true).open(&path).map_err(journal_file::io_error(&path))?;
    let mut current = vec![0u8; checkpoint.meta_pages.len()];
    file.read_exact_at(&mut current, 0).map_err(journal_file::io_error(&path))?;
    if current != checkpoint.meta_pages {
        tracing::info!(path = %path.display(), txn = checkpoint.lmdb_txn, "restoring the data file to its last checkpoint");
        file.write_all_at(&checkpoint.meta_pages, 0).map_err(journal_file::io_error(&path))?;
        file.sync_data().map_err(journal_file::io_error(&path))?;
    }
    Ok(())
}

/// Applies the transactions after the checkpoint, each in one durable LMDB transaction (so a crash while
/// replaying leaves a prefix, and the next open replays the rest: puts and deletes are idempotent).
pub(crate) fn replay(env: &Env<WithoutTls>, tables: &Tables, plan: &RecoveryPlan) -> Result<(), StorageError> {
    for (id, ops) in &plan.replay {
        let mut wtxn = env.write_txn()?;
        for op in ops {
            let name = match op {
                TableOp::Put { table, .. } | TableOp::Delete { table, .. } => table,
            };
            let table = tables.by_name(name).ok_or_else(|| StorageError::Journal {
                path: PathBuf::from(journal_file::JOURNAL_DIR),
                reason: format!("transaction {id} writes to an unknown table `{name}`"),
            })?;
            match op {
                TableOp::Put { key, value, .. } => table.put(&mut wtxn, key, value)?,
                TableOp::Delete { key, .. } => {
                    table.delete(&mut wtxn, key)?;
                }
            }
        }
        wtxn.commit()?;
    }
    if !plan.replay.is_empty() {
        tracing::info!(transactions = plan.replay.len(), "replayed the journal after the last checkpoint");
    }
    Ok(())
}

/// A deliberately broken recovery for the crash-image test: it must notice (tests only).
#[cfg(test)]
pub(crate) mod broken_recovery {
    use std::cell::Cell;

    thread_local! {
        static DROP_LAST: Cell<bool> = const { Cell::new(false) };
    }

    /// While set on this thread, recovery forgets the last journal record it should replay.
    pub fn set(on: bool) {
        DROP_LAST.with(|d| d.set(on));
    }

    pub fn drops_last_record() -> bool {
        DROP_LAST.with(|d| d.get())
    }
}
