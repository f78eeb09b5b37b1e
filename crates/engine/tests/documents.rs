//! The engine's document API on a real database directory.

use corvid_engine::{
    BatchCommand, BatchReply, Database, DatabaseOptions, EngineError, ExpectedChangeVector, HiloRequest, IncomingDocument,
};
use serde_json::json;

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("test", dir, &options).unwrap()
}

fn doc(value: serde_json::Value) -> IncomingDocument {
    IncomingDocument::from_value(value).unwrap()
}

fn put(id: &str, value: serde_json::Value, expected: ExpectedChangeVector) -> BatchCommand {
    BatchCommand::Put { id: id.into(), expected, document: doc(value) }
}

fn change_vector(reply: &BatchReply) -> String {
    match reply {
        BatchReply::Put { change_vector, .. } => change_vector.clone(),
        other => panic!("not a put: {other:?}"),
    }
}

#[test]
fn ids_are_case_insensitive_and_keep_their_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.batch_blocking(vec![put("Users/1-A", json!({"name": "x", "@metadata": {"@collection": "Users"}}), ExpectedChangeVector::Any)])
        .unwrap();
    let loaded = db.load(&["users/1-a".into(), "USERS/1-A".into(), "users/2".into()], &[], false).unwrap();
    for slot in &loaded.results[..2] {
        let json: serde_json::Value = serde_json::from_str(slot.as_ref().unwrap()).unwrap();
        assert_eq!(json["@metadata"]["@id"], "Users/1-A");
    }
    assert!(loaded.results[2].is_none());
}

#[test]
fn a_batch_with_a_conflict_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let first = db.batch_blocking(vec![put("a", json!({"v": 1}), ExpectedChangeVector::Any)]).unwrap();
    let cv = change_vector(&first[0]);
    let err = db
        .batch_blocking(vec![
            put("b", json!({"v": 1}), ExpectedChangeVector::Any),
            put("a", json!({"v": 2}), ExpectedChangeVector::Exactly("A:999-nope".into())),
        ])
        .unwrap_err();
    assert!(matches!(err, EngineError::Concurrency { ref message } if message.contains(&cv)), "{err:?}");
    assert!(db.load(&["b".into()], &[], false).unwrap().results[0].is_none());
    // The matching change vector succeeds; "" means "must not exist".
    db.batch_blocking(vec![put("a", json!({"v": 2}), ExpectedChangeVector::Exactly(cv))]).unwrap();
    assert!(db.batch_blocking(vec![put("a", json!({"v": 3}), ExpectedChangeVector::MustNotExist)]).is_err());
    db.batch_blocking(vec![put("new", json!({}), ExpectedChangeVector::MustNotExist)]).unwrap();
    let deleted =
        db.batch_blocking(vec![BatchCommand::Delete { id: "missing".into(), expected: ExpectedChangeVector::Exactly("A:1-x".into()) }]);
    assert!(deleted.is_err());
}

#[test]
fn includes_follow_paths_in_one_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.batch_blocking(vec![
        put(
            "orders/1",
            json!({"Company": "companies/1", "Lines": [{"Product": "products/1"}, {"Product": "products/2"}]}),
            ExpectedChangeVector::Any,
        ),
        put("companies/1", json!({"Name": "Acme"}), ExpectedChangeVector::Any),
        put("products/1", json!({"Name": "P1"}), ExpectedChangeVector::Any),
    ])
    .unwrap();
    let loaded = db.load(&["orders/1".into()], &["Company".into(), "Lines[].Product".into()], false).unwrap();
    let ids: Vec<&str> = loaded.includes.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["companies/1", "products/1"], "missing products/2 is left out");
}

#[test]
fn server_generated_ids_and_identities() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let replies = db
        .batch_blocking(vec![
            put("users|", json!({}), ExpectedChangeVector::Any),
            put("users|", json!({}), ExpectedChangeVector::Any),
            put("items/", json!({}), ExpectedChangeVector::Any),
        ])
        .unwrap();
    let ids: Vec<String> = replies
        .iter()
        .map(|r| match r {
            BatchReply::Put { id, .. } => id.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(ids[0], "users/1");
    assert_eq!(ids[1], "users/2");
    assert_eq!(ids[2], "items/0000000000000000003-A");
    assert_eq!(db.identities().unwrap(), [("users|".to_owned(), 2)]);
}

#[test]
fn hilo_ranges_never_overlap_and_continue_from_stored_max() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.batch_blocking(vec![put("Raven/Hilo/users", json!({"Max": 100, "@metadata": {"@collection": "@hilo"}}), ExpectedChangeVector::Any)])
        .unwrap();
    let next = |last_max| {
        let (tx, rx) = std::sync::mpsc::channel();
        db.submit_hilo_next(HiloRequest { tag: "users".into(), separator: "/".into(), last_max, ..Default::default() }, move |r| {
            tx.send(r).unwrap()
        })
        .unwrap();
        rx.recv().unwrap().unwrap()
    };
    let a = next(0);
    assert_eq!((a.low, a.high, a.prefix.as_str()), (101, 132, "users/"));
    let b = next(0);
    assert_eq!(b.low, 133);
    let c = next(500);
    assert_eq!(c.low, 501);
}

#[test]
fn invalid_ids_are_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let long = "x".repeat(600);
    assert!(matches!(db.batch_blocking(vec![put(&long, json!({}), ExpectedChangeVector::Any)]), Err(EngineError::InvalidId(_))));
    assert!(matches!(db.batch_blocking(vec![put("a\0b", json!({}), ExpectedChangeVector::Any)]), Err(EngineError::InvalidId(_))));
    assert_eq!(db.stats().unwrap().count_of_documents, 0);
}

#[test]
fn a_batch_put_without_id_gets_a_generated_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let replies = db.batch_blocking(vec![put("", json!({"a": 1}), ExpectedChangeVector::Any)]).unwrap();
    let BatchReply::Put { id, .. } = &replies[0] else { panic!("not a put") };
    assert_eq!(id.len(), 36, "a GUID: {id}");
    assert!(db.load(std::slice::from_ref(id), &[], false).unwrap().results[0].is_some());
}
