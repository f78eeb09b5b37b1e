//! Queries whose plan names documents: facet setup documents are read when the query runs, and for a
//! dynamic query they decide the automatic index too.

use corvid_engine::{BatchCommand, Database, DatabaseOptions, ExpectedChangeVector, IncomingDocument, QueryRequest};
use serde_json::{json, Value};

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("test", dir, &options).unwrap()
}

fn put(db: &Database, id: &str, value: Value) {
    let document = IncomingDocument::from_value(value).unwrap();
    db.batch_blocking(vec![BatchCommand::Put { id: id.into(), expected: ExpectedChangeVector::Any, document }]).unwrap();
}

fn request(query: &str) -> QueryRequest {
    QueryRequest { query: query.into(), wait_for_non_stale: true, ..Default::default() }
}

#[test]
fn a_dynamic_facet_query_indexes_the_fields_of_its_setup_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for (i, brand) in ["Canon", "Nikon", "Canon"].iter().enumerate() {
        put(&db, &format!("cameras/{i}"), json!({"Brand": brand, "Price": 100 * (i + 1), "@metadata": {"@collection": "Cameras"}}));
    }
    let setup = json!({
        "Facets": [{"FieldName": "Brand"}],
        "RangeFacets": [{"Ranges": ["Price < 250", "Price >= 250"], "DisplayFieldName": "Prices"}],
        "@metadata": {"@collection": "FacetSetups"},
    });
    put(&db, "facets/cameras", setup);
    let query = "from Cameras select facet(id('facets/cameras'))";

    let explained = db.explain_query(&request(query)).unwrap();
    assert_eq!(explained.index_name, "Auto/Cameras/ByBrandAndPrice");

    let response = db.query(&request(query)).unwrap();
    assert_eq!(response.index_name, "Auto/Cameras/ByBrandAndPrice");
    let results: Vec<Value> = response.results.iter().map(|r| serde_json::from_str(r).unwrap()).collect();
    let counts = |name: &str| -> Vec<(String, u64)> {
        let facet = results.iter().find(|r| r["Name"] == name).unwrap_or_else(|| panic!("no facet {name} in {results:?}"));
        facet["Values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["Range"].as_str().unwrap().to_owned(), v["Count"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(counts("Brand"), vec![("canon".to_owned(), 2), ("nikon".to_owned(), 1)]);
    assert_eq!(counts("Prices"), vec![("Price < 250".to_owned(), 2), ("Price >= 250".to_owned(), 1)]);

    let missing = db.query(&request("from Cameras select facet(id('facets/missing'))")).unwrap_err();
    assert_eq!(missing.to_string(), "facet setup document 'facets/missing' does not exist");
}
