//! A model test of revisions: random sequences of puts, deletes and configuration changes (minimum to keep,
//! deletes per write, purge on delete, disabled, no configuration) run against a real database and a plain
//! in-memory model of RavenDB's rules. After every step each document's revisions (newest first: the value,
//! or a delete revision) and counts must match; at the end, and after a reopen, the storage invariants hold.

use std::collections::BTreeMap;

use corvid_engine::{
    BatchCommand, CollectionRevisions, Database, DatabaseOptions, ExpectedChangeVector, IncomingDocument, RevisionsConfig,
};
use proptest::prelude::*;
use serde_json::Value;

const IDS: [&str; 3] = ["docs/1", "Docs/2", "docs/3"];

#[derive(Debug, Clone)]
enum Step {
    Put { id: usize, value: u8 },
    Delete { id: usize },
    Configure(Option<CollectionRevisions>),
}

fn step() -> impl Strategy<Value = Step> {
    let rules = (proptest::option::of(0u64..4), proptest::option::of(1u64..3), any::<bool>(), prop::bool::weighted(0.15)).prop_map(
        |(minimum, bound, purge_on_delete, disabled)| CollectionRevisions {
            minimum_revisions_to_keep: minimum,
            maximum_revisions_to_delete_upon_document_update: bound,
            purge_on_delete,
            disabled,
            ..CollectionRevisions::default()
        },
    );
    prop_oneof![
        6 => (0..IDS.len(), 0u8..3).prop_map(|(id, value)| Step::Put { id, value }),
        2 => (0..IDS.len()).prop_map(|id| Step::Delete { id }),
        1 => proptest::option::weighted(0.85, rules).prop_map(Step::Configure),
    ]
}

/// What the model keeps of one document.
#[derive(Debug, Default, Clone)]
struct Doc {
    /// The current value; None when deleted or never written.
    current: Option<u8>,
    has_revisions: bool,
    /// Oldest first: a value, or None for a delete revision.
    revisions: Vec<Option<u8>>,
}

#[derive(Debug, Default)]
struct Model {
    rules: Option<CollectionRevisions>,
    docs: BTreeMap<usize, Doc>,
}

impl Model {
    fn trim(rules: &CollectionRevisions, doc: &mut Doc) {
        let Some(minimum) = rules.minimum_revisions_to_keep else { return };
        let count = doc.revisions.len() as u64;
        let to_delete = count.saturating_sub(minimum).min(rules.maximum_revisions_to_delete_upon_document_update.unwrap_or(u64::MAX));
        doc.revisions.drain(..to_delete as usize);
    }

    fn put(&mut self, id: usize, value: u8) {
        let rules = self.rules.clone();
        let doc = self.docs.entry(id).or_default();
        let old = doc.current;
        doc.current = Some(value);
        let Some(rules) = rules.filter(|r| !r.disabled) else { return };
        let versions = old.is_none() || old != Some(value) || rules.minimum_revisions_to_keep == Some(0);
        if !versions {
            return;
        }
        if let Some(old) = old.filter(|_| !doc.has_revisions) {
            doc.revisions.push(Some(old));
        }
        doc.has_revisions = true;
        doc.revisions.push(Some(value));
        Model::trim(&rules, doc);
    }

    fn delete(&mut self, id: usize) {
        let rules = self.rules.clone();
        let doc = self.docs.entry(id).or_default();
        let Some(old) = doc.current.take() else { return };
        let had = doc.has_revisions;
        // A new document starts without the flag; its revisions (if any) stay.
        doc.has_revisions = false;
        let enabled = rules.as_ref().is_some_and(|r| !r.disabled);
        if !enabled && !had {
            return;
        }
        if rules.as_ref().is_some_and(|r| r.purge_on_delete) {
            doc.revisions.clear();
            return;
        }
        if enabled && !had {
            doc.revisions.push(Some(old));
        }
        doc.revisions.push(None);
        if let Some(rules) = rules.filter(|r| !r.disabled) {
            Model::trim(&rules, doc);
        }
    }
}

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("revisions", dir, &options).unwrap()
}

fn put_command(id: &str, value: u8) -> BatchCommand {
    let document = IncomingDocument::from_value(serde_json::json!({"v": value, "@metadata": {"@collection": "Docs"}})).unwrap();
    BatchCommand::Put { id: id.to_owned(), expected: ExpectedChangeVector::Any, document }
}

/// A document's revisions as the database answers them, newest first.
fn stored(db: &Database, id: &str) -> (Vec<Option<u8>>, u64) {
    let page = db.revisions_of(id, 0, 1000, false).unwrap();
    let revisions = page
        .results
        .iter()
        .map(|text| {
            let json: Value = serde_json::from_str(text).unwrap();
            let flags = json["@metadata"]["@flags"].as_str().unwrap().to_owned();
            if flags.contains("DeleteRevision") {
                None
            } else {
                assert!(flags.contains("Revision"), "{flags}");
                Some(json["v"].as_u64().unwrap() as u8)
            }
        })
        .collect();
    (revisions, page.total)
}

fn check(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    for (i, id) in IDS.iter().enumerate() {
        let expected: Vec<Option<u8>> = model.docs.get(&i).map(|d| d.revisions.iter().rev().cloned().collect()).unwrap_or_default();
        let (found, total) = stored(db, id);
        prop_assert_eq!(&found, &expected, "revisions of {}", id);
        prop_assert_eq!(total, expected.len() as u64);
    }
    Ok(())
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut model = Model::default();
    for step in steps {
        match step {
            Step::Put { id, value } => {
                db.batch_blocking(vec![put_command(IDS[*id], *value)]).unwrap();
                model.put(*id, *value);
            }
            Step::Delete { id } => {
                db.batch_blocking(vec![BatchCommand::Delete { id: IDS[*id].to_owned(), expected: ExpectedChangeVector::Any }]).unwrap();
                model.delete(*id);
            }
            Step::Configure(rules) => {
                let config = rules.clone().map(|r| RevisionsConfig { default: Some(r), collections: Vec::new() });
                db.set_revisions_config(config).unwrap();
                model.rules = rules.clone();
            }
        }
        check(&db, &model)?;
    }
    let report = db.check_storage().unwrap();
    prop_assert!(report.violations.is_empty(), "{:?}", report.violations);
    db.close();
    drop(db);
    let db = open(dir.path());
    check(&db, &model)?;
    db.close();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn revisions_match_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        run(&steps)?;
    }
}

#[test]
fn a_document_written_before_the_configuration_keeps_its_old_version_and_deletes_leave_a_delete_revision() {
    let keep_all = Some(CollectionRevisions::default());
    run(&[
        Step::Put { id: 0, value: 1 },
        Step::Configure(keep_all),
        Step::Put { id: 0, value: 2 },
        Step::Put { id: 0, value: 2 },
        Step::Delete { id: 0 },
        Step::Put { id: 0, value: 3 },
    ])
    .unwrap();
}
