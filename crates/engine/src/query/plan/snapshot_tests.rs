//! Snapshots of the plan of every query of the RQL corpus (`crates/rql/tests/corpus.rql`) and of a few more
//! that reach named indexes, planned against a fixed catalog with fixed parameters. A query the planner
//! refuses snapshots its error. Review changes with `cargo insta review` (decision 0023).

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{json, Map, Value};

use super::plan;
use crate::indexing::{Aggregation, AutoIndexField, QueryExplanation};
use crate::query::catalog::{CatalogIndex, IndexCatalog, IndexKind};
use crate::query::request::QueryRequest;
use crate::reads::VersionHasher;

/// The corpus reader shared with the rql crate's round-trip test.
#[path = "../../../../rql/tests/support/corpus_file.rs"]
mod corpus_file;

/// Queries on the catalog's indexes of every kind, beyond what the corpus names.
const ON_NAMED_INDEXES: &[&str] = &[
    "from index 'Users/ByName' where moreLikeThis(id() = $id, $opts)",
    "from index 'Users/ByName' where Name = $p0 and moreLikeThis($docJson)",
    "from index 'Users/ByName' where search(Name, $p0) include highlight(Name, 128, 1, $opts)",
    "from index 'Cameras/Stats' select facet(Brand), facet(id('facets/CameraFacets'))",
    "from index 'Orders/Totals' where moreLikeThis(id() = $id)",
    "from index 'Auto/Orders/ByCountReducedByCompany'",
    "from index 'Broken' where Name = $p0",
    "from index 'Missing'",
];

/// Indexes the queries name: static map indexes, a static and an automatic map-reduce index, an errored one.
struct FixedCatalog;

impl IndexCatalog for FixedCatalog {
    fn index(&self, name: &str) -> Option<CatalogIndex> {
        let (name, kind, errored) = match name.to_ascii_lowercase().as_str() {
            "users/byname" => ("Users/ByName", IndexKind::Map, None),
            "x" => ("X", IndexKind::Map, None),
            "cameras/stats" => ("Cameras/Stats", IndexKind::Map, None),
            "orders/totals" => ("Orders/Totals", IndexKind::StaticReduce, None),
            "auto/orders/bycountreducedbycompany" => ("Auto/Orders/ByCountReducedByCompany", IndexKind::AutoReduce, None),
            "broken" => ("Broken", IndexKind::Map, Some("It failed on 20 of 21 documents".to_owned())),
            _ => return None,
        };
        Some(CatalogIndex { name: name.to_owned(), kind, errored })
    }

    fn explain_map(&self, collection: &str, _needed: &[AutoIndexField]) -> QueryExplanation {
        QueryExplanation { index_name: format!("Auto/{collection}"), explanations: Vec::new() }
    }

    fn explain_reduce(&self, collection: &str, _group_by: &[String], _aggregations: &[Aggregation]) -> QueryExplanation {
        QueryExplanation { index_name: format!("Auto/{collection}/Reduce"), explanations: Vec::new() }
    }
}

/// Values for every parameter the queries use, of the types most of their uses take.
fn parameters() -> Map<String, Value> {
    let parameters = json!({
        "p0": "10",
        "p1": 20,
        "p2": 5,
        "p3": 10,
        "opts": {"Fields": ["Name"], "MinimumDocumentFrequency": 1, "PreTags": ["<em>"], "PostTags": ["</em>"]},
        "docJson": "{\"Name\": \"Jane\"}",
        "id": "users/1",
        "p": "POINT (10 20)",
        "a": 1,
        "b": 2,
    });
    let Value::Object(parameters) = parameters else { unreachable!("an object literal") };
    parameters
}

/// A snapshot name that stays with its query when others are added or moved: the query's words, then a
/// hash of the whole text to tell apart queries whose first words are alike.
fn snapshot_name(query: &str) -> String {
    let mut words = String::new();
    for c in query.chars() {
        if c.is_ascii_alphanumeric() {
            words.push(c.to_ascii_lowercase());
        } else if !words.ends_with('_') {
            words.push('_');
        }
    }
    let words: String = words.trim_matches('_').chars().take(60).collect();
    format!("{}_{:08x}", words.trim_end_matches('_'), VersionHasher::of(query) as u32)
}

/// The plan of `text`, or the error that refuses it, in a readable form.
fn planned(text: &str) -> String {
    let request = QueryRequest { query: text.to_owned(), parameters: parameters(), ..Default::default() };
    let planned = request.parse().and_then(|query| plan(&query, &request, &FixedCatalog));
    format!("{planned:#?}")
}

#[test]
fn every_corpus_query_plans_as_its_snapshot_says() {
    let mut queries = corpus_file::corpus();
    assert!(queries.len() > 100, "corpus.rql holds {} queries", queries.len());
    queries.extend(ON_NAMED_INDEXES.iter().map(|q| (*q).to_owned()));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let mut names = std::collections::HashSet::new();
    let mut failed = Vec::new();
    for query in &queries {
        let name = snapshot_name(query);
        assert!(names.insert(name.clone()), "two queries share the snapshot name {name}");
        settings.set_description(query.as_str());
        let rendered = planned(query);
        // Every query is checked, so that one review sees every change.
        let checked = catch_unwind(AssertUnwindSafe(|| settings.bind(|| insta::assert_snapshot!(name.as_str(), rendered))));
        if checked.is_err() {
            failed.push(query.as_str());
        }
    }
    assert!(failed.is_empty(), "{} plan(s) differ from their snapshots: {failed:#?}", failed.len());
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/query/plan/snapshots");
    let stale: Vec<String> = std::fs::read_dir(&directory)
        .expect("the snapshots directory")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|file| file.strip_suffix(".snap").is_some_and(|name| !names.contains(name)))
        .collect();
    assert!(stale.is_empty(), "snapshots of no query (remove them): {stale:#?}");
}
