//! A model test of the write path: random sequences of batches (document puts and deletes, JavaScript and
//! JSON patches, counter increments and deletes, attachment puts and deletes, with valid and stale change
//! vectors, several commands on one id) run against a real database and against a plain in-memory model.
//! After every batch, and again after the database is closed and reopened, every document the model knows
//! must read back the same (body, `@metadata` with `@counters`/`@attachments`/`@flags`, counters,
//! attachments), and every id the model does not know must be absent.

use std::collections::BTreeMap;

use corvid_engine::{
    AttachmentCommand, BatchCommand, CounterOperation, Database, DatabaseOptions, DocumentCounters, EngineError, ExpectedChangeVector,
    IncomingDocument, JsonPatchOp, PatchCommand, PatchScript, StagedBlob,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const IDS: [&str; 4] = ["docs/1", "docs/2", "Docs/3", "docs/4"];
const COUNTERS: [&str; 3] = ["likes", "Views", "dl"];
const ATTACHMENTS: [&str; 3] = ["a.txt", "B.bin", "c"];
const CONTENTS: [&[u8]; 3] = [b"", b"hello", b"a somewhat longer attachment content, to vary the size"];
const CONTENT_TYPES: [&str; 2] = ["text/plain", "application/octet-stream"];
const COLLECTION: &str = "Docs";
/// A change vector no document ever has.
const STALE: &str = "A:999999-stale";

/// The change vector a command expects.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Any,
    /// The document's change vector as read before the batch (a made-up one when it did not exist).
    AsReadBefore,
    Stale,
    MustNotExist,
}

/// A JavaScript patch script.
#[derive(Debug, Clone, Copy)]
enum Script {
    /// `this.n += k`.
    Add,
    /// Changes nothing: the document is not written.
    Nothing,
    /// `this.n += k` and `incrementCounter(this, 'likes', k)`.
    AddAndCount,
    /// Fails the whole batch.
    Throw,
    /// `del(other)`: deletes another document (or this one) from inside the script.
    DeleteOther,
}

/// One command of a batch, in terms of the fixed ids, names and contents above.
#[derive(Debug, Clone)]
enum Step {
    Put {
        id: usize,
        n: i64,
        marker: Option<u8>,
        expect: Expect,
    },
    Delete {
        id: usize,
        expect: Expect,
    },
    Patch {
        id: usize,
        script: Script,
        k: i64,
        other: usize,
        create: bool,
        expect: Expect,
    },
    /// `add /tag`, after a `test /n` that holds or not.
    JsonPatch {
        id: usize,
        tag: u8,
        test: Option<bool>,
    },
    Increment {
        id: usize,
        counter: usize,
        delta: i64,
    },
    DeleteCounter {
        id: usize,
        counter: usize,
    },
    PutAttachment {
        id: usize,
        name: usize,
        content: usize,
        content_type: usize,
        expect: Expect,
    },
    DeleteAttachment {
        id: usize,
        name: usize,
        expect: Expect,
    },
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![12 => Just(Expect::Any), 3 => Just(Expect::AsReadBefore), 1 => Just(Expect::Stale), 1 => Just(Expect::MustNotExist)]
}

fn script() -> impl Strategy<Value = Script> {
    prop_oneof![
        6 => Just(Script::Add),
        1 => Just(Script::Nothing),
        2 => Just(Script::AddAndCount),
        1 => Just(Script::Throw),
        1 => Just(Script::DeleteOther),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let id = 0..IDS.len();
    prop_oneof![
        6 => (id.clone(), -5i64..50, proptest::option::of(0u8..3), expect())
            .prop_map(|(id, n, marker, expect)| Step::Put { id, n, marker, expect }),
        2 => (id.clone(), expect()).prop_map(|(id, expect)| Step::Delete { id, expect }),
        3 => (id.clone(), script(), 1i64..5, 0..IDS.len(), any::<bool>(), expect())
            .prop_map(|(id, script, k, other, create, expect)| Step::Patch { id, script, k, other, create, expect }),
        2 => (id.clone(), 0u8..3, prop_oneof![4 => Just(None), 1 => Just(Some(true)), 1 => Just(Some(false))])
            .prop_map(|(id, tag, test)| Step::JsonPatch { id, tag, test }),
        3 => (id.clone(), 0..COUNTERS.len(), -3i64..10)
            .prop_map(|(id, counter, delta)| Step::Increment { id, counter, delta }),
        1 => (id.clone(), 0..COUNTERS.len()).prop_map(|(id, counter)| Step::DeleteCounter { id, counter }),
        2 => (id.clone(), 0..ATTACHMENTS.len(), 0..CONTENTS.len(), 0..CONTENT_TYPES.len(), expect())
            .prop_map(|(id, name, content, content_type, expect)| Step::PutAttachment { id, name, content, content_type, expect }),
        1 => (id, 0..ATTACHMENTS.len(), expect()).prop_map(|(id, name, expect)| Step::DeleteAttachment { id, name, expect }),
    ]
}

fn batches() -> impl Strategy<Value = Vec<Vec<Step>>> {
    proptest::collection::vec(proptest::collection::vec(step(), 1..5), 1..20)
}

/// One attachment as the model expects it.
#[derive(Debug, Clone, PartialEq)]
struct ModelAttachment {
    name: String,
    hash: String,
    content_type: String,
    size: u64,
}

/// One document as the model expects it.
#[derive(Debug, Clone)]
struct ModelDoc {
    body: Map<String, Value>,
    /// The client's own metadata key (`Marker`), kept through patches and metadata refreshes.
    marker: Option<u8>,
    /// By lower-cased name: (name as first written, value).
    counters: BTreeMap<String, (String, i64)>,
    /// By lower-cased name.
    attachments: BTreeMap<String, ModelAttachment>,
    /// Changes whenever the database writes the document (so its change vector changes).
    version: u64,
}

/// The documents, by lower-cased id, and a source of fresh versions.
#[derive(Debug, Clone, Default)]
struct Model {
    docs: BTreeMap<String, ModelDoc>,
    next_version: u64,
}

/// Why the model expects a batch to fail.
#[derive(Debug)]
struct Refused;

impl Model {
    fn fresh_version(&mut self) -> u64 {
        self.next_version += 1;
        self.next_version
    }

    fn touch(&mut self, key: &str) {
        let version = self.fresh_version();
        if let Some(doc) = self.docs.get_mut(key) {
            doc.version = version;
        }
    }

    /// The check of `ExpectedChangeVector` against the document as it is now in the batch; `before` is
    /// the version the change vector was read at (None: the document did not exist then).
    fn check(&self, key: &str, expect: Expect, before: Option<u64>) -> Result<(), Refused> {
        let current = self.docs.get(key).map(|d| d.version);
        let holds = match expect {
            Expect::Any => true,
            Expect::MustNotExist => current.is_none(),
            Expect::Stale => false,
            Expect::AsReadBefore => before.is_some() && current == before,
        };
        holds.then_some(()).ok_or(Refused)
    }

    fn put(&mut self, key: &str, body: Map<String, Value>, marker: Option<u8>) {
        let version = self.fresh_version();
        let doc = self.docs.entry(key.to_owned()).or_insert_with(|| ModelDoc {
            body: Map::new(),
            marker: None,
            counters: BTreeMap::new(),
            attachments: BTreeMap::new(),
            version,
        });
        doc.body = body;
        doc.marker = marker;
        doc.version = version;
    }

    /// Applies one command; `before` holds the versions read before the batch.
    fn apply(&mut self, step: &Step, before: &BTreeMap<String, u64>, contents: &[StagedBlob]) -> Result<(), Refused> {
        let key_of = |id: usize| IDS[id].to_lowercase();
        match *step {
            Step::Put { id, n, marker, expect } => {
                let key = key_of(id);
                self.check(&key, expect, before.get(&key).copied())?;
                self.put(&key, body_with_n(n), marker);
            }
            Step::Delete { id, expect } => {
                let key = key_of(id);
                self.check(&key, expect, before.get(&key).copied())?;
                self.docs.remove(&key);
            }
            Step::Patch { id, script, k, other, create, expect } => {
                let key = key_of(id);
                let Some(doc) = self.docs.get(&key) else {
                    if create {
                        self.put(&key, body_with_n(k), None);
                    }
                    return Ok(());
                };
                self.check(&key, expect, before.get(&key).copied())?;
                let mut body = doc.body.clone();
                let n = body.get("n").and_then(Value::as_i64).unwrap_or(0);
                match script {
                    Script::Add => {
                        body.insert("n".into(), json!(n + k));
                        self.docs.get_mut(&key).unwrap().body = body;
                        self.touch(&key);
                    }
                    Script::Nothing => {}
                    Script::AddAndCount => {
                        self.increment(&key, "likes", k);
                        body.insert("n".into(), json!(n + k));
                        self.docs.get_mut(&key).unwrap().body = body;
                        self.touch(&key);
                    }
                    Script::Throw => return Err(Refused),
                    Script::DeleteOther => {
                        self.docs.remove(&key_of(other));
                    }
                }
            }
            Step::JsonPatch { id, tag, test } => {
                let key = key_of(id);
                let Some(doc) = self.docs.get_mut(&key) else { return Ok(()) };
                if test == Some(false) {
                    return Err(Refused);
                }
                let value = Value::from(format!("t{tag}"));
                if doc.body.get("tag") != Some(&value) {
                    doc.body.insert("tag".into(), value);
                    self.touch(&key);
                }
            }
            Step::Increment { id, counter, delta } => {
                let key = key_of(id);
                if !self.docs.contains_key(&key) {
                    return Err(Refused);
                }
                self.increment(&key, COUNTERS[counter], delta);
            }
            Step::DeleteCounter { id, counter } => {
                let key = key_of(id);
                let doc = self.docs.get_mut(&key).ok_or(Refused)?;
                if doc.counters.remove(&COUNTERS[counter].to_lowercase()).is_some() {
                    self.touch(&key);
                }
            }
            Step::PutAttachment { id, name, content, content_type, expect } => {
                let key = key_of(id);
                if !self.docs.contains_key(&key) {
                    return Err(Refused);
                }
                self.check(&key, expect, before.get(&key).copied())?;
                let blob = &contents[content];
                let attachment = ModelAttachment {
                    name: ATTACHMENTS[name].to_owned(),
                    hash: blob.hash.clone(),
                    content_type: CONTENT_TYPES[content_type].to_owned(),
                    size: blob.size,
                };
                self.docs.get_mut(&key).unwrap().attachments.insert(ATTACHMENTS[name].to_lowercase(), attachment);
                self.touch(&key);
            }
            Step::DeleteAttachment { id, name, expect } => {
                let key = key_of(id);
                if !self.docs.contains_key(&key) {
                    return Ok(());
                }
                self.check(&key, expect, before.get(&key).copied())?;
                if self.docs.get_mut(&key).unwrap().attachments.remove(&ATTACHMENTS[name].to_lowercase()).is_some() {
                    self.touch(&key);
                }
            }
        }
        Ok(())
    }

    /// A counter increment: creating a counter rewrites the document, changing a value does not.
    fn increment(&mut self, key: &str, name: &str, delta: i64) {
        let doc = self.docs.get_mut(key).expect("checked by the caller");
        match doc.counters.get_mut(&name.to_lowercase()) {
            Some((_, value)) => *value += delta,
            None => {
                doc.counters.insert(name.to_lowercase(), (name.to_owned(), delta));
                self.touch(key);
            }
        }
    }
}

fn body_with_n(n: i64) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("n".into(), json!(n));
    body
}

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("model", dir, &options).unwrap()
}

fn stage(db: &Database, content: &[u8]) -> StagedBlob {
    let mut chunks = vec![content.to_vec()].into_iter();
    db.stage_attachment(|| chunks.next().map(Ok::<_, EngineError>)).unwrap()
}

fn change_vector_of(db: &Database, id: &str) -> Option<String> {
    db.load(&[id.to_owned()], &[], true).unwrap().change_vectors.into_iter().next().flatten()
}

fn expected_change_vector(expect: Expect, read_before: Option<&String>) -> ExpectedChangeVector {
    match expect {
        Expect::Any => ExpectedChangeVector::Any,
        Expect::MustNotExist => ExpectedChangeVector::MustNotExist,
        Expect::Stale => ExpectedChangeVector::Exactly(STALE.into()),
        Expect::AsReadBefore => ExpectedChangeVector::Exactly(read_before.cloned().unwrap_or_else(|| STALE.into())),
    }
}

fn document(n: i64, marker: Option<u8>) -> IncomingDocument {
    let mut metadata = json!({
        "@collection": COLLECTION,
        // Server-owned keys a client may send back: they never override what the server keeps.
        "@counters": ["bogus"], "@attachments": [{"Name": "bogus"}], "@flags": "HasCounters"
    });
    if let Some(marker) = marker {
        metadata["Marker"] = json!(marker);
    }
    IncomingDocument::from_value(json!({"n": n, "@metadata": metadata})).unwrap()
}

fn patch_script(script: Script, k: i64, other: usize) -> PatchScript {
    let text = match script {
        Script::Add => "this.n = (this.n || 0) + args.k;",
        Script::Nothing => "var unused = args.k;",
        Script::AddAndCount => "this.n = (this.n || 0) + args.k; incrementCounter(this, 'likes', args.k);",
        Script::Throw => "throw new Error('refused by the model test');",
        Script::DeleteOther => "del(args.other);",
    };
    let mut values = Map::new();
    values.insert("k".into(), json!(k));
    values.insert("other".into(), json!(IDS[other]));
    PatchScript { script: text.into(), values }
}

/// The batch command for a step; `read_before` holds change vectors read before the batch.
fn command(step: &Step, read_before: &BTreeMap<String, String>, contents: &[StagedBlob]) -> BatchCommand {
    let cv = |id: usize, expect: Expect| expected_change_vector(expect, read_before.get(&IDS[id].to_lowercase()));
    match *step {
        Step::Put { id, n, marker, expect } => {
            BatchCommand::Put { id: IDS[id].into(), expected: cv(id, expect), document: document(n, marker) }
        }
        Step::Delete { id, expect } => BatchCommand::Delete { id: IDS[id].into(), expected: cv(id, expect) },
        Step::Patch { id, script, k, other, create, expect } => BatchCommand::Patch(Box::new(PatchCommand {
            id: IDS[id].into(),
            expected: cv(id, expect),
            patch: patch_script(script, k, other),
            patch_if_missing: None,
            create_if_missing: create.then(|| json!({"n": k, "@metadata": {"@collection": COLLECTION}})),
            skip_if_change_vector_mismatch: false,
            debug: false,
            return_document: false,
        })),
        Step::JsonPatch { id, tag, test } => {
            let mut ops = match test {
                None => Vec::new(),
                // A test that holds, on a field added and removed again by the same patch.
                Some(true) => vec![
                    JsonPatchOp::Add { path: "/probe".into(), value: json!("x") },
                    JsonPatchOp::Test { path: "/probe".into(), value: json!("x") },
                    JsonPatchOp::Remove { path: "/probe".into() },
                ],
                // `n` never grows this large: the test fails and so does the batch.
                Some(false) => vec![JsonPatchOp::Test { path: "/n".into(), value: json!(1_000_000) }],
            };
            ops.push(JsonPatchOp::Add { path: "/tag".into(), value: json!(format!("t{tag}")) });
            BatchCommand::JsonPatch { id: IDS[id].into(), ops, return_document: false }
        }
        Step::Increment { id, counter, delta } => BatchCommand::Counters(DocumentCounters {
            id: IDS[id].into(),
            operations: vec![CounterOperation::Increment { name: COUNTERS[counter].into(), delta }],
        }),
        Step::DeleteCounter { id, counter } => BatchCommand::Counters(DocumentCounters {
            id: IDS[id].into(),
            operations: vec![CounterOperation::Delete { name: COUNTERS[counter].into() }],
        }),
        Step::PutAttachment { id, name, content, content_type, expect } => BatchCommand::Attachment(AttachmentCommand::Put {
            id: IDS[id].into(),
            name: ATTACHMENTS[name].into(),
            content_type: CONTENT_TYPES[content_type].into(),
            expected: cv(id, expect),
            blob: contents[content].clone(),
        }),
        Step::DeleteAttachment { id, name, expect } => BatchCommand::Attachment(AttachmentCommand::Delete {
            id: IDS[id].into(),
            name: ATTACHMENTS[name].into(),
            expected: cv(id, expect),
        }),
    }
}

/// Compares every id with the model: documents it knows read back as it expects, the others are absent.
fn compare(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    for id in IDS {
        let key = id.to_lowercase();
        let loaded = db.load(&[id.to_owned()], &[], false).unwrap().results.remove(0);
        let counters = db.counters(id, &[]).unwrap();
        let Some(expected) = model.docs.get(&key) else {
            prop_assert!(loaded.is_none(), "{id} should be absent: {loaded:?}");
            prop_assert!(counters.is_empty(), "{id} is absent but has counters {counters:?}");
            for name in ATTACHMENTS {
                prop_assert!(db.attachment(id, name).unwrap().is_none(), "{id} is absent but has attachment {name}");
            }
            continue;
        };
        let Some(text) = loaded else { return Err(TestCaseError::fail(format!("{id} should exist: {expected:?}"))) };
        let Value::Object(mut body) = serde_json::from_str::<Value>(&text).unwrap() else { panic!("not an object: {text}") };
        let Some(Value::Object(metadata)) = body.shift_remove("@metadata") else { panic!("no @metadata: {text}") };
        prop_assert_eq!(&body, &expected.body, "body of {}", id);
        prop_assert_eq!(metadata.get("@id"), Some(&json!(id)));
        prop_assert_eq!(metadata.get("@collection"), Some(&json!(COLLECTION)));
        let marker = expected.marker.map(|m| json!(m));
        prop_assert_eq!(metadata.get("Marker"), marker.as_ref(), "client metadata of {}", id);

        let counter_names: Vec<Value> = expected.counters.values().map(|(name, _)| json!(name)).collect();
        let expected_counters = (!counter_names.is_empty()).then(|| Value::Array(counter_names));
        prop_assert_eq!(metadata.get("@counters"), expected_counters.as_ref(), "@counters of {}: {}", id, text);
        let attachment_list: Vec<Value> = expected
            .attachments
            .values()
            .map(|a| json!({"Name": a.name, "Hash": a.hash, "ContentType": a.content_type, "Size": a.size}))
            .collect();
        let expected_attachments = (!attachment_list.is_empty()).then(|| Value::Array(attachment_list));
        prop_assert_eq!(metadata.get("@attachments"), expected_attachments.as_ref(), "@attachments of {}: {}", id, text);
        let flags: Vec<&str> = [(!expected.attachments.is_empty(), "HasAttachments"), (!expected.counters.is_empty(), "HasCounters")]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect();
        let expected_flags = (!flags.is_empty()).then(|| json!(flags.join(", ")));
        prop_assert_eq!(metadata.get("@flags"), expected_flags.as_ref(), "@flags of {}: {}", id, text);

        let stored: BTreeMap<String, (String, i64)> = counters
            .into_iter()
            .map(|c| {
                let c = c.expect("every listed counter exists");
                (c.name.to_lowercase(), (c.name, c.value))
            })
            .collect();
        prop_assert_eq!(&stored, &expected.counters, "counters of {}", id);
        for name in ATTACHMENTS {
            let stored = db.attachment(id, name).unwrap().map(|(details, _)| ModelAttachment {
                name: details.name,
                hash: details.hash,
                content_type: details.content_type,
                size: details.size,
            });
            prop_assert_eq!(stored.as_ref(), expected.attachments.get(&name.to_lowercase()), "attachment {} of {}", name, id);
        }
    }
    Ok(())
}

/// Runs every batch against the database and the model, comparing after each, then after a reopen.
/// Returns which batches were accepted.
fn run(batches: &[Vec<Step>]) -> Result<Vec<bool>, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut model = Model::default();
    let mut accepted = Vec::new();
    for steps in batches {
        // Staged only for batches that use them: staging syncs a file.
        let uses_contents = steps.iter().any(|s| matches!(s, Step::PutAttachment { .. }));
        let contents: Vec<StagedBlob> = if uses_contents { CONTENTS.iter().map(|c| stage(&db, c)).collect() } else { Vec::new() };
        let mut read_before = BTreeMap::new();
        let mut versions_before = BTreeMap::new();
        for id in IDS {
            let key = id.to_lowercase();
            if let Some(cv) = change_vector_of(&db, id) {
                read_before.insert(key.clone(), cv);
                versions_before.insert(key.clone(), model.docs[&key].version);
            }
        }
        let mut next = model.clone();
        let predicted = steps.iter().try_for_each(|step| next.apply(step, &versions_before, &contents));
        let commands = steps.iter().map(|step| command(step, &read_before, &contents)).collect();
        let outcome = db.batch_blocking(commands);
        db.release_attachments(&contents);
        accepted.push(outcome.is_ok());
        match (predicted, &outcome) {
            (Ok(()), Ok(_)) => model = next,
            (Err(Refused), Err(_)) => {}
            (predicted, outcome) => {
                return Err(TestCaseError::fail(format!("batch {steps:?}: the model says {predicted:?}, the database {outcome:?}")))
            }
        }
        compare(&db, &model)?;
    }
    db.close();
    drop(db);
    let db = open(dir.path());
    compare(&db, &model)?;
    db.close();
    Ok(accepted)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn writes_match_the_model(batches in batches()) {
        run(&batches)?;
    }
}

/// The cases a random run may take a while to hit, spelled out: a stale change vector refuses the whole
/// batch, and a batch that touches one id several times sees its own earlier commands.
#[test]
fn chosen_sequences_match_the_model() {
    let put = |id, n, marker, expect| Step::Put { id, n, marker, expect };
    let batches = vec![
        vec![put(0, 1, Some(1), Expect::MustNotExist)],
        // Creating the counter rewrites the document: the change vector read before the batch is stale at
        // the attachment, and the counter is not created either.
        vec![
            Step::Increment { id: 0, counter: 1, delta: 2 },
            Step::PutAttachment { id: 0, name: 1, content: 1, content_type: 0, expect: Expect::AsReadBefore },
        ],
        // Checked first, the same change vector holds.
        vec![
            Step::PutAttachment { id: 0, name: 1, content: 1, content_type: 0, expect: Expect::AsReadBefore },
            Step::Increment { id: 0, counter: 1, delta: 2 },
            Step::Increment { id: 0, counter: 1, delta: 3 },
        ],
        vec![
            Step::Patch { id: 0, script: Script::AddAndCount, k: 3, other: 0, create: false, expect: Expect::AsReadBefore },
            Step::JsonPatch { id: 0, tag: 1, test: Some(true) },
            Step::DeleteCounter { id: 0, counter: 1 },
            Step::DeleteAttachment { id: 0, name: 1, expect: Expect::Any },
        ],
        vec![put(1, 5, None, Expect::Any), Step::Delete { id: 0, expect: Expect::Stale }],
        // Deleted and written again: no counters or attachments left from before.
        vec![Step::Delete { id: 0, expect: Expect::Any }, put(0, 2, Some(2), Expect::MustNotExist)],
        // A missing document is created without a check of the change vector.
        vec![Step::Patch { id: 2, script: Script::Add, k: 1, other: 0, create: true, expect: Expect::Stale }],
        vec![Step::Patch { id: 0, script: Script::DeleteOther, k: 1, other: 2, create: false, expect: Expect::Any }],
        vec![Step::JsonPatch { id: 0, tag: 2, test: Some(false) }],
    ];
    assert_eq!(run(&batches).unwrap(), [true, false, true, true, false, true, true, true, false]);
}
