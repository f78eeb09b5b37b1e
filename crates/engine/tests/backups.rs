//! Snapshot backups of a real database, restored into a new directory, and the refusals of restore.

use corvid_engine::backup::{
    locate_dump_chain, replay_dump_chain, restore_snapshot, writer_for, BackupKind, BackupPoint, BackupRequest, FULL_BACKUP_EXTENSION,
    INCREMENTAL_BACKUP_EXTENSION, MANIFEST_FILE,
};
use corvid_engine::{BatchCommand, CounterOperation, Database, DatabaseOptions, DocumentCounters, ExpectedChangeVector, IncomingDocument};
use serde_json::json;

fn open(name: &str, dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open(name, dir, &options).unwrap()
}

fn put(id: &str, n: u64) -> BatchCommand {
    let document = IncomingDocument::from_value(json!({"n": n, "@metadata": {"@collection": "Items"}})).unwrap();
    BatchCommand::Put { id: id.into(), expected: ExpectedChangeVector::Any, document }
}

#[test]
fn a_snapshot_restores_to_the_documents_at_the_backup_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = open("source", &dir.path().join("source"));
    db.batch_blocking((0..100).map(|i| put(&format!("items/{i}"), i)).collect()).unwrap();
    let request =
        BackupRequest { destination: dir.path().join("backups"), record: json!({"Name": "source"}), incremental: false, previous: None };
    let mut files = Vec::new();
    let summary = writer_for(BackupKind::Snapshot).write(&db, &request, &mut |path, _| files.push(path.to_owned())).unwrap();
    assert!(summary.folder.join(MANIFEST_FILE).is_file());
    assert!(files.contains(&"data.mdb".to_owned()), "{files:?}");
    // Written after the backup: not in the restored copy.
    db.batch_blocking(vec![put("items/later", 1)]).unwrap();

    let target = dir.path().join("restored");
    let mut reported = 0;
    let manifest = restore_snapshot(&dir.path().join("backups"), &target, &mut |done, total| {
        assert!(done <= total);
        reported = done;
    })
    .unwrap();
    assert_eq!(manifest.database_name, "source");
    assert_eq!(reported, manifest.files.iter().map(|f| f.bytes).sum::<u64>() * 2);
    let restored = open("restored", &target);
    let loaded = restored.load(&["items/99".into(), "items/later".into()], &[], false).unwrap();
    assert!(loaded.results[0].as_deref().unwrap().contains("\"n\":99"));
    assert!(loaded.results[1].is_none());
    // A second restore into the same directory is refused; nothing is overwritten.
    let again = restore_snapshot(&summary.folder, &target, &mut |_, _| {});
    assert!(again.unwrap_err().to_string().contains("already exists"));
    restored.close();
    db.close();
}

fn counters(id: &str, operations: Vec<CounterOperation>) -> DocumentCounters {
    DocumentCounters { id: id.into(), operations }
}

fn increment(name: &str, delta: i64) -> CounterOperation {
    CounterOperation::Increment { name: name.into(), delta }
}

fn delete(id: &str) -> BatchCommand {
    BatchCommand::Delete { id: id.into(), expected: ExpectedChangeVector::Any }
}

/// A document's id, its `n` and its counters.
type DocumentState = (String, String, Vec<(String, i64)>);
/// Writes made between two backups.
type Change = Box<dyn Fn(&Database)>;

/// Every document's body and counters, by id.
fn state(db: &Database) -> Vec<DocumentState> {
    let ids: Vec<String> = (0..40).map(|i| format!("items/{i}")).chain(["items/later".to_owned()]).collect();
    let loaded = db.load(&ids, &[], false).unwrap();
    ids.iter()
        .zip(loaded.results)
        .filter_map(|(id, body)| {
            let body = body?;
            let value: serde_json::Value = serde_json::from_str(&body).unwrap();
            let mut counters: Vec<(String, i64)> = db.counters(id, &[]).unwrap().into_iter().flatten().map(|c| (c.name, c.value)).collect();
            counters.sort();
            Some((id.clone(), value["n"].to_string(), counters))
        })
        .collect()
}

#[test]
fn a_full_dump_backup_and_three_incrementals_restore_to_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let db = open("source", &dir.path().join("source"));
    db.batch_blocking((0..30).map(|i| put(&format!("items/{i}"), i)).collect()).unwrap();
    db.counter_batch_blocking(vec![counters("items/1", vec![increment("likes", 5), increment("views", 1)])]).unwrap();
    let destination = dir.path().join("backups");
    let mut request = BackupRequest { destination: destination.clone(), record: json!({}), incremental: false, previous: None };
    let full = writer_for(BackupKind::Backup).write(&db, &request, &mut |_, _| {}).unwrap();
    assert!(full.folder.file_name().unwrap().to_string_lossy().ends_with(".ravendb-source-A-backup"));
    assert!(full.file.as_deref().unwrap().ends_with(FULL_BACKUP_EXTENSION));
    let mut point = BackupPoint { folder: full.folder.clone(), last_etag: full.last_etag, last_raft_index: full.last_raft_index };

    // Between the backups: new and changed documents, deletes, a document deleted and written again, counters
    // changed (which moves no etag), deleted one by one and all at once.
    let changes: Vec<Change> = vec![
        Box::new(|db| {
            db.batch_blocking(vec![put("items/30", 30), put("items/2", 200), delete("items/3")]).unwrap();
            db.counter_batch_blocking(vec![counters("items/1", vec![increment("likes", 2)])]).unwrap();
        }),
        Box::new(|db| {
            db.batch_blocking(vec![delete("items/4"), delete("items/30"), put("items/31", 31)]).unwrap();
            db.counter_batch_blocking(vec![counters("items/1", vec![CounterOperation::Delete { name: "views".into() }])]).unwrap();
            db.counter_batch_blocking(vec![counters("items/5", vec![increment("x", 1)])]).unwrap();
        }),
        Box::new(|db| {
            db.batch_blocking(vec![delete("items/5"), put("items/5", 55), put("items/2", 201)]).unwrap();
            db.counter_batch_blocking(vec![counters("items/1", vec![CounterOperation::Delete { name: "likes".into() }])]).unwrap();
        }),
    ];
    for change in &changes {
        change(&db);
        request.incremental = true;
        request.previous = Some(point.clone());
        let incremental = writer_for(BackupKind::Backup).write(&db, &request, &mut |_, _| {}).unwrap();
        assert_eq!(incremental.folder, full.folder, "incrementals go next to their full backup");
        assert!(incremental.file.as_deref().unwrap().ends_with(INCREMENTAL_BACKUP_EXTENSION));
        point = BackupPoint { folder: incremental.folder, last_etag: incremental.last_etag, last_raft_index: incremental.last_raft_index };
    }
    // Written after the last backup: not restored.
    let expected = state(&db);
    db.batch_blocking(vec![put("items/later", 1)]).unwrap();

    let chain = locate_dump_chain(&destination, None).unwrap().unwrap();
    assert_eq!(chain.len(), 4);
    let restored = open("restored", &dir.path().join("restored"));
    let results = replay_dump_chain(&restored, &chain, false, &mut |_, _| true).unwrap();
    assert_eq!(results.len(), 4);
    assert_eq!(state(&restored), expected);
    assert!(expected.iter().all(|(id, _, _)| id != "items/3" && id != "items/4" && id != "items/30"));
    assert!(expected.iter().any(|(id, n, _)| id == "items/5" && n == "55"));
    restored.close();
    db.close();
}
