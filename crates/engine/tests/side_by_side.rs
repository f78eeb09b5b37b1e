//! Side-by-side rebuild of static indexes on a real database directory: the replacement is listed as
//! `ReplacementOf/<name>`, swaps in once caught up, and survives a reopen of the database.

use std::time::{Duration, Instant};

use corvid_engine::{BatchCommand, Database, DatabaseOptions, ExpectedChangeVector, IncomingDocument, IndexInfo};
use serde_json::json;

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    let db = Database::open("test", dir, &options).unwrap();
    // Whatever the run before the reopen wrote, the storage layout holds its invariants.
    let report = db.check_storage().unwrap();
    assert!(report.is_sound(), "{:#?}", report.violations);
    db
}

fn put_items(db: &Database, n: usize) {
    let commands = (0..n)
        .map(|i| BatchCommand::Put {
            id: format!("items/{i}"),
            expected: ExpectedChangeVector::Any,
            document: IncomingDocument::from_value(json!({"value": i, "@metadata": {"@collection": "Items"}})).unwrap(),
        })
        .collect();
    db.batch_blocking(commands).unwrap();
}

fn definition(filter: &str) -> serde_json::Value {
    json!({"Name": "Items/ByValue", "Maps": [format!(
        "map('Items', function (d) {{ var s = 0; for (var i = 0; i < 50000; i++) {{ s += i; }} return {filter} ? {{ value: d.value }} : null; }})"
    )]})
}

fn infos(db: &Database) -> Vec<IndexInfo> {
    db.index_infos().unwrap()
}

fn names(db: &Database) -> Vec<String> {
    infos(db).into_iter().map(|i| i.name).collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn settled(db: &Database) -> bool {
    infos(db).iter().all(|i| !i.is_stale && !i.name.starts_with("ReplacementOf/"))
}

fn entries(db: &Database, name: &str) -> u64 {
    infos(db).into_iter().find(|i| i.name == name).map(|i| i.entries).unwrap()
}

#[test]
fn a_changed_definition_is_built_beside_the_old_one_and_swapped_in() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    put_items(&db, 200);
    db.put_indexes(&[definition("true")]).unwrap();
    wait_until("the index caught up", || settled(&db));
    assert_eq!(entries(&db, "Items/ByValue"), 200);

    db.put_indexes(&[definition("d.value < 50")]).unwrap();
    assert_eq!(names(&db), ["Items/ByValue", "ReplacementOf/Items/ByValue"]);
    // The old index still answers in full while the replacement builds.
    assert_eq!(entries(&db, "Items/ByValue"), 200);
    // Only a changed priority or lock mode builds nothing.
    let mut same = definition("d.value < 50");
    same["Priority"] = json!("High");
    db.put_indexes(&[same]).unwrap();
    assert_eq!(names(&db).len(), 2);

    wait_until("the replacement swapped in", || settled(&db));
    assert_eq!(names(&db), ["Items/ByValue"]);
    assert_eq!(entries(&db, "Items/ByValue"), 50);
    db.close();
}

#[test]
fn a_replacement_survives_a_reopen_and_the_original_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    put_items(&db, 400);
    db.put_indexes(&[definition("true")]).unwrap();
    wait_until("the index caught up", || settled(&db));
    db.put_indexes(&[definition("d.value % 2 == 0")]).unwrap();
    db.close();
    drop(db);

    let db = open(dir.path());
    let listed = infos(&db);

    let original = listed.iter().find(|i| i.name == "Items/ByValue").expect("the original is kept");
    // (Unless the replacement swapped in while this list was read.)
    if listed.iter().any(|i| i.name == "ReplacementOf/Items/ByValue") {
        assert_eq!(original.entries, 400, "the original answers until the swap");
    }
    wait_until("the replacement swapped in", || settled(&db));
    assert_eq!(names(&db), ["Items/ByValue"]);
    assert_eq!(entries(&db, "Items/ByValue"), 200);
    db.close();
    drop(db);

    let db = open(dir.path());
    assert_eq!(names(&db), ["Items/ByValue"]);
    wait_until("caught up", || settled(&db));
    assert_eq!(entries(&db, "Items/ByValue"), 200);
    // One directory is left: the replaced index's files are gone.
    assert_eq!(std::fs::read_dir(dir.path().join("indexes")).unwrap().count(), 1);
    db.close();
}

#[test]
fn deleting_an_index_deletes_its_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    put_items(&db, 200);
    db.put_indexes(&[definition("true")]).unwrap();
    db.put_indexes(&[definition("false")]).unwrap();
    assert_eq!(names(&db).len(), 2);
    assert!(db.delete_index("Items/ByValue"));
    assert!(names(&db).is_empty());
    assert_eq!(std::fs::read_dir(dir.path().join("indexes")).unwrap().count(), 0);
    db.close();
}
