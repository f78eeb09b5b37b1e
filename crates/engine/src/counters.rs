//! Counters: increments, deletes and reads per document. Creating or deleting a counter rewrites the
//! document's `@counters` (and so its change vector), as RavenDB does; changing a value does not.

use corvid_storage::{CounterValue, WriteTxn};
use corvid_types::{id_key, now_nanos, validate_name, NameKind};

use crate::changes::{pending, Change, CounterChangeKind};
use crate::write::metadata::refresh_document;
use crate::{Database, EngineError};

/// One operation of a counters command on a document.
#[derive(Debug, Clone, PartialEq)]
pub enum CounterOperation {
    /// Adds `delta` to the counter, creating it at `delta` if it does not exist.
    Increment {
        /// The counter.
        name: String,
        /// What to add (may be negative).
        delta: i64,
    },
    /// Removes the counter.
    Delete {
        /// The counter.
        name: String,
    },
    /// Reads the counter.
    Get {
        /// The counter.
        name: String,
    },
    /// Reads every counter of the document.
    GetAll,
}

/// The counter operations of one document in a `POST /counters` command.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentCounters {
    /// The document.
    pub id: String,
    /// Its operations, applied in order.
    pub operations: Vec<CounterOperation>,
}

/// One counter in a reply; `None` for a counter asked for that does not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterDetail {
    /// The document, with its id as stored.
    pub document_id: String,
    /// The counter's name.
    pub name: String,
    /// Its current value.
    pub value: i64,
}

/// The answer for one document of a counters command.
#[derive(Debug, Clone, PartialEq)]
pub struct CountersReply {
    /// The document.
    pub id: String,
    /// Each counter read or incremented, in the order of the operations (`None` for a missing one).
    pub counters: Vec<Option<CounterDetail>>,
    /// Set when the document was rewritten (a counter was created or deleted).
    pub document_change_vector: Option<String>,
}

impl CounterOperation {
    fn name(&self) -> Option<&str> {
        match self {
            CounterOperation::Increment { name, .. } | CounterOperation::Delete { name } | CounterOperation::Get { name } => Some(name),
            CounterOperation::GetAll => None,
        }
    }
}

/// Checks every counter name of a command before anything is written.
pub(crate) fn validate(command: &DocumentCounters) -> Result<(), EngineError> {
    for name in command.operations.iter().filter_map(CounterOperation::name) {
        validate_name(NameKind::Counter, name)?;
    }
    Ok(())
}

fn detail(id: &str, c: CounterValue) -> CounterDetail {
    CounterDetail { document_id: id.to_owned(), name: c.name, value: c.value }
}

pub(crate) fn run(txn: &mut WriteTxn<'_>, command: DocumentCounters, now: i64) -> Result<CountersReply, EngineError> {
    validate(&command)?;
    let key = id_key(&command.id);
    let Some(doc) = txn.document(&key)? else {
        return Err(EngineError::DocumentDoesNotExist(command.id));
    };
    let id = doc.id;
    let mut names_changed = false;
    let mut counters = Vec::new();
    // What the Changes API hears of, once the document's change vector after the write is known.
    let announce = pending::gathering();
    let mut changed: Vec<(CounterChangeKind, String, i64)> = Vec::new();
    for op in command.operations {
        match op {
            CounterOperation::Increment { name, delta } => {
                let (value, created) = txn.increment_counter(&key, &name, delta)?;
                names_changed |= created;
                if announce {
                    let kind = if created { CounterChangeKind::Put } else { CounterChangeKind::Increment };
                    changed.push((kind, value.name.clone(), value.value));
                }
                counters.push(Some(detail(&id, value)));
            }
            CounterOperation::Delete { name } => {
                let deleted = txn.delete_counter(&key, &name)?;
                names_changed |= deleted;
                if announce && deleted {
                    changed.push((CounterChangeKind::Delete, name, 0));
                }
            }
            CounterOperation::Get { name } => {
                counters.push(txn.counter(&key, &name)?.map(|c| detail(&id, CounterValue { name, value: c.value })))
            }
            CounterOperation::GetAll => counters.extend(txn.counters_of(&key)?.into_iter().map(|c| Some(detail(&id, c)))),
        }
    }
    let document_change_vector = if names_changed { Some(refresh_document(txn, &key, now)?) } else { None };
    let change_vector = document_change_vector.as_deref().unwrap_or(&doc.change_vector);
    for (kind, name, value) in changed {
        pending::raise(|| Change::Counter {
            kind,
            document_id: id.clone(),
            collection: doc.collection.clone(),
            name,
            value,
            change_vector: change_vector.to_owned(),
        });
    }
    Ok(CountersReply { id, counters, document_change_vector })
}

impl Database {
    /// `POST /counters`: each document's operations, all in one transaction.
    pub fn counter_batch_blocking(&self, documents: Vec<DocumentCounters>) -> Result<Vec<CountersReply>, EngineError> {
        self.write_blocking(move |txn| {
            let now = now_nanos();
            documents.into_iter().map(|d| run(txn, d, now)).collect()
        })
    }

    /// Counters of a document: the named ones (None for missing), or all of them when `names` is empty.
    /// An unknown document has no counters.
    pub fn counters(&self, id: &str, names: &[String]) -> Result<Vec<Option<CounterDetail>>, EngineError> {
        for name in names {
            validate_name(NameKind::Counter, name)?;
        }
        let read = self.store.read()?;
        let key = id_key(id);
        let Some(doc) = read.document(&key)? else { return Ok(Vec::new()) };
        if names.is_empty() {
            return Ok(read.counters_of(&key)?.into_iter().map(|c| Some(detail(&doc.id, c))).collect());
        }
        // A counter asked for by name answers with that spelling (names are case-insensitive), as RavenDB does.
        names
            .iter()
            .map(|n| Ok(read.counter(&key, n)?.map(|c| detail(&doc.id, CounterValue { name: n.clone(), value: c.value }))))
            .collect()
    }
}
