//! Soft commits and reboot detection (`soft_sync.rs`), on real files.

use serde_json::json;
use tempfile::TempDir;

use crate::soft_sync::MARKER_FILE;
use crate::{DocumentIndex, FieldSpec, Filter, IndexError, IndexSpec, MappedDocument, RecentSegments, Value};

const ON_DISK: RecentSegments = RecentSegments::OnDisk;
const IN_MEMORY: RecentSegments = RecentSegments::InMemory;

fn open(dir: &TempDir, boot: &str, recent: RecentSegments) -> DocumentIndex {
    DocumentIndex::open_in_boot(dir.path(), &spec(), boot.into(), recent, Default::default()).unwrap()
}

fn spec() -> IndexSpec {
    IndexSpec { fields: vec![FieldSpec::new("Name")] }
}

fn person(n: usize) -> MappedDocument {
    MappedDocument { key: format!("people/{n}"), body: json!({ "Name": format!("name{n}") }) }
}

fn count_named(index: &DocumentIndex, n: usize) -> usize {
    index.search(&Filter::Equal { field: "Name".into(), value: Value::String(format!("name{n}")), exact: false }, &[], 0, 10).unwrap().total
}

fn marker(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(MARKER_FILE)).unwrap()).unwrap()
}

#[test]
fn a_commit_is_searchable_before_any_checkpoint_and_the_checkpoint_marks_the_index_clean() {
    for recent in [ON_DISK, IN_MEMORY] {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, "boot-a", recent);
        index.checkpoint().unwrap();
        assert_eq!(marker(dir.path())["state"], "clean");

        index.apply(&[person(1)], &[], 1).unwrap();
        assert_eq!(count_named(&index, 1), 1, "a soft commit is visible at once");
        assert!(index.has_unsynced_commits());
        // In memory, nothing on disk changes before the checkpoint.
        assert_eq!(marker(dir.path())["state"], if recent == ON_DISK { "dirty" } else { "clean" }, "{recent:?}");
        assert_eq!(marker(dir.path())["boot_id"], "boot-a");

        index.checkpoint().unwrap();
        assert!(!index.has_unsynced_commits());
        assert_eq!(marker(dir.path())["state"], "clean");
        assert_eq!(index.memory_bytes(), 0, "a checkpoint writes what it held");
        drop(index);
        let index = open(&dir, "boot-b", recent);
        assert_eq!((index.last_indexed_etag(), count_named(&index, 1)), (1, 1), "{recent:?}");
    }
}

#[test]
fn a_process_crash_with_segments_in_memory_resumes_from_the_last_checkpoint() {
    let dir = TempDir::new().unwrap();
    {
        let index = open(&dir, "boot-a", IN_MEMORY);
        index.apply(&[person(1)], &[], 3).unwrap();
        index.checkpoint().unwrap();
        index.apply(&[person(2)], &["people/1".into()], 7).unwrap();
        assert!(index.memory_bytes() > 0);
        assert_eq!((count_named(&index, 1), count_named(&index, 2)), (0, 1));
        // Dropped without a checkpoint, like a killed process.
    }
    // The same in the same boot and after a reboot: the disk holds the checkpoint, synced.
    for boot in ["boot-a", "boot-b"] {
        let index = open(&dir, boot, IN_MEMORY);
        assert_eq!(index.last_indexed_etag(), 3, "indexing resumes after the checkpoint");
        assert_eq!((count_named(&index, 1), count_named(&index, 2)), (1, 0));
        assert!(!index.has_unsynced_commits());
    }
}

#[test]
fn a_process_crash_in_the_same_boot_resumes_from_the_last_soft_commit() {
    let dir = TempDir::new().unwrap();
    {
        let index = open(&dir, "boot-a", ON_DISK);
        index.checkpoint().unwrap();
        index.apply(&[person(1), person(2)], &[], 7).unwrap();
        assert!(index.has_unsynced_commits());
        // Dropped without a checkpoint, like a killed process: the files are in the page cache.
    }
    let index = open(&dir, "boot-a", ON_DISK);
    assert_eq!(index.last_indexed_etag(), 7);
    assert_eq!(count_named(&index, 2), 1);
    // Unknown files of the crashed process are synced by the next checkpoint.
    assert!(index.has_unsynced_commits());
    index.checkpoint().unwrap();
    assert_eq!(marker(dir.path())["state"], "clean");
}

#[test]
fn unsynced_commits_from_an_earlier_boot_make_the_index_corrupted_so_it_is_rebuilt() {
    let dir = TempDir::new().unwrap();
    {
        let index = open(&dir, "boot-a", ON_DISK);
        index.checkpoint().unwrap();
        index.apply(&[person(1)], &[], 3).unwrap();
    }
    match DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-b".into(), ON_DISK, Default::default()) {
        Err(IndexError::Corrupted { context }) => assert!(context.contains("machine restarted"), "{context}"),
        other => panic!("expected Corrupted, got {other:?}"),
    }
}

#[test]
fn a_checkpointed_index_survives_a_reboot() {
    for recent in [ON_DISK, IN_MEMORY] {
        let dir = TempDir::new().unwrap();
        {
            let index = open(&dir, "boot-a", recent);
            for n in 0..20 {
                index.apply(&[person(n)], &[], n as u64 + 1).unwrap();
            }
            index.checkpoint().unwrap();
        }
        let index = open(&dir, "boot-b", recent);
        assert_eq!(index.last_indexed_etag(), 20);
        assert_eq!((0..20).map(|n| count_named(&index, n)).sum::<usize>(), 20);
        assert!(!index.has_unsynced_commits());
    }
}

#[test]
fn an_index_without_a_marker_is_trusted_as_durable() {
    for recent in [ON_DISK, IN_MEMORY] {
        let dir = TempDir::new().unwrap();
        {
            let index = open(&dir, "boot-a", recent);
            index.apply(&[person(1)], &[], 1).unwrap();
            index.checkpoint().unwrap();
        }
        // Indexes written before soft commits existed have no marker; their commits were all fsynced.
        std::fs::remove_file(dir.path().join(MARKER_FILE)).unwrap();
        let index = open(&dir, "boot-b", recent);
        assert_eq!(count_named(&index, 1), 1);
    }
}

/// A small deterministic generator (xorshift), so a failing seed can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn keys_in(index: &DocumentIndex) -> std::collections::BTreeSet<String> {
    index.search(&Filter::All, &[], 0, 100_000).unwrap().keys.into_iter().collect()
}

/// Random upserts and deletes over many small commits (so tantivy merges and drops segments while files sit in
/// memory), checkpoints at random points, a kill at a random point: the reopened index holds exactly the
/// entries as of the etag it reports, and goes on from there.
#[test]
fn killed_at_any_point_the_index_reopens_exactly_at_its_last_checkpoint() {
    for seed in 1..=6u64 {
        let dir = TempDir::new().unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut live = std::collections::BTreeSet::new();
        let mut history = vec![live.clone()];
        let batches = 40 + rng.below(40);
        {
            let index = open(&dir, "boot-a", IN_MEMORY);
            for etag in 1..=batches {
                let mut upserts = Vec::new();
                let mut deletes = Vec::new();
                for _ in 0..1 + rng.below(30) {
                    let n = rng.below(200) as usize;
                    if rng.below(4) == 0 {
                        deletes.push(format!("people/{n}"));
                        live.remove(&format!("people/{n}"));
                    } else if !upserts.iter().any(|u: &MappedDocument| u.key == format!("people/{n}")) {
                        upserts.push(person(n));
                        live.insert(format!("people/{n}"));
                    }
                }
                upserts.retain(|u| live.contains(&u.key));
                index.apply(&upserts, &deletes, etag).unwrap();
                history.push(live.clone());
                assert_eq!(keys_in(&index), live, "seed {seed}: live view at etag {etag}");
                if rng.below(8) == 0 {
                    index.checkpoint().unwrap();
                }
            }
        }
        let mut reopened_at = None;
        for boot in ["boot-a", "boot-b"] {
            let index = open(&dir, boot, IN_MEMORY);
            let etag = index.last_indexed_etag();
            assert_eq!(keys_in(&index), history[etag as usize], "seed {seed}, {boot}: reopened at etag {etag}");
            assert_eq!(*reopened_at.get_or_insert(etag), etag);
        }
        let index = open(&dir, "boot-b", IN_MEMORY);
        index.apply(&[person(500)], &[], batches + 1).unwrap();
        index.checkpoint().unwrap();
        drop(index);
        let index = open(&dir, "boot-c", IN_MEMORY);
        let mut expected = history[reopened_at.unwrap() as usize].clone();
        expected.insert("people/500".to_owned());
        assert_eq!((index.last_indexed_etag(), keys_in(&index)), (batches + 1, expected));
    }
}

/// A segment too big to hold in memory goes to disk as it is written; killed before the checkpoint that
/// would list it, its files are removed when the index reopens.
#[test]
fn spilled_files_of_a_killed_process_are_removed_on_reopen() {
    let dir = TempDir::new().unwrap();
    let mut rng = Rng(42);
    let big: Vec<MappedDocument> = (0..3000)
        .map(|n| {
            let text: String = (0..2000).map(|_| (b'a' + rng.below(26) as u8) as char).collect();
            MappedDocument { key: format!("big/{n}"), body: json!({ "Name": text }) }
        })
        .collect();
    let big_files =
        |dir: &TempDir| std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.metadata().unwrap().len() > 1024 * 1024).count();
    {
        let index = open(&dir, "boot-a", IN_MEMORY);
        index.apply(&[person(1)], &[], 1).unwrap();
        index.checkpoint().unwrap();
        index.apply(&big, &[], 2).unwrap();
        assert!(big_files(&dir) > 0, "the big segment went to disk as it was written");
        assert_eq!(index.search(&Filter::All, &[], 0, 0).unwrap().total, 3001);
    }
    let index = open(&dir, "boot-a", IN_MEMORY);
    assert_eq!(index.last_indexed_etag(), 1);
    assert_eq!(big_files(&dir), 0, "unlisted segment files are removed");
    index.apply(&big, &[], 2).unwrap();
    index.checkpoint().unwrap();
    drop(index);
    let index = open(&dir, "boot-b", IN_MEMORY);
    assert_eq!((index.last_indexed_etag(), index.search(&Filter::All, &[], 0, 0).unwrap().total), (2, 3001));
}

#[test]
fn a_checkpoint_that_cannot_write_a_file_keeps_the_rest_in_memory_and_the_next_one_writes_it() {
    let dir = TempDir::new().unwrap();
    let index = open(&dir, "boot-a", IN_MEMORY);
    index.apply(&[person(1), person(2)], &[], 5).unwrap();
    let recent = index.recent_files();
    assert!(recent.len() > 2, "{recent:?}");
    // A directory where one file goes makes its write fail, as a full disk would.
    let blocked = dir.path().join(&recent[recent.len() / 2]);
    std::fs::create_dir(&blocked).unwrap();
    assert!(index.checkpoint().is_err());
    assert_eq!(count_named(&index, 2), 1);
    std::fs::remove_dir(&blocked).unwrap();
    index.checkpoint().unwrap();
    assert_eq!(index.memory_bytes(), 0);
    drop(index);
    let index = open(&dir, "boot-b", IN_MEMORY);
    assert_eq!((index.last_indexed_etag(), count_named(&index, 1), count_named(&index, 2)), (5, 1, 1));
}
