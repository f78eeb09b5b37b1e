//! Runaway maps stop at their budget quickly, with a typed error, and without taking much memory. This test
//! binary counts every allocation and refuses any beyond one gigabyte, so a map that escapes its budget
//! aborts the test instead of exhausting the machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use corvid_linq::{ErrorKind, LinqIndex, NoDocuments};
use serde_json::{json, Value};

const HARD_CAP: usize = 1 << 30;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every call is passed on to the system allocator unchanged (or refused with null, which callers
// of `alloc` must handle); the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        if now > HARD_CAP {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time, so the peak belongs to it.
static SERIAL: Mutex<()> = Mutex::new(());

/// The document of the report: a 1,000-character string and an array of 1,000 numbers.
fn big_document() -> Value {
    json!({"s": "a".repeat(1000), "arr": (0..1000).collect::<Vec<i64>>()})
}

/// Maps `doc` with the default budget; the error, the time taken and the memory peak above the start.
fn run_to_failure(map: &str, doc: &Value) -> (corvid_linq::LinqError, Duration, usize) {
    let index = LinqIndex::compile(&[map], None).unwrap();
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let outcome = index.map(0, "lqs/1", "Lqs", doc, &json!({}), &mut NoDocuments);
    let elapsed = started.elapsed();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    match outcome {
        Ok(entries) => panic!("the map succeeded with {} entries", entries.len()),
        Err(e) => (e, elapsed, peak),
    }
}

fn assert_stopped(map: &str, doc: &Value) -> ErrorKind {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (e, elapsed, peak) = run_to_failure(map, doc);
    assert!(matches!(e.kind, ErrorKind::LimitExceeded(_)), "{e}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}: {e}");
    assert!(peak < 256 << 20, "peak of {peak} bytes: {e}");
    e.kind
}

#[test]
fn a_string_doubled_in_lets_stops_at_the_memory_budget() {
    let lets: String = (2..=25).map(|i| format!(" let v{i} = v{} + v{}", i - 1, i - 1)).collect();
    let map = format!("from d in docs.Lqs let v1 = d.s + d.s{lets} select new {{ x = v25.Length }}");
    assert_eq!(assert_stopped(&map, &big_document()), ErrorKind::LimitExceeded(corvid_linq::Limit::Bytes));
}

#[test]
fn a_three_way_cross_product_stops() {
    assert_stopped("from d in docs.Lqs from a in d.arr from b in d.arr from c in d.arr select new { x = a + b + c }", &big_document());
}

#[test]
fn a_recursion_into_itself_stops() {
    assert_stopped("from d in docs.Lqs select new { n = Recurse(d, x => x).Count() }", &big_document());
}

#[test]
fn too_many_entries_for_one_document_stop_at_the_output_limit() {
    let doc = json!({"arr": (0..200).collect::<Vec<i64>>()});
    let kind = assert_stopped("from d in docs.Lqs from a in d.arr from b in d.arr select new { x = a * b }", &doc);
    assert_eq!(kind, ErrorKind::LimitExceeded(corvid_linq::Limit::Outputs));
}

#[test]
fn fanning_out_a_large_document_is_not_charged_per_row() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 2,000 rows each seeing an 8 MB document: copying it per row would cost 16 GB.
    let lines: Vec<Value> = (0..2000).map(|i| json!({"P": i})).collect();
    let doc = json!({"Company": "c/1", "Notes": "n".repeat(8 << 20), "Lines": lines});
    let index = LinqIndex::compile(&["from o in docs.Orders from l in o.Lines select new { l.P, o.Company }"], None).unwrap();
    let entries = index.map(0, "orders/1", "Orders", &doc, &json!({}), &mut NoDocuments).unwrap();
    assert_eq!(entries.len(), 2000);
    assert_eq!(entries[1999].fields["P"], json!(1999));
}

#[test]
fn a_large_reduce_group_is_reduced() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let index = LinqIndex::compile(
        &["from u in docs.Users select new { u.Country, Count = 1 }"],
        Some("from r in results group r by r.Country into g select new { Country = g.Key, Count = g.Sum(x => x.Count), Max = g.Max(x => x.Count) }"),
    )
    .unwrap();
    let group: Vec<Value> = (0..300_000).map(|_| json!({"Country": "Norway", "Count": 1})).collect();
    assert_eq!(index.reduce(&group).unwrap(), vec![json!({"Country": "Norway", "Count": 300_000, "Max": 1})]);
}

#[test]
fn a_runaway_reduce_stops() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let index = LinqIndex::compile(
        &["from u in docs.Users select new { u.Country, Count = 1 }"],
        Some("from r in results group r by r.Country into g select new { Country = g.Key, Count = g.SelectMany(a => g).SelectMany(b => g).Count() }"),
    )
    .unwrap();
    let group: Vec<Value> = (0..1000).map(|_| json!({"Country": "Norway", "Count": 1})).collect();
    let e = index.reduce(&group).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LimitExceeded(_)), "{e}");
}
