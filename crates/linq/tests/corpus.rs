//! Every C# LINQ definition in the official Python client's test suite must compile, except the ones
//! those tests send on purpose to get a compilation error.

use corvid_linq::{ErrorKind, LinqIndex, MapSource, NoDocuments};
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
            Ok(index) => {
                ok += 1;
                smoke(&index, def);
            }
            Err(e) if EXPECTED_TO_FAIL.contains(&def) => eprintln!("refused as expected: {e}"),
            Err(e) => failures.push(format!("{}:{}: {e}\n  {def}", item["source"], item["line"])),
        }
    }
    eprintln!("python client corpus: {ok}/{} compile", items.len());
    assert!(failures.is_empty(), "{} definitions failed:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(ok + EXPECTED_TO_FAIL.len(), items.len());
}

/// Definitions found in the Node and Java clients' tests and documentation (collected by hand with a code
/// search), each marked "ok" or "refused" (invalid C#, or needing additional C# sources).
#[test]
fn other_clients_corpus() {
    let items: Vec<Value> = serde_json::from_str(include_str!("corpus/other_clients.json")).unwrap();
    let mut ok = 0;
    for item in &items {
        let def = item["text"].as_str().unwrap();
        let result = if item["kind"] == "reduce" {
            LinqIndex::compile(&["from r in docs select new { r.x }"], Some(def))
        } else {
            LinqIndex::compile(&[def], None)
        };
        match (&result, item["expect"].as_str().unwrap()) {
            (Ok(_), "ok") => ok += 1,
            (Err(e), "refused") => eprintln!("refused as expected: {e}"),
            (Ok(_), _) => panic!("should be refused: {def}"),
            (Err(e), _) => panic!("{e}\n  {def}"),
        }
    }
    eprintln!("other clients corpus: {ok}/{} compile", items.len());
}

/// Runs every map over a small document of its collection: it must not panic, and may fail only for
/// the documented reasons (time series, division by zero).
fn smoke(index: &LinqIndex, def: &str) {
    let doc = serde_json::json!({"name": "n", "count": 1, "lat": 1.0, "lng": 2.0, "items": [{"lat": 1, "lng": 2}], "Lines": []});
    for m in 0..index.map_count() {
        let collection = match index.source(m) {
            MapSource::Collection(c) => c.clone(),
            _ => "Any".to_string(),
        };
        if let Err(e) = index.map(m, "x/1", &collection, &doc, &serde_json::json!({}), &mut NoDocuments) {
            assert_eq!(e.kind, ErrorKind::Runtime);
            let expected = e.message.contains("Time-series") || e.message.contains("divide by zero");
            assert!(expected, "{e}\n  {def}");
        }
    }
}

/// Every prefix of every corpus definition, and every definition with one character replaced by a
/// punctuation mark, compiles or fails with an error, never a panic.
#[test]
fn mangled_corpus_never_panics() {
    let mut texts: Vec<String> = Vec::new();
    for file in [include_str!("corpus/python_client.json"), include_str!("corpus/other_clients.json")] {
        let items: Vec<Value> = serde_json::from_str(file).unwrap();
        texts.extend(items.iter().map(|i| i["text"].as_str().unwrap().to_string()));
    }
    let marks = ['(', ')', '{', '}', '.', '"', '\'', '@', '?', '=', '[', ']', '/', '-', '1'];
    let mut runs = 0;
    for (n, text) in texts.iter().enumerate() {
        let chars: Vec<char> = text.chars().collect();
        for i in 0..=chars.len() {
            let prefix: String = chars[..i].iter().collect();
            let _ = LinqIndex::compile(&[&prefix], None);
            if i < chars.len() {
                let mut mangled = chars.clone();
                mangled[i] = marks[(i + n) % marks.len()];
                let mangled: String = mangled.into_iter().collect();
                if let Ok(index) = LinqIndex::compile(&[&mangled], None) {
                    smoke_any(&index);
                }
            }
            runs += 1;
        }
    }
    assert!(runs > 1000);
}

/// Runs the maps over a sample document, accepting any result except a panic.
fn smoke_any(index: &LinqIndex) {
    let doc = serde_json::json!({"name": "n", "count": 1, "items": [1, 2]});
    for m in 0..index.map_count() {
        let collection = match index.source(m) {
            MapSource::Collection(c) => c.clone(),
            _ => "Any".to_string(),
        };
        let _ = index.map(m, "x/1", &collection, &doc, &serde_json::json!({}), &mut NoDocuments);
    }
}
