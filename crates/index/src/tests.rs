use serde_json::{json, Value as Json};
use tempfile::TempDir;

use crate::{DocumentIndex, FieldSpec, Filter, IndexError, IndexSpec, MappedDocument, SortKey, SortKind, Value};

fn field(path: &str) -> FieldSpec {
    FieldSpec::new(path)
}

fn spec() -> IndexSpec {
    IndexSpec {
        fields: vec![
            FieldSpec { search: true, exact: true, ..FieldSpec::new("Name") },
            field("Age"),
            field("Score"),
            field("Tags"),
            field("Lines[].Product"),
            field("Lines[].Quantity"),
            field("Address.City"),
            field("Active"),
            field("Code"),
            FieldSpec { search: true, ..FieldSpec::new("Notes") },
        ],
    }
}

fn doc(key: &str, body: Json) -> MappedDocument {
    MappedDocument { key: key.into(), body }
}

fn people() -> Vec<MappedDocument> {
    vec![
        doc(
            "users/1",
            json!({"Name": "John", "Age": 30, "Score": 1.5, "Tags": ["a", "B"], "Address": {"City": "London"}, "Active": true,
                   "Code": "a10", "Notes": "The quick brown fox jumps over the lazy dog",
                   "Lines": [{"Product": "Chang", "Quantity": 2}, {"Product": "Chai", "Quantity": 10}]}),
        ),
        doc(
            "users/2",
            json!({"Name": "jane", "Age": 25, "Score": 2.25, "Tags": ["b", "c"], "Address": {"City": "Paris"}, "Active": false,
                   "Code": "a2", "Notes": "Sales representative, quick learner",
                   "Lines": [{"Product": "Tofu", "Quantity": 1}]}),
        ),
        doc(
            "users/3",
            json!({"Name": null, "Age": 30.5, "Tags": [], "Address": null, "Code": "b1", "Notes": "brown bear",
                   "Lines": []}),
        ),
        doc("users/4", json!({"Name": "", "Age": "30", "Tags": "a", "Address": {"City": "london"}, "Code": "a1"})),
        doc("users/5", json!({"Name": "Émile Zola", "Age": -4, "Score": -0.5, "Code": "A3"})),
    ]
}

struct Fixture {
    _dir: TempDir,
    index: DocumentIndex,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    index.apply(&people(), &[], 5).unwrap();
    Fixture { _dir: dir, index }
}

impl Fixture {
    fn keys(&self, filter: Filter) -> Vec<String> {
        let mut keys = self.index.search(&filter, &[], 0, 100).unwrap().keys;
        keys.sort();
        keys
    }

    fn sorted(&self, filter: Filter, sort: &[SortKey]) -> Vec<String> {
        self.index.search(&filter, sort, 0, 100).unwrap().keys
    }
}

fn eq(field: &str, value: Value) -> Filter {
    Filter::Equal { field: field.into(), value, exact: false }
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

fn keys(list: &[&str]) -> Vec<String> {
    list.iter().map(|k| format!("users/{k}")).collect()
}

fn by(field: &str, kind: SortKind, descending: bool) -> SortKey {
    SortKey { field: field.into(), kind, descending }
}

#[test]
fn equality_is_case_insensitive_unless_exact() {
    let f = fixture();
    assert_eq!(f.keys(eq("Name", s("JOHN"))), keys(&["1"]));
    assert_eq!(f.keys(eq("Name", s("john"))), keys(&["1"]));
    assert_eq!(f.keys(Filter::Equal { field: "Name".into(), value: s("john"), exact: true }), keys(&[]));
    assert_eq!(f.keys(Filter::Equal { field: "Name".into(), value: s("John"), exact: true }), keys(&["1"]));
    assert_eq!(f.keys(eq("Name", s("émile zola"))), keys(&["5"]));
    // Not tokenized.
    assert_eq!(f.keys(eq("Name", s("zola"))), keys(&[]));
    // exact() on a field without an exact form compares the value as given against the lower-cased term.
    assert_eq!(f.keys(Filter::Equal { field: "Address.City".into(), value: s("London"), exact: true }), keys(&[]));
    assert_eq!(f.keys(Filter::Equal { field: "Address.City".into(), value: s("london"), exact: true }), keys(&["1", "4"]));
}

#[test]
fn null_empty_and_missing() {
    let f = fixture();
    assert_eq!(f.keys(eq("Name", Value::Null)), keys(&["3"]));
    assert_eq!(f.keys(eq("Name", s(""))), keys(&["4"]));
    assert_eq!(f.keys(Filter::Exists { field: "Name".into() }), keys(&["1", "2", "3", "4", "5"]));
    assert_eq!(f.keys(Filter::Exists { field: "Score".into() }), keys(&["1", "2", "5"]));
    // A null before the end of the path is no value; an empty array is no value.
    assert_eq!(f.keys(Filter::Exists { field: "Address.City".into() }), keys(&["1", "2", "4"]));
    assert_eq!(f.keys(Filter::Exists { field: "Tags".into() }), keys(&["1", "2", "4"]));
    // Not equal includes entries without the field.
    assert_eq!(f.keys(Filter::Not(Box::new(eq("Address.City", s("london"))))), keys(&["2", "3", "5"]));
    // The marker terms are not user values.
    assert_eq!(f.keys(eq("Name", s("NULL_VALUE"))), keys(&[]));
}

#[test]
fn numbers_match_numerically_and_as_strings() {
    let f = fixture();
    assert_eq!(f.keys(eq("Age", Value::Long(30))), keys(&["1", "3"])); // 30.5 is also indexed as the long 30
    assert_eq!(f.keys(eq("Age", Value::Double(30.5))), keys(&["3"]));
    assert_eq!(f.keys(eq("Age", s("30"))), keys(&["1", "4"])); // "30" the string, and 30 the number as a term
    assert_eq!(f.keys(eq("Score", Value::Double(1.5))), keys(&["1"]));
    assert_eq!(f.keys(eq("Active", Value::Bool(true))), keys(&["1"]));
    assert_eq!(f.keys(eq("Active", s("FALSE"))), keys(&["2"]));
}

#[test]
fn ranges() {
    let f = fixture();
    let range = |lower: Option<(Value, bool)>, upper: Option<(Value, bool)>| Filter::Range { field: "Age".into(), lower, upper };
    assert_eq!(f.keys(range(Some((Value::Long(25), true)), Some((Value::Long(30), true)))), keys(&["1", "2", "3"]));
    assert_eq!(f.keys(range(Some((Value::Long(25), false)), Some((Value::Long(30), false)))), keys(&[]));
    assert_eq!(f.keys(range(Some((Value::Double(25.0), false)), None)), keys(&["1", "3"]));
    assert_eq!(f.keys(range(None, Some((Value::Long(0), false)))), keys(&["5"]));
    assert_eq!(f.keys(range(Some((Value::Long(25), true)), Some((Value::Double(30.25), true)))), keys(&["1", "2"]));
    let city = |lower: &str, upper: &str| Filter::Range {
        field: "Address.City".into(),
        lower: Some((s(lower), true)),
        upper: Some((s(upper), false)),
    };
    assert_eq!(f.keys(city("A", "M")), keys(&["1", "4"]));
    assert_eq!(f.keys(city("m", "z")), keys(&["2"]));
    let mixed = Filter::Range { field: "Age".into(), lower: Some((s("a"), true)), upper: Some((Value::Long(3), true)) };
    assert!(matches!(f.index.search(&mixed, &[], 0, 10), Err(IndexError::InvalidQuery(_))));
}

#[test]
fn in_and_all_in_over_arrays() {
    let f = fixture();
    let in_ = |values: Vec<Value>, all: bool| Filter::In { field: "Tags".into(), values, all, exact: false };
    assert_eq!(f.keys(in_(vec![s("A"), s("c")], false)), keys(&["1", "2", "4"]));
    assert_eq!(f.keys(in_(vec![s("a"), s("b")], true)), keys(&["1"]));
    assert_eq!(f.keys(in_(vec![], false)), keys(&[]));
    assert_eq!(f.keys(eq("Tags", s("b"))), keys(&["1", "2"]));
    assert_eq!(f.keys(Filter::In { field: "Tags".into(), values: vec![s("B")], all: false, exact: true }), keys(&[]));
    assert_eq!(
        f.keys(Filter::In { field: "Age".into(), values: vec![Value::Long(25), Value::Long(-4)], all: false, exact: false }),
        keys(&["2", "5"])
    );
    assert_eq!(f.keys(eq("Lines[].Product", s("chai"))), keys(&["1"]));
    assert_eq!(f.keys(Filter::Range { field: "Lines[].Quantity".into(), lower: Some((Value::Long(5), true)), upper: None }), keys(&["1"]));
}

#[test]
fn prefix_suffix_regex() {
    let f = fixture();
    assert_eq!(f.keys(Filter::StartsWith { field: "Name".into(), prefix: "J".into(), exact: false }), keys(&["1", "2"]));
    assert_eq!(f.keys(Filter::StartsWith { field: "Name".into(), prefix: "J".into(), exact: true }), keys(&["1"]));
    assert_eq!(f.keys(Filter::EndsWith { field: "Address.City".into(), suffix: "DON".into(), exact: false }), keys(&["1", "4"]));
    assert_eq!(f.keys(Filter::StartsWith { field: "Code".into(), prefix: "a.".into(), exact: false }), keys(&[]));
    assert_eq!(f.keys(Filter::Regex { field: "Code".into(), pattern: "^a[0-9]$".into() }), keys(&["2", "4", "5"]));
    assert_eq!(f.keys(Filter::Regex { field: "Code".into(), pattern: "1".into() }), keys(&["1", "3", "4"]));
    assert!(matches!(
        f.index.search(&Filter::Regex { field: "Code".into(), pattern: "(".into() }, &[], 0, 10),
        Err(IndexError::InvalidQuery(_))
    ));
}

#[test]
fn full_text_search() {
    let f = fixture();
    let search = |terms: &str, all: bool| Filter::Search { field: "Notes".into(), terms: terms.into(), all };
    assert_eq!(f.keys(search("QUICK", false)), keys(&["1", "2"]));
    assert_eq!(f.keys(search("brown lazy", false)), keys(&["1", "3"]));
    assert_eq!(f.keys(search("brown lazy", true)), keys(&["1"]));
    assert_eq!(f.keys(search("\"brown fox\"", false)), keys(&["1"]));
    assert_eq!(f.keys(search("\"fox brown\"", false)), keys(&[]));
    assert_eq!(f.keys(search("sales%representative", false)), keys(&["2"]));
    assert_eq!(f.keys(search("repr*", false)), keys(&["2"]));
    assert_eq!(f.keys(search("*arn*", false)), keys(&["2"]));
    assert_eq!(f.keys(search("the", false)), keys(&[])); // stop word
    assert_eq!(f.keys(search("\"jumps over the lazy\"", false)), keys(&["1"]));
    // Relevance order without a sort: two matching terms beat one.
    let result = f.index.search(&search("brown bear", false), &[], 0, 10).unwrap();
    assert_eq!(result.keys, keys(&["3", "1"]));
    assert!(result.scores[0] > result.scores[1]);
    // Search on a field without a search form uses the whole lower-cased value.
    assert_eq!(f.keys(Filter::Search { field: "Address.City".into(), terms: "LONDON".into(), all: false }), keys(&["1", "4"]));
}

#[test]
fn boolean_combinations() {
    let f = fixture();
    let and = Filter::And(vec![eq("Age", Value::Long(30)), Filter::Not(Box::new(eq("Name", Value::Null)))]);
    assert_eq!(f.keys(and), keys(&["1"]));
    let or = Filter::Or(vec![eq("Name", s("jane")), eq("Code", s("b1"))]);
    assert_eq!(f.keys(or), keys(&["2", "3"]));
    assert_eq!(f.keys(Filter::And(vec![Filter::Not(Box::new(eq("Tags", s("a"))))])), keys(&["2", "3", "5"]));
    assert_eq!(f.keys(Filter::And(vec![])), keys(&["1", "2", "3", "4", "5"]));
    assert_eq!(f.keys(Filter::Or(vec![])), keys(&[]));
    let boosted = Filter::Or(vec![Filter::Boost(Box::new(eq("Name", s("jane"))), 10.0), eq("Name", s("john"))]);
    assert_eq!(f.index.search(&boosted, &[], 0, 10).unwrap().keys, keys(&["2", "1"]));
    let boosted = Filter::Or(vec![eq("Name", s("jane")), Filter::Boost(Box::new(eq("Name", s("john"))), 10.0)]);
    assert_eq!(f.index.search(&boosted, &[], 0, 10).unwrap().keys, keys(&["1", "2"]));
}

#[test]
fn unknown_fields_are_invalid_queries() {
    let f = fixture();
    assert!(matches!(f.index.search(&eq("Nope", s("x")), &[], 0, 10), Err(IndexError::InvalidQuery(_))));
    assert!(matches!(f.index.search(&Filter::All, &[by("Nope", SortKind::String, false)], 0, 10), Err(IndexError::InvalidQuery(_))));
}

#[test]
fn sorting() {
    let f = fixture();
    // Missing first when ascending; the marker terms sort as themselves ("EMPTY_STRING" < "NULL_VALUE" < lower case).
    assert_eq!(f.sorted(Filter::All, &[by("Address.City", SortKind::String, false)]), keys(&["3", "5", "1", "4", "2"]));
    assert_eq!(f.sorted(Filter::All, &[by("Name", SortKind::String, false)]), keys(&["4", "3", "2", "1", "5"]));
    assert_eq!(f.sorted(Filter::All, &[by("Name", SortKind::String, true)]), keys(&["5", "1", "2", "3", "4"]));
    // "30" the string has no numeric value: missing.
    assert_eq!(f.sorted(Filter::All, &[by("Age", SortKind::Long, false)]), keys(&["4", "5", "2", "1", "3"]));
    assert_eq!(f.sorted(Filter::All, &[by("Age", SortKind::Double, true)]), keys(&["3", "1", "2", "5", "4"]));
    // As a string, numbers sort by their text.
    assert_eq!(f.sorted(Filter::All, &[by("Age", SortKind::String, false)]), keys(&["5", "2", "1", "4", "3"]));
    assert_eq!(f.sorted(Filter::All, &[by("Code", SortKind::AlphaNumeric, false)]), keys(&["4", "2", "5", "1", "3"]));
    assert_eq!(f.sorted(Filter::All, &[by("Code", SortKind::String, false)]), keys(&["4", "1", "2", "5", "3"]));
    // Multi-key: ties on the first key resolved by the second.
    assert_eq!(
        f.sorted(Filter::All, &[by("Address.City", SortKind::String, false), by("Name", SortKind::String, true)]),
        keys(&["5", "3", "1", "4", "2"])
    );
    assert_eq!(
        f.sorted(Filter::All, &[by("Age", SortKind::Long, true), by("Code", SortKind::AlphaNumeric, true)]),
        keys(&["3", "1", "2", "5", "4"])
    );
    // Arrays sort by their first element.
    assert_eq!(
        f.sorted(Filter::All, &[by("Tags", SortKind::String, true), by("Code", SortKind::String, false)]),
        keys(&["2", "4", "1", "5", "3"])
    );
    // Score order with a filter; most relevant first when ascending.
    let search = Filter::Search { field: "Notes".into(), terms: "brown bear".into(), all: false };
    assert_eq!(f.sorted(search.clone(), &[by("", SortKind::Score, false)]), keys(&["3", "1"]));
    assert_eq!(f.sorted(search.clone(), &[by("", SortKind::Score, true)]), keys(&["1", "3"]));
    assert_eq!(f.sorted(search, &[by("", SortKind::Score, false), by("Name", SortKind::String, false)]), keys(&["3", "1"]));
}

#[test]
fn paging_reports_totals() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    let docs: Vec<_> = (0..250).map(|i| doc(&format!("users/{i:03}"), json!({"Age": i, "Name": format!("n{}", i % 7)}))).collect();
    // Three commits make three segments.
    index.apply(&docs[..100], &[], 1).unwrap();
    index.apply(&docs[100..200], &[], 2).unwrap();
    index.apply(&docs[200..], &[], 3).unwrap();
    let filter = Filter::Range { field: "Age".into(), lower: Some((Value::Long(10), true)), upper: None };
    for sort in [
        vec![by("Age", SortKind::Long, false)],
        vec![by("Age", SortKind::Long, false), by("Name", SortKind::String, false)],
        vec![by("Name", SortKind::String, false), by("Age", SortKind::Double, false)],
    ] {
        let mut all = Vec::new();
        for page in 0..10 {
            let result = index.search(&filter, &sort, page * 30, 30).unwrap();
            assert_eq!(result.total, 240);
            all.extend(result.keys);
        }
        assert_eq!(all.len(), 240);
        let expected: Vec<String> = if sort[0].field == "Age" {
            (10..250).map(|i| format!("users/{i:03}")).collect()
        } else {
            let mut v: Vec<(u32, u32)> = (10..250).map(|i| (i % 7, i)).collect();
            v.sort();
            v.into_iter().map(|(_, i)| format!("users/{i:03}")).collect()
        };
        assert_eq!(all, expected);
    }
    let result = index.search(&filter, &[], 235, 30).unwrap();
    assert_eq!((result.keys.len(), result.total), (5, 240));
    let result = index.search(&Filter::All, &[], 0, 0).unwrap();
    assert_eq!((result.keys.len(), result.total), (0, 250));
    let result = index.search(&Filter::All, &[], 245, 30).unwrap();
    assert_eq!((result.keys.len(), result.total), (5, 250));
    assert_eq!(index.entries_count(), 250);
}

#[test]
fn upserts_replace_and_deletes_remove() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    assert_eq!(index.last_indexed_etag(), 0);
    index.apply(&people(), &[], 5).unwrap();
    index
        .apply(
            &[doc("users/1", json!({"Name": "Johnny"})), doc("users/9", json!({"Name": "x"})), doc("users/9", json!({"Name": "y"}))],
            &["users/2".into()],
            8,
        )
        .unwrap();
    let f = Fixture { _dir: dir, index };
    assert_eq!(f.keys(eq("Name", s("john"))), keys(&[]));
    assert_eq!(f.keys(eq("Name", s("johnny"))), keys(&["1"]));
    assert_eq!(f.keys(eq("Name", s("jane"))), keys(&[]));
    assert_eq!(f.keys(eq("Name", s("x"))), keys(&[]));
    assert_eq!(f.keys(eq("Name", s("y"))), keys(&["9"]));
    assert_eq!(f.keys(eq("Age", Value::Long(30))), keys(&["3"]));
    assert_eq!(f.index.entries_count(), 5);
    assert_eq!(f.index.last_indexed_etag(), 8);
    assert!(f.index.size_on_disk() > 0);
}

#[test]
fn reopen_resumes_from_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
        index.apply(&people(), &[], 42).unwrap();
        index.checkpoint().unwrap();
    }
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    assert_eq!(index.last_indexed_etag(), 42);
    assert_eq!(index.entries_count(), 5);
    let result = index.search(&Filter::Search { field: "Notes".into(), terms: "fox".into(), all: false }, &[], 0, 10).unwrap();
    assert_eq!(result.keys, keys(&["1"]));
    index.apply(&[], &["users/1".into()], 43).unwrap();
    index.checkpoint().unwrap();
    drop(index);
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    assert_eq!((index.last_indexed_etag(), index.entries_count()), (43, 4));
    drop(index);

    let other = IndexSpec { fields: vec![field("Name")] };
    assert!(matches!(DocumentIndex::open_or_create(dir.path(), &other), Err(IndexError::Corrupted { .. })));
}

#[test]
fn garbage_directory_is_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("meta.json"), b"{not json").unwrap();
    assert!(matches!(DocumentIndex::open_or_create(dir.path(), &spec()), Err(IndexError::Corrupted { .. })));
}

#[test]
fn index_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<DocumentIndex>();
}

#[test]
fn searches_run_while_batches_commit() {
    let dir = tempfile::tempdir().unwrap();
    let index = std::sync::Arc::new(DocumentIndex::open_or_create(dir.path(), &spec()).unwrap());
    let writer = {
        let index = index.clone();
        std::thread::spawn(move || {
            for batch in 0..20u64 {
                let docs: Vec<_> = (0..50).map(|i| doc(&format!("users/{batch}-{i}"), json!({"Age": batch}))).collect();
                index.apply(&docs, &[], batch + 1).unwrap();
            }
        })
    };
    let mut last_total = 0;
    while !writer.is_finished() {
        // Each search sees a committed snapshot: whole batches only, never fewer than before.
        let result = index.search(&Filter::All, &[by("Age", SortKind::Long, true)], 0, 10).unwrap();
        assert_eq!(result.total % 50, 0);
        assert!(result.total >= last_total);
        last_total = result.total;
    }
    writer.join().unwrap();
    assert_eq!(index.search(&Filter::All, &[], 0, 0).unwrap().total, 1000);
    assert_eq!(index.last_indexed_etag(), 20);
}

#[test]
fn a_second_open_of_the_same_directory_fails_cleanly() {
    let f = fixture();
    let dir = f._dir.path();
    assert!(DocumentIndex::open_or_create(dir, &spec()).is_err());
}

#[test]
fn sorting_over_segments_where_the_sort_field_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    index.apply(&[doc("users/1", json!({"Name": "x"})), doc("users/2", json!({"Name": "y"}))], &[], 1).unwrap();
    index.apply(&[doc("users/3", json!({"Age": 5})), doc("users/4", json!({"Age": 2}))], &[], 2).unwrap();
    for kind in [SortKind::Long, SortKind::Double, SortKind::String, SortKind::AlphaNumeric] {
        for (take, skip) in [(10, 0), (2000, 0)] {
            let result = index.search(&Filter::All, &[by("Age", kind, false)], skip, take).unwrap();
            assert_eq!(result.keys, keys(&["1", "2", "4", "3"]), "{kind:?}");
            let result = index.search(&Filter::All, &[by("Age", kind, true), by("Name", SortKind::String, false)], skip, take).unwrap();
            assert_eq!(result.keys, keys(&["3", "4", "1", "2"]), "{kind:?}");
        }
    }
}

/// A `Search` field sorts by the start of its lower-cased value, for string and alphanumeric sorts alike.
#[test]
fn analyzed_fields_sort_by_the_start_of_their_value() {
    let dir = TempDir::new().unwrap();
    let text = FieldSpec { search: true, analyzed_only: true, ..FieldSpec::new("Text") };
    let index = DocumentIndex::open_or_create(dir.path(), &IndexSpec { fields: vec![text] }).unwrap();
    let long = |start: &str| format!("{start} {}", "filler words that run past the sort key ".repeat(3));
    index
        .apply(
            &[
                doc("d/1", json!({"Text": long("Banana split")})),
                doc("d/2", json!({"Text": "apple"})),
                doc("d/3", json!({"Text": long("cherry pie")})),
                doc("d/4", json!({"Text": ["Aardvark", "zebra"]})),
            ],
            &[],
            4,
        )
        .unwrap();
    for kind in [SortKind::String, SortKind::AlphaNumeric] {
        let sorted = index.search(&Filter::All, &[by("Text", kind, false)], 0, 10).unwrap().keys;
        assert_eq!(sorted, vec!["d/4", "d/2", "d/1", "d/3"], "{kind:?}");
        let reversed = index.search(&Filter::All, &[by("Text", kind, true)], 0, 10).unwrap().keys;
        assert_eq!(reversed, vec!["d/3", "d/1", "d/2", "d/4"]);
    }
}

/// Segments of the last commit, as the reader sees them.
fn segment_count(index: &DocumentIndex) -> usize {
    index.reader.searcher().segment_readers().len()
}

#[test]
fn a_catch_up_does_not_merge_and_its_segments_merge_once_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    index.set_bulk(true);
    for batch in 0..12u64 {
        let docs: Vec<_> = (0..20).map(|i| doc(&format!("users/{batch}-{i}"), json!({"Age": batch}))).collect();
        index.apply(&docs, &[], batch + 1).unwrap();
    }
    // At least one segment per catch-up commit (one per indexing thread that got documents), none merged.
    let unmerged = segment_count(&index);
    assert!(unmerged >= 12, "{unmerged} segments");
    index.end_bulk().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while segment_count(&index) >= unmerged {
        assert!(std::time::Instant::now() < deadline, "the catch-up's segments were never merged");
        std::thread::sleep(std::time::Duration::from_millis(50));
        // Merges publish through the writer; an empty batch reloads the reader.
        index.apply(&[], &[], 12).unwrap();
    }
    assert_eq!(index.search(&Filter::All, &[], 0, 0).unwrap().total, 240);
    assert_eq!(index.last_indexed_etag(), 12);
}

#[test]
fn keeping_up_merges_segments_of_similar_size_and_leaves_bigger_ones() {
    use tantivy::index::SegmentId;
    use tantivy::indexer::MergePolicy;
    let index = tantivy::Index::create_in_ram(tantivy::schema::Schema::builder().build());
    let segments = |sizes: &[u32]| -> Vec<tantivy::index::SegmentMeta> {
        sizes.iter().map(|&n| index.new_segment_meta(SegmentId::generate_random(), n)).collect()
    };
    let policy = crate::document_index::keep_up_merge_policy();
    let merged_sizes = |sizes: &[u32]| -> Vec<Vec<u32>> {
        let metas = segments(sizes);
        let mut out: Vec<Vec<u32>> = policy
            .compute_merge_candidates(&metas)
            .into_iter()
            .map(|c| {
                let mut v: Vec<u32> = c.0.iter().map(|id| metas.iter().find(|m| m.id() == *id).unwrap().max_doc()).collect();
                v.sort_unstable();
                v
            })
            .collect();
        out.sort();
        out
    };
    // A commit's small segment does not make the big segments of earlier merges merge again (tantivy's default
    // merged the 9,000-entry segment with every seven new ones).
    assert_eq!(merged_sizes(&[9000, 20, 22, 18]), Vec::<Vec<u32>>::new());
    assert_eq!(merged_sizes(&[9000, 20, 22, 18, 25]), vec![vec![18, 20, 22, 25]]);
    // Levels merge independently, each once it holds four segments within 4x of each other.
    assert_eq!(merged_sizes(&[9000, 8000, 7000, 6000, 300, 20]), vec![vec![6000, 7000, 8000, 9000]]);
    assert_eq!(merged_sizes(&[100_000, 2000, 20, 21]), Vec::<Vec<u32>>::new());
}

#[test]
fn numeric_sorts_use_each_entrys_first_number() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &IndexSpec { fields: vec![field("N")] }).unwrap();
    let docs = [doc("a", json!({"N": [3, 1]})), doc("b", json!({"N": [2.5, 9]})), doc("c", json!({"N": ["x", 2]}))];
    index.apply(&docs, &[], 3).unwrap();
    // First numbers: a 3, b 2.5 (2 as a long), c 2 (the string is not a number).
    let sorted = |kind: SortKind, descending: bool| index.search(&Filter::All, &[by("N", kind, descending)], 0, 10).unwrap().keys;
    assert_eq!(sorted(SortKind::Double, false), vec!["c", "b", "a"]);
    assert_eq!(sorted(SortKind::Double, true), vec!["a", "b", "c"]);
    assert_eq!(sorted(SortKind::Long, true)[0], "a");
    assert_eq!(index.search(&eq("N", Value::Double(2.5)), &[], 0, 10).unwrap().keys, vec!["b"]);
    assert_eq!(index.search(&eq("N", Value::Double(9.0)), &[], 0, 10).unwrap().keys, vec!["b"]);
    assert_eq!(index.search(&eq("N", Value::Long(1)), &[], 0, 10).unwrap().keys, vec!["a"]);
}
