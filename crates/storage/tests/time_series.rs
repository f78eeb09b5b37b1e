//! Time-series storage against a plain in-memory model: random appends (in and out of order, overwriting
//! equal timestamps) and range deletes, then reads, stats and the layout's invariants.

use std::collections::BTreeMap;
use std::sync::Arc;

use corvid_storage::{flags, sorted_unique, Store, StoreOptions, TimeSeriesEntry, TransactionMerger};

fn open(dir: &std::path::Path) -> (Arc<Store>, TransactionMerger) {
    let options = StoreOptions { map_size: 1 << 30, max_readers: 126, disk_reserve_bytes: 0, ..Default::default() };
    let store = Arc::new(Store::open(dir, &options).unwrap());
    let merger = TransactionMerger::start("test", store.clone(), 1024, |_| {}).unwrap();
    (store, merger)
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
}

type Model = BTreeMap<i64, (Vec<f64>, Option<String>)>;

fn write_doc(merger: &TransactionMerger, has_series: bool) {
    merger
        .write_blocking(move |txn| {
            let (meta, bits) = if has_series { (r#"{"@timeseries":["Heart"]}"#, flags::HAS_TIME_SERIES) } else { ("{}", 0) };
            txn.put_document("users/1", "Users", "{}".into(), meta.into(), bits, 1).map(|_| ())
        })
        .unwrap();
}

#[test]
fn random_appends_and_deletes_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    write_doc(&merger, false);
    let mut model = Model::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        if round % 7 == 6 {
            let from = rng.below(200_000) * 1000 - 20_000_000;
            let to = from + rng.below(5_000) * 1000;
            let keys: Vec<i64> = model.range(from..=to).map(|(k, _)| *k).collect();
            for k in keys {
                model.remove(&k);
            }
            merger.write_blocking(move |txn| txn.delete_time_series_range("users/1", "heart", from, to)).unwrap();
        } else {
            // Mostly in order after the last entry, sometimes anywhere (out of order, overwrites).
            let base = if rng.below(3) == 0 { rng.below(200_000) * 1000 - 20_000_000 } else { model.keys().last().copied().unwrap_or(0) };
            let n = 1 + rng.below(if round % 10 == 0 { 3000 } else { 40 });
            let mut batch = Vec::new();
            for i in 0..n {
                let timestamp = base + i * 60_000 + rng.below(3) * 1000;
                let values: Vec<f64> = (0..1 + rng.below(3)).map(|_| (rng.below(1000) as f64) / 8.0).collect();
                let tag = (rng.below(4) == 0).then(|| format!("watches/{}", rng.below(3)));
                batch.push(TimeSeriesEntry { timestamp, values, tag });
            }
            let batch = sorted_unique(batch);
            for e in &batch {
                model.insert(e.timestamp, (e.values.clone(), e.tag.clone()));
            }
            merger.write_blocking(move |txn| txn.append_time_series("users/1", "Heart", &batch)).unwrap();
        }
        if round % 50 == 49 || round == 299 {
            let read = store.read().unwrap();
            let mut got = Model::new();
            read.visit_time_series("users/1", "HEART", i64::MIN, i64::MAX, |e| {
                got.insert(e.timestamp, (e.values, e.tag));
                true
            })
            .unwrap();
            assert_eq!(got, model, "round {round}");
            let stats = read.time_series_stats("users/1", "heart").unwrap();
            match model.keys().next() {
                None => assert_eq!(stats, None),
                Some(first) => {
                    let stats = stats.unwrap();
                    assert_eq!((stats.count, stats.start, stats.end), (model.len() as u64, *first, *model.keys().last().unwrap()));
                    assert_eq!(stats.name, "Heart");
                }
            }
            // A window read stops at its bounds.
            let (from, to) = (-1_000_000, 3_000_000);
            let mut window = Vec::new();
            read.visit_time_series("users/1", "heart", from, to, |e| {
                window.push(e.timestamp);
                true
            })
            .unwrap();
            assert_eq!(window, model.range(from..=to).map(|(k, _)| *k).collect::<Vec<_>>());
        }
    }
    write_doc(&merger, !model.is_empty());
    let report = store.check_invariants().unwrap();
    assert!(report.is_sound(), "{:#?}", report.violations);
    assert!(report.time_series_segments > 1);
    // Deleting the document removes its series.
    merger.write_blocking(|txn| txn.delete_document("users/1", 2).map(|_| ())).unwrap();
    let read = store.read().unwrap();
    assert_eq!(read.time_series_of("users/1").unwrap(), vec![]);
    assert_eq!(read.time_series_segment_count().unwrap(), 0);
    drop(read);
    assert!(store.check_invariants().unwrap().is_sound());
}

#[test]
fn stats_that_disagree_with_segments_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (store, merger) = open(dir.path());
    write_doc(&merger, false);
    let entries = vec![TimeSeriesEntry { timestamp: 5, values: vec![1.0], tag: None }];
    merger.write_blocking(move |txn| txn.append_time_series("users/1", "Heart", &entries)).unwrap();
    // The flag and `@timeseries` are the engine's job; without them the check says so.
    let report = store.check_invariants().unwrap();
    assert_eq!(report.violations.len(), 2, "{:#?}", report.violations);
    write_doc(&merger, true);
    assert!(store.check_invariants().unwrap().is_sound());
    let removed = merger.write_blocking(|txn| txn.delete_time_series_range("users/1", "HEART", 0, 10)).unwrap();
    assert!(removed, "the last entry's delete removes the series");
}
