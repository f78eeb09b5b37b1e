//! Every C# LINQ definition in the official Python client's test suite must compile, except the ones
//! those tests send on purpose to get a compilation error.

use corvid_linq::LinqIndex;
use serde_json::Value;

/// Definitions the client tests send to provoke an index compilation error.
const EXPECTED_TO_FAIL: &[&str] = &["from users", "from c in docs.Companies select new { Name = typeof(System.Xml.XmlNode).Name }"];

#[test]
fn python_client_corpus_compiles() {
    let text = include_str!("corpus/python_client.json");
    let items: Vec<Value> = serde_json::from_str(text).unwrap();
    let mut ok = 0;
    let mut failures = Vec::new();
    for item in &items {
        let def = item["text"].as_str().unwrap();
        let result = if item["kind"] == "reduce" {
            LinqIndex::compile(&["from r in docs select new { r.x }"], Some(def))
        } else {
            LinqIndex::compile(&[def], None)
        };
        match result {
            Ok(_) => ok += 1,
            Err(e) if EXPECTED_TO_FAIL.contains(&def) => eprintln!("refused as expected: {e}"),
            Err(e) => failures.push(format!("{}:{}: {e}\n  {def}", item["source"], item["line"])),
        }
    }
    eprintln!("python client corpus: {ok}/{} compile", items.len());
    assert!(failures.is_empty(), "{} definitions failed:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(ok + EXPECTED_TO_FAIL.len(), items.len());
}
