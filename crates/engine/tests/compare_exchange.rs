//! Compare-exchange values and cluster-wide transactions on a real database directory: the index rules,
//! all-or-nothing transactions and atomic guards, checked against the storage invariants.

use corvid_engine::{
    ClusterCommand, ClusterTransactionReply, CompareExchangeOutcome, Database, DatabaseOptions, EngineError, IncomingDocument,
};
use serde_json::json;

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("test", dir, &options).unwrap()
}

fn wait<T: Send + 'static>(
    submit: impl FnOnce(Box<dyn FnOnce(Result<T, EngineError>) + Send>) -> Result<(), EngineError>,
) -> Result<T, EngineError> {
    let (tx, rx) = std::sync::mpsc::channel();
    submit(Box::new(move |r| {
        let _ = tx.send(r);
    }))?;
    rx.recv().unwrap()
}

fn put(db: &Database, key: &str, value: i64, expected: u64) -> CompareExchangeOutcome {
    let value = json!({ "Object": value }).to_string();
    wait(|reply| db.submit_compare_exchange_put(key.into(), value, expected, reply)).unwrap()
}

fn cluster(db: &Database, commands: Vec<ClusterCommand>) -> Result<ClusterTransactionReply, EngineError> {
    wait(|reply| db.submit_cluster_transaction(commands, true, reply))
}

fn doc_put(id: &str) -> ClusterCommand {
    let document = IncomingDocument::from_value(json!({"Name": id, "@metadata": {"@collection": "Users"}})).unwrap();
    ClusterCommand::Put { id: id.into(), seen_change_vector: None, document }
}

#[test]
fn index_rules_of_put_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let created = put(&db, "Names/A", 1, 0);
    assert!(created.successful);
    let again = put(&db, "names/a", 2, 0);
    assert!(!again.successful && again.index == created.index);
    let updated = put(&db, "NAMES/A", 3, created.index);
    assert!(updated.successful && updated.index > created.index);
    let values = db.compare_exchange_values(&["names/a".into()]).unwrap();
    let stored = values[0].as_ref().unwrap();
    assert_eq!((stored.key.as_str(), stored.index), ("Names/A", updated.index), "the key keeps its first spelling");
    let stale = wait(|reply| db.submit_compare_exchange_delete("names/a".into(), created.index, reply)).unwrap();
    assert!(!stale.successful);
    let deleted = wait(|reply| db.submit_compare_exchange_delete("names/a".into(), updated.index, reply)).unwrap();
    assert!(deleted.successful && deleted.value.is_some());
    assert!(db.compare_exchange_values(&["names/a".into()]).unwrap()[0].is_none());
    assert!(db.check_storage().unwrap().is_sound());
}

#[test]
fn a_stale_index_fails_the_whole_cluster_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let taken = put(&db, "usernames/x", 1, 0);
    let err = cluster(
        &db,
        vec![
            doc_put("users/1"),
            ClusterCommand::CompareExchangePut { key: "usernames/x".into(), value: "{\"Object\":2}".into(), expected: 0 },
        ],
    )
    .unwrap_err();
    assert!(matches!(err, EngineError::ClusterTransactionConcurrency { ref message } if message.contains("usernames/x")), "{err:?}");
    assert!(db.load(&["users/1".into()], &[], false).unwrap().results[0].is_none());
    assert!(db.compare_exchange_values(&["rvn-atomic/users/1".into()]).unwrap()[0].is_none());
    let ok = cluster(
        &db,
        vec![
            doc_put("users/1"),
            ClusterCommand::CompareExchangePut { key: "usernames/x".into(), value: "{\"Object\":2}".into(), expected: taken.index },
        ],
    )
    .unwrap();
    let guard = db.compare_exchange_values(&["rvn-atomic/users/1".into()]).unwrap().remove(0).unwrap();
    assert_eq!(guard.index, ok.transaction_index);
    // A second creation of the same document expects no guard and fails.
    assert!(cluster(&db, vec![doc_put("users/1")]).is_err());
    // A delete without a change vector checks against the current guard and removes it.
    cluster(&db, vec![ClusterCommand::Delete { id: "users/1".into(), seen_change_vector: None }]).unwrap();
    assert!(db.compare_exchange_values(&["rvn-atomic/users/1".into()]).unwrap()[0].is_none());
    assert!(db.check_storage().unwrap().is_sound());
}
