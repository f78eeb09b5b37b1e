//! Export and import on real database directories: a round trip of documents, counters, compare-exchange
//! values and identities; an import repeated twice converges; a truncated dump stops with its position and
//! leaves what came before it; the storage invariants hold after each.

use corvid_engine::smuggler::{self, Compression, ExportOptions, ImportOptions, SmugglerResult};
use corvid_engine::{
    BatchCommand, CounterOperation, Database, DatabaseOptions, DocumentCounters, EngineError, ExpectedChangeVector, IncomingDocument,
};
use serde_json::{json, Value};

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("test", dir, &options).unwrap()
}

fn put(id: &str, n: i64) -> BatchCommand {
    let document =
        IncomingDocument::from_value(json!({"N": n, "Price": 2.50, "@metadata": {"@collection": "Things", "Client-Key": "k"}})).unwrap();
    BatchCommand::Put { id: id.into(), expected: ExpectedChangeVector::Any, document }
}

fn fill(db: &Database) {
    let mut commands: Vec<BatchCommand> = (0..300).map(|i| put(&format!("things/{i}"), i)).collect();
    commands.push(put("others|", 1000));
    db.batch_blocking(commands).unwrap();
    let counters =
        DocumentCounters { id: "things/7".into(), operations: vec![CounterOperation::Increment { name: "Hits".into(), delta: 42 }] };
    db.counter_batch_blocking(vec![counters]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    db.submit_compare_exchange_put("cfg/x".into(), json!({"Object": {"A": 1}}).to_string(), 0, Box::new(move |r| tx.send(r).unwrap()))
        .unwrap();
    rx.recv().unwrap().unwrap();
}

fn export(db: &Database, compression: Compression) -> (SmugglerResult, Vec<u8>) {
    let options = ExportOptions { compression, ..ExportOptions::default() };
    smuggler::export(db, &options, Vec::new(), &mut |_| true).unwrap()
}

fn import(db: &Database, dump: &[u8]) -> Result<SmugglerResult, EngineError> {
    smuggler::import(db, &ImportOptions::default(), dump, &mut |_| true)
}

fn documents(db: &Database) -> Vec<Value> {
    let ids: Vec<String> = (0..300).map(|i| format!("things/{i}")).chain(["others/1".to_owned()]).collect();
    db.load(&ids, &[], false)
        .unwrap()
        .results
        .into_iter()
        .map(|doc| {
            let mut doc: Value = serde_json::from_str(&doc.unwrap()).unwrap();
            doc["@metadata"].as_object_mut().unwrap().remove("@change-vector");
            doc
        })
        .collect()
}

#[test]
fn round_trip_and_repeated_import() {
    let source_dir = tempfile::tempdir().unwrap();
    let source = open(source_dir.path());
    fill(&source);
    for compression in [Compression::Gzip, Compression::Zstd, Compression::None] {
        let (exported, dump) = export(&source, compression);
        assert_eq!(exported.documents.read, 301);
        let target_dir = tempfile::tempdir().unwrap();
        let target = open(target_dir.path());
        for _ in 0..2 {
            let imported = import(&target, &dump).unwrap();
            assert_eq!((imported.documents.read, imported.counters.read, imported.compare_exchange.read), (301, 1, 1));
        }
        assert_eq!(documents(&target), documents(&source));
        assert_eq!(target.identities().unwrap(), source.identities().unwrap());
        let counters: Vec<(String, i64)> =
            target.counters("things/7", &[]).unwrap().into_iter().flatten().map(|c| (c.name, c.value)).collect();
        assert_eq!(counters, vec![("Hits".to_owned(), 42)], "a repeated import sets counters, it does not add them");
        assert_eq!(target.compare_exchange_values(&["cfg/x".into()]).unwrap()[0].as_ref().unwrap().value, r#"{"Object":{"A":1}}"#);
        assert!(target.check_storage().unwrap().is_sound());
    }
}

#[test]
fn a_truncated_dump_stops_with_its_position_and_keeps_what_came_before() {
    let source_dir = tempfile::tempdir().unwrap();
    let source = open(source_dir.path());
    fill(&source);
    let (_, dump) = export(&source, Compression::None);
    let cut = dump.windows(9).position(|w| w == b"\"Indexes\"").unwrap() + 12;
    let target_dir = tempfile::tempdir().unwrap();
    let target = open(target_dir.path());
    let error = import(&target, &dump[..cut]).unwrap_err().to_string();
    assert!(error.contains("section 'Indexes'") && error.contains("Documents 301"), "{error}");
    assert_eq!(documents(&target).len(), 301);
    let garbage = import(&target, b"[1,2,3]").unwrap_err().to_string();
    assert!(garbage.contains("Malformed dump at byte 1"), "{garbage}");
    assert!(target.check_storage().unwrap().is_sound());
}
