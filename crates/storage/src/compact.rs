//! Compaction of a closed database: LMDB's compacting copy (free pages left out, every B-tree rewritten in
//! order) replaces the data file. The copy is fsynced and renamed over `data.mdb`, and the directory
//! fsynced, so a crash at any point leaves either the old file or the new one, never a mix. The journal is
//! emptied first (after a checkpoint): its checkpoint describes the old file.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use heed::{CompactionOption, EnvOpenOptions};

use crate::journal_file::JOURNAL_DIR;
use crate::tables::{self, DATA_FILE};
use crate::{StorageError, Store, StoreOptions};

const COPY_FILE: &str = "data.mdb.compacting";

/// Sizes of the data file before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Size of the data file before the copy.
    pub bytes_before: u64,
    /// Size of the compacted data file.
    pub bytes_after: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io { path: path.to_owned(), source }
}

/// Compacts the database in `dir`. Its `Store` must be closed: while any request still holds it open, LMDB
/// refuses a second opening and this waits up to `wait` for it to go.
pub fn compact_closed_store(dir: &Path, wait: Duration) -> Result<Compaction, StorageError> {
    let data = dir.join(DATA_FILE);
    let copy = dir.join(COPY_FILE);
    let bytes_before = std::fs::metadata(&data).map_err(io(&data))?.len();
    let deadline = Instant::now() + wait;
    // Recovered and closed with a checkpoint, the data file holds everything; the journal (whose checkpoint
    // names this file's meta pages) goes before the file is replaced, and the next opening starts a new one.
    loop {
        let options = StoreOptions { map_size: bytes_before as usize + (1 << 20), disk_reserve_bytes: 0, ..StoreOptions::default() };
        match Store::open(dir, &options) {
            Ok(store) => break drop(store),
            Err(StorageError::Lmdb(heed::Error::EnvAlreadyOpened)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    }
    let journal = dir.join(JOURNAL_DIR);
    match std::fs::remove_dir_all(&journal) {
        Ok(()) => File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&journal)(e)),
    }
    let env = loop {
        let mut open = EnvOpenOptions::new();
        // LMDB takes the larger of this and the size recorded in the file.
        open.map_size(bytes_before as usize + (1 << 20)).max_dbs(tables::TABLE_COUNT + 2);
        // SAFETY (heed's contract): the database is closed, so this is the only opening of the path in the
        // process (heed refuses a second one, retried below), and nothing else writes the file meanwhile.
        #[allow(unsafe_code)]
        match unsafe { open.open(dir) } {
            Ok(env) => break env,
            Err(heed::Error::EnvAlreadyOpened) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.into()),
        }
    };
    let mut file = File::create(&copy).map_err(io(&copy))?;
    let copied = env.copy_to_file(&mut file, CompactionOption::Enabled);
    drop(env);
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&copy);
        return Err(e.into());
    }
    file.sync_all().map_err(io(&copy))?;
    drop(file);
    std::fs::rename(&copy, &data).map_err(io(&data))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    let bytes_after = std::fs::metadata(&data).map_err(io(&data))?.len();
    Ok(Compaction { bytes_before, bytes_after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compacted_store_keeps_its_data_in_less_space() {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 256 << 20, disk_reserve_bytes: 0, ..StoreOptions::default() };
        {
            let store = Store::open(dir.path(), &options).unwrap();
            let mut wtxn = store.env.write_txn().unwrap();
            for i in 0..20_000u32 {
                store.tables.identities.put(&mut wtxn, format!("k{i:08}").as_bytes(), &[7u8; 200]).unwrap();
            }
            wtxn.commit().unwrap();
            let mut wtxn = store.env.write_txn().unwrap();
            for i in 0..19_000u32 {
                store.tables.identities.delete(&mut wtxn, format!("k{i:08}").as_bytes()).unwrap();
            }
            wtxn.commit().unwrap();
        }
        let result = compact_closed_store(dir.path(), Duration::from_secs(5)).unwrap();
        assert!(result.bytes_after * 4 < result.bytes_before, "{result:?}");
        let store = Store::open(dir.path(), &options).unwrap();
        let rtxn = store.env.read_txn().unwrap();
        assert_eq!(store.tables.identities.len(&rtxn).unwrap(), 1_000);
        assert_eq!(store.tables.identities.get(&rtxn, b"k00019999").unwrap(), Some(&[7u8; 200][..]));
    }
}
