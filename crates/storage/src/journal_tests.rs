//! Journal recovery at file and recycling boundaries, and journals that must be refused.

use std::path::Path;
use std::sync::Arc;

use crate::journal_file::{self, JOURNAL_DIR};
use crate::tables::{meta_keys, DATA_FILE};
use crate::{StorageError, Store, StoreOptions, TransactionMerger};

fn options() -> StoreOptions {
    StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() }
}

fn write_docs(merger: &TransactionMerger, from: u64, count: u64, size: usize) {
    for i in from..from + count {
        let body = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "y".repeat(size));
        let written: Result<_, StorageError> =
            merger.write_blocking(move |txn| txn.put_document(&format!("docs/{i}"), "Docs", body, "{}".into(), 0, 1));
        written.unwrap();
    }
}

/// The files a process crash leaves (the page cache survives it): everything but LMDB's lock file.
fn crash_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join(JOURNAL_DIR)).unwrap();
    for name in [DATA_FILE, "database.id"] {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
    for entry in std::fs::read_dir(from.join(JOURNAL_DIR)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(JOURNAL_DIR).join(entry.file_name())).unwrap();
    }
}

fn journal_files(dir: &Path) -> Vec<std::path::PathBuf> {
    journal_file::list(&dir.join(JOURNAL_DIR)).unwrap().0.into_iter().map(|(_, p)| p).collect()
}

#[test]
fn a_crash_after_files_were_recycled_replays_from_the_last_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("db");
    let store = Arc::new(Store::open(&db, &options()).unwrap());
    let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
    // Several journal files' worth: checkpoints by size recycle the early ones.
    write_docs(&merger, 0, 400, 3000);
    let stats = merger.stats();
    assert!(stats.checkpoints >= 2, "{stats:?}");
    // 400 records of 3 KB fill several 256 KiB files; only those since the last checkpoint are kept.
    assert!(journal_files(&db).len() <= 2, "{:?}", journal_files(&db));
    crash_copy(&db, &root.path().join("crashed"));
    merger.stop();
    let recovered = Store::open(&root.path().join("crashed"), &options()).unwrap();
    let read = recovered.read().unwrap();
    for i in 0..400 {
        assert!(read.document(&format!("docs/{i}")).unwrap().is_some(), "docs/{i} lost");
    }
    assert_eq!(read.last_etag().unwrap(), 400);
    assert!(recovered.check_invariants().unwrap().violations.is_empty());
}

#[test]
fn a_truncated_or_garbage_tail_ends_the_replay_at_the_last_whole_record() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("db");
    let store = Arc::new(Store::open(&db, &options()).unwrap());
    let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
    write_docs(&merger, 0, 20, 100);
    let crashed = root.path().join("crashed");
    crash_copy(&db, &crashed);
    merger.stop();
    // Cut the newest file in the middle of its last record, then scribble after it.
    let newest = journal_files(&crashed).pop().unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let end = bytes.iter().rposition(|b| *b != 0).unwrap();
    bytes.truncate(end - 10);
    bytes.extend_from_slice(b"garbage that is no record at all");
    std::fs::write(&newest, &bytes).unwrap();
    // LMDB's file holds all 20 (a process crash): recovery goes back to the checkpoint and replays 19.
    let recovered = Store::open(&crashed, &options()).unwrap();
    let read = recovered.read().unwrap();
    assert!(read.document("docs/18").unwrap().is_some());
    assert!(read.document("docs/19").unwrap().is_none(), "the torn record was applied");
    assert!(recovered.check_invariants().unwrap().violations.is_empty());
}

#[test]
fn a_journal_of_another_database_is_refused_and_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    for dir in [&a, &b] {
        let store = Arc::new(Store::open(dir, &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
        write_docs(&merger, 0, 3, 10);
    }
    let data_before = std::fs::read(b.join(DATA_FILE)).unwrap();
    std::fs::remove_dir_all(b.join(JOURNAL_DIR)).unwrap();
    crash_copy(&a, &root.path().join("a-copy"));
    std::fs::rename(root.path().join("a-copy").join(JOURNAL_DIR), b.join(JOURNAL_DIR)).unwrap();
    match Store::open(&b, &options()) {
        Err(StorageError::Journal { reason, .. }) => assert!(reason.contains("belongs to database"), "{reason}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a foreign journal was accepted"),
    }
    assert_eq!(std::fs::read(b.join(DATA_FILE)).unwrap(), data_before, "the data file was touched");
}

#[test]
fn a_journal_file_with_a_garbage_header_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("db");
    drop(Store::open(&db, &options()).unwrap());
    let file = journal_files(&db).pop().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[..64].copy_from_slice(&[0xAB; 64]);
    std::fs::write(&file, bytes).unwrap();
    let error = Store::open(&db, &options()).err().expect("garbage accepted");
    assert!(matches!(&error, StorageError::Journal { reason, .. } if reason.contains("bad magic")), "{error}");
}

#[test]
fn a_database_of_the_previous_format_opens_and_starts_a_journal() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("db");
    {
        let store = Arc::new(Store::open(&db, &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 64, |_| {}).unwrap();
        write_docs(&merger, 0, 5, 10);
        merger.stop();
        let mut wtxn = store.env.write_txn().unwrap();
        store.tables.meta.put(&mut wtxn, meta_keys::FORMAT_VERSION, &2u32.to_be_bytes()).unwrap();
        wtxn.commit().unwrap();
        store.env.force_sync().unwrap();
        // What version 2 left: no journal, no database id file (and its Drop must not write one).
        store.journal.lock().take();
    }
    std::fs::remove_dir_all(db.join(JOURNAL_DIR)).unwrap();
    std::fs::remove_file(db.join("database.id")).unwrap();
    let store = Store::open(&db, &options()).unwrap();
    let read = store.read().unwrap();
    assert_eq!(read.count_documents().unwrap(), 5);
    assert_eq!(journal_files(&db).len(), 1);
    assert!(db.join("database.id").is_file());
}
