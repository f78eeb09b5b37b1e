//! Soft commits and reboot detection (`soft_sync.rs`), on real files.

use serde_json::json;
use tempfile::TempDir;

use crate::soft_sync::MARKER_FILE;
use crate::{DocumentIndex, FieldSpec, Filter, IndexError, IndexSpec, MappedDocument, Value};

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
    let dir = TempDir::new().unwrap();
    let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
    index.checkpoint().unwrap();
    assert_eq!(marker(dir.path())["state"], "clean");

    index.apply(&[person(1)], &[], 1).unwrap();
    assert_eq!(count_named(&index, 1), 1, "a soft commit is visible at once");
    assert!(index.has_unsynced_commits());
    assert_eq!(marker(dir.path())["state"], "dirty");
    assert_eq!(marker(dir.path())["boot_id"], "boot-a");

    index.checkpoint().unwrap();
    assert!(!index.has_unsynced_commits());
    assert_eq!(marker(dir.path())["state"], "clean");
}

#[test]
fn a_process_crash_in_the_same_boot_resumes_from_the_last_soft_commit() {
    let dir = TempDir::new().unwrap();
    {
        let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
        index.checkpoint().unwrap();
        index.apply(&[person(1), person(2)], &[], 7).unwrap();
        assert!(index.has_unsynced_commits());
        // Dropped without a checkpoint, like a killed process: the files are in the page cache.
    }
    let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
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
        let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
        index.checkpoint().unwrap();
        index.apply(&[person(1)], &[], 3).unwrap();
    }
    match DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-b".into()) {
        Err(IndexError::Corrupted { context }) => assert!(context.contains("machine restarted"), "{context}"),
        other => panic!("expected Corrupted, got {other:?}"),
    }
}

#[test]
fn a_checkpointed_index_survives_a_reboot() {
    let dir = TempDir::new().unwrap();
    {
        let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
        for n in 0..20 {
            index.apply(&[person(n)], &[], n as u64 + 1).unwrap();
        }
        index.checkpoint().unwrap();
    }
    let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-b".into()).unwrap();
    assert_eq!(index.last_indexed_etag(), 20);
    assert_eq!((0..20).map(|n| count_named(&index, n)).sum::<usize>(), 20);
    assert!(!index.has_unsynced_commits());
}

#[test]
fn an_index_without_a_marker_is_trusted_as_durable() {
    let dir = TempDir::new().unwrap();
    {
        let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-a".into()).unwrap();
        index.apply(&[person(1)], &[], 1).unwrap();
        index.checkpoint().unwrap();
    }
    // Indexes written before soft commits existed have no marker; their commits were all fsynced.
    std::fs::remove_file(dir.path().join(MARKER_FILE)).unwrap();
    let index = DocumentIndex::open_in_boot(dir.path(), &spec(), "boot-b".into()).unwrap();
    assert_eq!(count_named(&index, 1), 1);
}
