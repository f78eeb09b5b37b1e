//! OutputReduceToCollection on a real database directory: the output documents equal a recomputation from
//! the source documents, and a lost output write is repaired when the index starts again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use corvid_engine::{BatchCommand, Database, DatabaseOptions, ExpectedChangeVector, IncomingDocument, PageRequest};
use serde_json::{json, Value};

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

fn put(id: &str, product: &str, amount: i64) -> BatchCommand {
    BatchCommand::Put {
        id: id.into(),
        expected: ExpectedChangeVector::Any,
        document: IncomingDocument::from_value(json!({"product": product, "amount": amount, "@metadata": {"@collection": "Sales"}}))
            .unwrap(),
    }
}

fn delete(id: &str) -> BatchCommand {
    BatchCommand::Delete { id: id.into(), expected: ExpectedChangeVector::Any }
}

fn index() -> Value {
    json!({
        "Name": "Sales/ByProduct", "OutputReduceToCollection": "Totals",
        "Maps": ["map('Sales', s => ({ product: s.product, total: s.amount }))"],
        "Reduce": "groupBy(x => x.product).aggregate(g => ({ product: g.key, total: g.values.reduce((t, v) => t + v.total, 0) }))"
    })
}

/// Output documents as product -> (total, @flags).
fn outputs(db: &Database) -> BTreeMap<String, (i64, String)> {
    let request = PageRequest {
        starts_with: Some("Totals/".into()),
        matches: None,
        exclude: None,
        start_after: None,
        start: 0,
        page_size: 1000,
        metadata_only: false,
    };
    let (docs, _) = db.load_page(&request).unwrap();
    docs.iter()
        .map(|text| {
            let doc: Value = serde_json::from_str(text).unwrap();
            let flags = doc["@metadata"]["@flags"].as_str().unwrap_or_default().to_owned();
            (doc["product"].as_str().unwrap().to_owned(), (doc["total"].as_i64().unwrap(), flags))
        })
        .collect()
}

fn expected(sales: &BTreeMap<String, (&str, i64)>) -> BTreeMap<String, (i64, String)> {
    let mut out = BTreeMap::new();
    for (product, amount) in sales.values() {
        out.entry(product.to_string()).or_insert((0, "Artificial, FromIndex".to_owned())).0 += amount;
    }
    out
}

fn wait_for(db: &Database, want: &BTreeMap<String, (i64, String)>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while outputs(db) != *want {
        assert!(Instant::now() < deadline, "outputs {:?} never became {want:?}", outputs(db));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn output_documents_follow_the_source_documents() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut sales = BTreeMap::new();
    let mut commands = Vec::new();
    for i in 0..20 {
        let product = ["apple", "pear", "fig"][i % 3];
        sales.insert(format!("sales/{i}"), (product, i as i64));
        commands.push(put(&format!("sales/{i}"), product, i as i64));
    }
    db.batch_blocking(commands).unwrap();
    db.put_indexes(&[index()]).unwrap();
    wait_for(&db, &expected(&sales));

    // Move a sale to another product, delete every fig.
    sales.insert("sales/0".into(), ("pear", 100));
    let figs: Vec<String> = sales.iter().filter(|(_, (p, _))| *p == "fig").map(|(id, _)| id.clone()).collect();
    let mut commands = vec![put("sales/0", "pear", 100)];
    for id in &figs {
        sales.remove(id);
        commands.push(delete(id));
    }
    db.batch_blocking(commands).unwrap();
    wait_for(&db, &expected(&sales));
    assert!(!outputs(&db).contains_key("fig"));

    // A lost output write (a crash between the index commit and the write) is repaired at the next start.
    let first = db.load_page(&PageRequest {
        starts_with: Some("Totals/".into()),
        matches: None,
        exclude: None,
        start_after: None,
        start: 0,
        page_size: 1,
        metadata_only: true,
    });
    let id = serde_json::from_str::<Value>(&first.unwrap().0[0]).unwrap()["@metadata"]["@id"].as_str().unwrap().to_owned();
    db.batch_blocking(vec![delete(&id)]).unwrap();
    assert_eq!(outputs(&db).len(), expected(&sales).len() - 1);
    db.close();
    drop(db);
    let db = open(dir.path());
    wait_for(&db, &expected(&sales));

    // Deleting the index deletes its output.
    assert!(db.delete_index("Sales/ByProduct"));
    assert!(outputs(&db).is_empty());
    db.close();
}
