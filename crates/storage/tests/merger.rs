//! The transaction merger on real files: merging, failure isolation, panics, durability across reopen.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use corvid_storage::{check_closed_store, StorageError, Store, StoreOptions, TransactionMerger};

fn options() -> StoreOptions {
    StoreOptions { map_size: 1 << 30, max_readers: 126, disk_reserve_bytes: 0, ..Default::default() }
}

fn open(dir: &std::path::Path) -> (Arc<Store>, TransactionMerger) {
    let store = Arc::new(Store::open(dir, &options()).unwrap());
    let merger = TransactionMerger::start("test", store.clone(), 1024, |_| {}).unwrap();
    (store, merger)
}

/// Every test ends by checking the storage layout's invariants on what it wrote.
fn assert_sound(store: &Store) {
    let report = store.check_invariants().unwrap();
    assert!(report.is_sound(), "{:#?}", report.violations);
}

#[derive(Debug)]
#[allow(dead_code)] // the message is read through Debug when a test fails
struct TestError(String);

impl From<StorageError> for TestError {
    fn from(e: StorageError) -> Self {
        TestError(e.to_string())
    }
}

fn put(merger: &TransactionMerger, id: &str, body: &str) -> Result<u64, TestError> {
    let (id, body) = (id.to_owned(), body.to_owned());
    merger.write_blocking(move |txn| Ok::<_, TestError>(txn.put_document(&id, "Things", body, "{}".into(), 0, 1)?.etag))
}

#[test]
fn concurrent_writes_are_merged_into_few_durable_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    let merger = Arc::new(merger);
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let merger = merger.clone();
            std::thread::spawn(move || {
                (0..50).map(|i| put(&merger, &format!("things/{t}-{i}"), &format!("{{\"n\":{i}}}")).unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut etags: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    etags.sort_unstable();
    etags.dedup();
    assert_eq!(etags.len(), 800, "every write gets its own etag");
    let stats = merger.stats();
    assert_eq!(stats.merged_commands, 800);
    assert!(stats.merger_commits <= 800);
    let snapshot = store.read().unwrap();
    assert_eq!(snapshot.count_documents().unwrap(), 800);
    assert_eq!(snapshot.last_etag().unwrap(), 800);
    assert_sound(&store);
}

/// Holds the writer busy so the next submissions queue up and land in one merged transaction.
fn block_writer(merger: &TransactionMerger) -> mpsc::Sender<()> {
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    merger
        .submit(
            move |_txn| {
                started_tx.send(()).unwrap();
                wait.recv_timeout(Duration::from_secs(5)).ok();
                Ok::<_, TestError>(())
            },
            |_| {},
        )
        .unwrap();
    started.recv().unwrap();
    release
}

#[test]
fn a_failing_command_rolls_back_alone_inside_a_merged_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    let release = block_writer(&merger);
    let (tx, rx) = mpsc::channel();
    for (id, fail) in [("a", false), ("b", true), ("c", false)] {
        let tx = tx.clone();
        merger
            .submit(
                move |txn| {
                    txn.put_document(id, "Things", "{}".into(), "{}".into(), 0, 1)?;
                    if fail {
                        return Err(TestError("conflict".into()));
                    }
                    Ok(())
                },
                move |r: Result<(), TestError>| tx.send((id, r.is_ok())).unwrap(),
            )
            .unwrap();
    }
    release.send(()).unwrap();
    let mut answers: Vec<(&str, bool)> = (0..3).map(|_| rx.recv().unwrap()).collect();
    answers.sort();
    assert_eq!(answers, [("a", true), ("b", false), ("c", true)]);
    let snapshot = store.read().unwrap();
    assert!(snapshot.document("a").unwrap().is_some());
    assert!(snapshot.document("b").unwrap().is_none(), "the failed command's write is rolled back");
    assert!(snapshot.document("c").unwrap().is_some());
    let (a, c) = (snapshot.document("a").unwrap().unwrap(), snapshot.document("c").unwrap().unwrap());
    assert_eq!(c.etag, a.etag + 1, "the rolled-back etag is reused, so etags stay dense");
    assert_eq!(merger.stats().failed_commands, 1);
    assert_sound(&store);
}

#[test]
fn a_panicking_command_does_not_stop_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    let result = merger.write_blocking(|txn| -> Result<(), TestError> {
        txn.put_document("p", "Things", "{}".into(), "{}".into(), 0, 1)?;
        panic!("boom");
    });
    assert!(result.is_err());
    put(&merger, "after", "{}").unwrap();
    let snapshot = store.read().unwrap();
    assert!(snapshot.document("p").unwrap().is_none());
    assert!(snapshot.document("after").unwrap().is_some());
    assert_eq!(merger.stats().panics, 1);
    assert_sound(&store);
}

#[test]
fn writes_survive_reopen_and_etags_keep_increasing() {
    let dir = tempfile::tempdir().unwrap();
    let first_etag;
    {
        let (_store, merger) = open(dir.path());
        put(&merger, "x", r#"{"v":1}"#).unwrap();
        first_etag = put(&merger, "y", r#"{"v":2}"#).unwrap();
        merger.write_blocking(|txn| Ok::<_, TestError>(txn.delete_document("x", 2)?)).unwrap();
        merger.stop();
    }
    let closed = check_closed_store(dir.path()).unwrap().unwrap();
    assert!(closed.is_sound() && closed.documents == 1 && closed.tombstones == 1, "{closed:#?}");
    let (store, merger) = open(dir.path());
    {
        let snapshot = store.read().unwrap();
        assert!(snapshot.document("x").unwrap().is_none());
        assert_eq!(snapshot.document("y").unwrap().unwrap().body, r#"{"v":2}"#);
        let mut tombstones = Vec::new();
        snapshot
            .tombstones_after_etag(0, |t| {
                tombstones.push(t);
                true
            })
            .unwrap();
        assert_eq!(tombstones.len(), 1);
        assert_eq!(tombstones[0].id, "x");
        assert!(tombstones[0].etag > first_etag);
    }
    let next = put(&merger, "z", "{}").unwrap();
    assert_eq!(next, first_etag + 2, "the etag after the tombstone's");
    assert_sound(&store);
}

#[test]
fn overwrites_keep_the_etag_and_collection_indexes_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    put(&merger, "a", r#"{"v":1}"#).unwrap();
    put(&merger, "b", r#"{"v":1}"#).unwrap();
    put(&merger, "a", r#"{"v":2}"#).unwrap();
    let snapshot = store.read().unwrap();
    let mut order = Vec::new();
    snapshot
        .documents_after_etag(0, |d| {
            order.push((d.id.clone(), d.etag));
            true
        })
        .unwrap();
    assert_eq!(order, [("b".to_owned(), 2), ("a".to_owned(), 3)]);
    assert_eq!(snapshot.collection_counts().unwrap(), [("Things".to_owned(), 2)]);
    assert_sound(&store);
}

#[test]
fn readers_see_a_stable_snapshot_while_the_writer_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    put(&merger, "a", r#"{"v":1}"#).unwrap();
    let snapshot = store.read().unwrap();
    put(&merger, "a", r#"{"v":2}"#).unwrap();
    put(&merger, "b", r#"{"v":1}"#).unwrap();
    assert_eq!(snapshot.document("a").unwrap().unwrap().body, r#"{"v":1}"#);
    assert!(snapshot.document("b").unwrap().is_none());
    assert_eq!(store.read().unwrap().document("a").unwrap().unwrap().body, r#"{"v":2}"#);
    assert_sound(&store);
}

#[test]
fn preallocated_space_is_harmless_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_store, merger) = open(dir.path());
        for i in 0..100 {
            put(&merger, &format!("d/{i}"), &format!("{{\"i\":{i}}}")).unwrap();
        }
        merger.stop();
    }
    let len = std::fs::metadata(dir.path().join("data.mdb")).unwrap().len();
    assert!(len >= 1 << 20, "the data file keeps zero-filled space ahead of its pages ({len} bytes)");
    let (store, merger) = open(dir.path());
    put(&merger, "d/new", "{}").unwrap();
    let snapshot = store.read().unwrap();
    assert_eq!(snapshot.count_documents().unwrap(), 101);
    assert_eq!(snapshot.document("d/42").unwrap().unwrap().body, r#"{"i":42}"#);
    assert_sound(&store);
}
