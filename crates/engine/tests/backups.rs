//! Snapshot backups of a real database, restored into a new directory, and the refusals of restore.

use corvid_engine::backup::{restore_snapshot, writer_for, BackupKind, BackupRequest, MANIFEST_FILE};
use corvid_engine::{BatchCommand, Database, DatabaseOptions, EngineError, ExpectedChangeVector, IncomingDocument};
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
    let request = BackupRequest { destination: dir.path().join("backups"), record: json!({"Name": "source"}), incremental: false };
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

#[test]
fn the_dump_format_answers_not_yet() {
    let dir = tempfile::tempdir().unwrap();
    let db = open("source", &dir.path().join("source"));
    let request = BackupRequest { destination: dir.path().join("backups"), record: json!({}), incremental: false };
    let error = EngineError::from(writer_for(BackupKind::Backup).write(&db, &request, &mut |_, _| {}).unwrap_err());
    assert!(error.to_string().contains("not available in this build yet"), "{error}");
    db.close();
}
