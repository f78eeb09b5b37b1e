//! Prints timings of typical index operations over N synthetic documents (default 100,000).
//!
//! `CARGO_TARGET_DIR=/work/target-index cargo run --release -p corvid-index --example index_bench [N]`

use std::time::{Duration, Instant};

use corvid_index::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, SortKey, SortKind, Value};
use serde_json::json;

const WORDS: [&str; 16] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november",
    "oscar", "papa",
];

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = IndexSpec {
        fields: vec![
            FieldSpec { search: true, ..FieldSpec::new("Name") },
            FieldSpec::new("Age"),
            FieldSpec::new("Company"),
            FieldSpec::new("Tags"),
            FieldSpec::new("Lines[].Price"),
        ],
    };
    let index = DocumentIndex::open_or_create(dir.path(), &spec).expect("open");
    let mut state = 0x1234_5678_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let started = Instant::now();
    let batch = 10_000;
    for start in (0..n).step_by(batch) {
        let docs: Vec<MappedDocument> = (start..(start + batch).min(n))
            .map(|i| {
                let name = format!("{} {} {}", WORDS[next() as usize % 16], WORDS[next() as usize % 16], i);
                let body = json!({
                    "Name": name,
                    "Age": next() % 100,
                    "Company": format!("companies/{}", next() % 1000),
                    "Tags": [WORDS[next() as usize % 16], WORDS[next() as usize % 16]],
                    "Lines": [{"Price": (next() % 10_000) as f64 / 100.0}, {"Price": (next() % 10_000) as f64 / 100.0}],
                });
                MappedDocument { key: format!("people/{i}"), body }
            })
            .collect();
        index.apply(&docs, &[], (start + batch) as u64).expect("apply");
    }
    let build = started.elapsed();
    println!(
        "indexed {n} documents in {:.2?} ({:.0} docs/s), {} MB on disk",
        build,
        n as f64 / build.as_secs_f64(),
        index.size_on_disk() / 1_000_000
    );

    let by = |field: &str, kind: SortKind, descending: bool| SortKey { field: field.into(), kind, descending };
    let cases: Vec<(&str, Filter, Vec<SortKey>, usize)> = vec![
        ("all, no sort, top 30", Filter::All, vec![], 0),
        ("all, by Age as long, top 30", Filter::All, vec![by("Age", SortKind::Long, false)], 0),
        ("all, by Name as string, top 30", Filter::All, vec![by("Name", SortKind::String, false)], 0),
        ("all, by Name desc, skip 50000", Filter::All, vec![by("Name", SortKind::String, true)], 50_000),
        ("all, by Age as long desc, skip 50000", Filter::All, vec![by("Age", SortKind::Long, true)], 50_000),
        (
            "all, by Age then Name, skip 50000",
            Filter::All,
            vec![by("Age", SortKind::Long, false), by("Name", SortKind::String, false)],
            50_000,
        ),
        ("all, by Name alphanumeric, top 30", Filter::All, vec![by("Name", SortKind::AlphaNumeric, false)], 0),
        ("all, by Age then Name (multi-key)", Filter::All, vec![by("Age", SortKind::Long, false), by("Name", SortKind::String, false)], 0),
        (
            "Company = x, by Age",
            Filter::Equal { field: "Company".into(), value: Value::String("companies/7".into()), exact: false },
            vec![by("Age", SortKind::Long, true)],
            0,
        ),
        (
            "Age in [20,60), by Lines[].Price double",
            Filter::Range { field: "Age".into(), lower: Some((Value::Long(20), true)), upper: Some((Value::Long(60), false)) },
            vec![by("Lines[].Price", SortKind::Double, false)],
            0,
        ),
        (
            "search(Name, 'alpha bravo'), by score",
            Filter::Search { field: "Name".into(), terms: "alpha bravo".into(), all: false },
            vec![],
            0,
        ),
        (
            "Tags = x and not Age = 5, by Name",
            Filter::And(vec![
                Filter::Equal { field: "Tags".into(), value: Value::String("kilo".into()), exact: false },
                Filter::Not(Box::new(Filter::Equal { field: "Age".into(), value: Value::Long(5), exact: false })),
            ]),
            vec![by("Name", SortKind::String, false)],
            0,
        ),
        (
            "startsWith(Company, 'companies/1')",
            Filter::StartsWith { field: "Company".into(), prefix: "companies/1".into(), exact: false },
            vec![],
            0,
        ),
    ];
    println!("{:<45} {:>10} {:>10} {:>8}", "query (take 30)", "median", "max", "total");
    for (name, filter, sort, skip) in cases {
        let mut times: Vec<Duration> = Vec::new();
        let mut total = 0;
        for _ in 0..21 {
            let t = Instant::now();
            let result = index.search(&filter, &sort, skip, 30).expect("search");
            times.push(t.elapsed());
            total = result.total;
        }
        times.sort();
        println!("{:<45} {:>10.2?} {:>10.2?} {:>8}", name, times[times.len() / 2], times[times.len() - 1], total);
    }
}
