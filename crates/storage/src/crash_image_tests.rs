//! Power-loss images (in the style of redb's crash tests): a run of merged writes and checkpoints records
//! every write and flush of the journal (`journal_file::io_log`) and the data file's content before each of
//! its flushes; then, for random points of the run, the disk a power loss there could leave is built:
//! journal writes after the last flush of their file are kept, dropped or torn at random, and every page of
//! the data file written since its last flush is the old page, the new one or a torn mix, meta pages
//! included. Each image is opened (recovery) and must hold every acknowledged transaction, no transaction
//! half-applied, and pass the invariant check.
//!
//! The data file's pages are modelled from copies of it rather than from each `pwrite` (LMDB's I/O is not
//! ours to record): copies are taken when a checkpoint starts and just before it lets the previous
//! checkpoint's snapshot go. The content at the start of the last checkpoint whose flush finished is durable;
//! every page that differs in the first copy after the crash point is old, new or torn. A page written several
//! times in between is taken in its last version, and an image may hold writes made after its crash point
//! (but never after a protected snapshot was let go): a superset of what the disk could hold.
//!
//! `CORVID_CRASH_IMAGES` sets the number of images (default 200), `CORVID_CRASH_SEED` the seed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::journal_file::io_log::{self, Event};
use crate::journal_recovery::broken_recovery;
use crate::{StorageError, Store, StoreOptions, TransactionMerger};

const TRANSACTIONS: u64 = 160;
const PAGE: usize = 4096;

fn options() -> StoreOptions {
    StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() }
}

/// xorshift64*: seeded, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn doc_id(i: u64) -> String {
    format!("docs/{i}")
}

/// Transaction `i` deletes the document of transaction `i - 7` when `i` is a multiple of 5.
fn deletes(i: u64) -> Option<u64> {
    (i >= 7 && i.is_multiple_of(5)).then(|| i - 7)
}

/// Runs the recorded workload; the events, and the number of events before the workload began.
fn recorded_run(root: &Path) -> (Vec<Event>, usize) {
    let db = root.join("db");
    let log = io_log::record(&db);
    let store = Arc::new(Store::open(&db, &options()).unwrap());
    // The opening flushed the data file and wrote a checkpoint: checkpoint 0 of the model.
    io_log::data_copy(&db, "start");
    io_log::mark(&db, "data-synced");
    io_log::mark(&db, "checkpoint-durable");
    let start = log.lock().unwrap().len();
    let merger = TransactionMerger::start("crash", store.clone(), 64, |_| {}).unwrap();
    for i in 0..TRANSACTIONS {
        let body = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(1500 + (i as usize * 37) % 900));
        let written: Result<(), StorageError> = merger.write_blocking(move |txn| {
            txn.put_document(&doc_id(i), "Docs", body, "{}".into(), 0, 1)?;
            txn.put_document("tally", "Tallies", format!("{{\"n\":{i}}}"), "{}".into(), 0, 1)?;
            if let Some(gone) = deletes(i) {
                txn.delete_document(&corvid_types::id_key(&doc_id(gone)), 1)?;
            }
            Ok(())
        });
        written.unwrap();
        io_log::mark(&db, &format!("ack {i}"));
        if (i + 1).is_multiple_of(40) {
            merger.checkpoint_blocking();
        }
    }
    io_log::data_copy(&db, "end");
    let events = log.lock().unwrap().clone();
    merger.stop();
    (events, start)
}

/// The journal files a power loss at event `cut` could leave, by path.
fn journal_image(events: &[Event], cut: usize, rng: &mut Rng) -> HashMap<PathBuf, Vec<u8>> {
    struct Inode {
        writes: Vec<(usize, u64, Vec<u8>)>,
        durable_before: usize,
    }
    let mut files: HashMap<PathBuf, Inode> = HashMap::new();
    for (at, event) in events[..cut].iter().enumerate() {
        match event {
            Event::Write { path, offset, bytes } => files
                .entry(path.clone())
                .or_insert(Inode { writes: Vec::new(), durable_before: 0 })
                .writes
                .push((at, *offset, bytes.clone())),
            Event::Synced { path, covers } => {
                if let Some(inode) = files.get_mut(path) {
                    inode.durable_before = *covers;
                }
            }
            Event::Renamed { from, to } => {
                if let Some(inode) = files.remove(from) {
                    files.insert(to.clone(), inode);
                }
            }
            Event::Removed { path } => {
                files.remove(path);
            }
            Event::Mark(_) | Event::DataCopy(..) => {}
        }
    }
    let mut image = HashMap::new();
    for (path, inode) in files {
        let mut content = Vec::new();
        for (at, offset, bytes) in inode.writes {
            let bytes = if at < inode.durable_before {
                &bytes[..]
            } else {
                match rng.below(3) {
                    0 => continue,
                    1 => &bytes[..],
                    _ => &bytes[..rng.below(bytes.len() as u64) as usize],
                }
            };
            let end = offset as usize + bytes.len();
            if content.len() < end {
                content.resize(end, 0);
            }
            content[offset as usize..end].copy_from_slice(bytes);
        }
        image.insert(path, content);
    }
    image
}

/// The data file a power loss at event `cut` could leave.
fn data_image(events: &[Event], cut: usize, rng: &mut Rng) -> Vec<u8> {
    let copies: Vec<(usize, &str, &Vec<u8>)> =
        events.iter().enumerate().filter_map(|(at, e)| if let Event::DataCopy(tag, b) = e { Some((at, *tag, b)) } else { None }).collect();
    let synced = events[..cut].iter().filter(|e| matches!(e, Event::Mark(m) if m == "data-synced")).count();
    // Flushed: the data file when the last checkpoint whose flush finished started.
    let base = copies.iter().filter(|(_, tag, _)| *tag == "start").nth(synced - 1).unwrap().2;
    // Every write up to the next copy (a superset: see the module comment). No snapshot a recovery may
    // need is let go before that copy.
    let new = copies.iter().find(|(at, _, _)| *at >= cut).unwrap_or(copies.last().unwrap()).2;
    let mut image = new.clone();
    for (page, chunk) in image.chunks_mut(PAGE).enumerate() {
        let start = page * PAGE;
        let old = base.get(start..start + chunk.len());
        let Some(old) = old else { continue };
        if old == chunk {
            continue;
        }
        match rng.below(3) {
            0 => chunk.copy_from_slice(old),
            1 => {}
            _ => {
                let split = (rng.below((PAGE / 512) as u64) as usize * 512).min(chunk.len());
                chunk[split..].copy_from_slice(&old[split..]);
            }
        }
    }
    image
}

/// Opens an image and checks it; the failure, if any.
fn check_image(dir: &Path, acknowledged: Option<u64>) -> Result<(), String> {
    let store = Store::open(dir, &options()).map_err(|e| format!("does not open: {e}"))?;
    let read = store.read().map_err(|e| e.to_string())?;
    let applied = match read.document("tally").map_err(|e| e.to_string())? {
        None => None,
        Some(record) => {
            let value: serde_json::Value = serde_json::from_str(&record.body).map_err(|e| e.to_string())?;
            value["n"].as_u64()
        }
    };
    if applied < acknowledged {
        return Err(format!("transaction {acknowledged:?} was acknowledged, the image holds up to {applied:?}"));
    }
    for i in 0..TRANSACTIONS {
        let written = applied.is_some_and(|n| i <= n);
        let deleted = (i..TRANSACTIONS).any(|j| deletes(j) == Some(i) && applied.is_some_and(|n| j <= n));
        let present = read.document(&doc_id(i)).map_err(|e| e.to_string())?.is_some();
        if present != (written && !deleted) {
            return Err(format!("document {i}: present {present}, but the tally says {applied:?} (half-applied)"));
        }
    }
    let report = store.check_invariants().map_err(|e| e.to_string())?;
    if !report.violations.is_empty() {
        return Err(format!("invariants: {:?}", report.violations));
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Builds and checks `images` images of one recorded run; the failures.
fn run_images(images: u64, seed: u64) -> Vec<String> {
    let root = tempfile::tempdir().unwrap();
    let (events, start) = recorded_run(root.path());
    let db = root.path().join("db");
    let database_id = std::fs::read(db.join("database.id")).unwrap();
    let mut rng = Rng(seed | 1);
    let mut failures = Vec::new();
    for n in 0..images {
        let cut = start + rng.below((events.len() - start + 1) as u64) as usize;
        let acknowledged = events[..cut]
            .iter()
            .filter_map(|e| if let Event::Mark(m) = e { m.strip_prefix("ack ").and_then(|i| i.parse().ok()) } else { None })
            .max();
        let dir = root.path().join(format!("image-{n}"));
        std::fs::create_dir_all(dir.join("journal")).unwrap();
        std::fs::write(dir.join("database.id"), &database_id).unwrap();
        std::fs::write(dir.join("data.mdb"), data_image(&events, cut, &mut rng)).unwrap();
        for (path, content) in journal_image(&events, cut, &mut rng) {
            let relative = path.strip_prefix(&db).unwrap();
            std::fs::write(dir.join(relative), content).unwrap();
        }
        if let Err(failure) = check_image(&dir, acknowledged) {
            failures.push(format!("image {n} (cut at event {cut} of {}): {failure}", events.len()));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    failures
}

#[test]
fn every_power_loss_image_holds_every_acknowledged_transaction() {
    let images = env_number("CORVID_CRASH_IMAGES", 200);
    let seed = env_number("CORVID_CRASH_SEED", 0x5EED_0018);
    let failures = run_images(images, seed);
    assert!(failures.is_empty(), "{} of {images} images failed (seed {seed:#x}):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_recovery_that_forgets_a_record_is_caught() {
    broken_recovery::set(true);
    let failures = run_images(60, 0xBAD_5EED);
    broken_recovery::set(false);
    assert!(!failures.is_empty(), "the crash images did not notice a recovery that drops the last durable record");
}
