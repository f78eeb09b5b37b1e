//! Cluster-wide transactions (`bulk_docs` with `TransactionMode: ClusterWide`): compare-exchange changes
//! and document puts and deletes, committed together in one merged transaction or not at all. Each
//! compare-exchange change must find the index it expects; unless the client disabled them, every document
//! change also checks and moves its atomic guard, the compare-exchange value `rvn-atomic/<id>`, so two
//! cluster transactions writing one document cannot both win.

use corvid_storage::WriteTxn;
use corvid_types::{now_nanos, validate_id};
use serde_json::{json, Value};

use crate::batch::BatchReply;
use crate::compare_exchange::{delete_in_txn, put_in_txn, validate_key};
use crate::write::document::{delete_document, put_document};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

/// Prefix of the atomic guard of a document: `rvn-atomic/<document id>`.
pub const ATOMIC_GUARD_PREFIX: &str = "rvn-atomic/";

/// Tag of the change-vector entry that carries a document's atomic guard index.
const GUARD_TAG: &str = "TRXN";

/// One command of a cluster-wide transaction.
#[derive(Debug, Clone)]
pub enum ClusterCommand {
    /// Stores a document.
    Put {
        /// The document id (neither empty nor ending in `/` or `|`).
        id: String,
        /// The change vector the client last saw (`OriginalChangeVector`, else `ChangeVector`): its `TRXN`
        /// entry is the guard index the client expects.
        seen_change_vector: Option<String>,
        /// The new document.
        document: IncomingDocument,
    },
    /// Deletes a document.
    Delete {
        /// The document id.
        id: String,
        /// As for `Put`.
        seen_change_vector: Option<String>,
    },
    /// `CompareExchangePUT`: stores a value if the key has the expected index (0: must not exist).
    CompareExchangePut {
        /// The key.
        key: String,
        /// The JSON object to store (compact).
        value: String,
        /// The index the value must have now.
        expected: u64,
    },
    /// `CompareExchangeDELETE`: removes a value if the key has the expected index.
    CompareExchangeDelete {
        /// The key.
        key: String,
        /// The index the value must have now.
        expected: u64,
    },
}

/// What a cluster transaction answered: the document replies, then one per compare-exchange command.
#[derive(Debug, Clone)]
pub struct ClusterTransactionReply {
    /// Replies in RavenDB's order: document commands first, then compare-exchange commands.
    pub results: Vec<BatchReply>,
    /// The compare-exchange index this transaction took (RavenDB's Raft index of the command).
    pub transaction_index: u64,
}

/// A compare-exchange change to check and make, with the error text RavenDB gives when its index is stale.
struct Change {
    key: String,
    expected: u64,
    /// The value to put, or None to delete.
    value: Option<String>,
    /// For an atomic guard: the document it guards (the error names it).
    guarded_document: Option<String>,
    /// Whether a reply is due (the client's own commands; guards have none).
    reply: bool,
}

/// Refuses what RavenDB refuses in a cluster transaction before anything is queued.
pub fn validate_cluster_command(command: &ClusterCommand) -> Result<(), EngineError> {
    match command {
        ClusterCommand::Put { id, .. } | ClusterCommand::Delete { id, .. } => {
            if id.trim().is_empty() {
                return Err(EngineError::bad_request(
                    "In ClusterTransactionDataCommand document id cannot be null, empty or white spaces as part of cluster transaction.",
                ));
            }
            if id.ends_with('/') || id.ends_with('|') {
                return Err(EngineError::bad_request(format!(
                    "Document id {id} cannot end with '|' or '/' as part of cluster transaction"
                )));
            }
            validate_id(id)?;
        }
        ClusterCommand::CompareExchangePut { key, .. } | ClusterCommand::CompareExchangeDelete { key, .. } => validate_key(key)?,
    }
    Ok(())
}

/// The etag of the `TRXN` entry of `change_vector` whose database id is `database_id`.
fn guard_index_in(change_vector: &str, database_id: &str) -> Option<u64> {
    change_vector.split(',').find_map(|entry| {
        let (tag, rest) = entry.trim().split_once(':')?;
        let (etag, id) = rest.split_once('-')?;
        (tag == GUARD_TAG && id == database_id).then(|| etag.parse().ok()).flatten()
    })
}

/// The atomic guard change a document command brings: put `{"Id": id}` expecting the index the client saw
/// (0 when it saw none: the document must be new to cluster transactions), or delete it.
fn guard_change(txn: &WriteTxn<'_>, command: &ClusterCommand) -> Result<Option<Change>, EngineError> {
    let (id, seen, document) = match command {
        ClusterCommand::Put { id, seen_change_vector, document } => (id, seen_change_vector, Some(document)),
        ClusterCommand::Delete { id, seen_change_vector } => (id, seen_change_vector, None),
        _ => return Ok(None),
    };
    let key = format!("{ATOMIC_GUARD_PREFIX}{id}");
    let seen_index = match seen.as_deref() {
        None => None,
        Some(cv) => match guard_index_in(cv, txn.database_id()) {
            Some(index) => Some(index),
            // Corvid's change vectors carry no `TRXN` entry: a client that saw the current version of the
            // document saw its current guard; one that saw an older version expects none (and fails if any).
            None => {
                let current = txn.document(&corvid_types::id_key(id))?;
                let saw_current = current.is_some_and(|doc| doc.change_vector == cv);
                let guard = if saw_current { txn.compare_exchange(&key)?.map(|g| g.index) } else { None };
                Some(guard.unwrap_or(0))
            }
        },
    };
    let (expected, value) = match document {
        Some(document) => {
            let mut value = json!({ "Id": id });
            // The guard expires with its document.
            if let Ok(Value::Object(metadata)) = serde_json::from_str::<Value>(&document.client_metadata) {
                if let Some(expires) = metadata.get("@expires") {
                    value["@metadata"] = json!({ "@expires": expires });
                }
            }
            (seen_index.unwrap_or(0), Some(value.to_string()))
        }
        None => match seen_index {
            Some(index) => (index, None),
            // A delete without a guard index checks against whatever guard there is; none: nothing to check.
            None => match txn.compare_exchange(&key)? {
                Some(current) => (current.index, None),
                None => return Ok(None),
            },
        },
    };
    Ok(Some(Change { key, expected, value, guarded_document: Some(id.clone()), reply: false }))
}

/// Why a change cannot be made, in RavenDB's words, or None when its expected index holds.
fn stale(txn: &WriteTxn<'_>, change: &Change) -> Result<Option<String>, EngineError> {
    let actual = txn.compare_exchange(&change.key)?.map(|current| current.index);
    // In a cluster transaction a missing value is expected with index 0, for puts and deletes alike.
    if actual.unwrap_or(0) == change.expected {
        return Ok(None);
    }
    let actual_text = actual.map_or("-1".to_owned(), |i| i.to_string());
    let verb = if change.value.is_some() { "putting" } else { "deleting" };
    let mut message = format!(
        "Concurrency check failed for {verb} the key '{}'. Requested index: {}, actual index: {actual_text}",
        change.key, change.expected
    );
    if let Some(id) = &change.guarded_document {
        message = format!(
            "Guard compare exchange value '{}' index does not match the transaction index's {} change vector on {id}\n{message}",
            change.key, change.expected
        );
    }
    Ok(Some(message))
}

/// Runs a cluster transaction inside the merger's transaction: every index checked first, then every change.
fn run(
    txn: &mut WriteTxn<'_>,
    commands: Vec<ClusterCommand>,
    atomic_document_writes: bool,
    now: i64,
) -> Result<ClusterTransactionReply, EngineError> {
    let mut changes = Vec::new();
    if atomic_document_writes {
        for command in &commands {
            changes.extend(guard_change(txn, command)?);
        }
    }
    let mut documents = Vec::new();
    for command in commands {
        match command {
            ClusterCommand::CompareExchangePut { key, value, expected } => {
                changes.push(Change { key, expected, value: Some(value), guarded_document: None, reply: true })
            }
            ClusterCommand::CompareExchangeDelete { key, expected } => {
                changes.push(Change { key, expected, value: None, guarded_document: None, reply: true })
            }
            document => documents.push(document),
        }
    }
    let mut issues = Vec::new();
    for change in &changes {
        issues.extend(stale(txn, change)?);
    }
    if !issues.is_empty() {
        return Err(EngineError::ClusterTransactionConcurrency {
            message: format!("Failed to execute cluster transaction due to the following issues: {}", issues.join("\n")),
        });
    }
    let index = txn.next_compare_exchange_index()?;
    let mut results = Vec::with_capacity(documents.len() + changes.len());
    for document in documents {
        results.push(match document {
            ClusterCommand::Put { id, document, .. } => put_document(txn, &id, &ExpectedChangeVector::Any, document, now)?.into(),
            ClusterCommand::Delete { id, .. } => delete_document(txn, &id, &ExpectedChangeVector::Any, now)?.into(),
            _ => unreachable!("compare-exchange commands were taken out above"),
        });
    }
    for change in changes {
        let outcome = match change.value {
            Some(value) => put_in_txn(txn, &change.key, value, change.expected, index)?,
            None => delete_in_txn(txn, &change.key, change.expected, index)?,
        };
        debug_assert!(outcome.successful, "every index was checked in this transaction");
        if change.reply {
            results.push(BatchReply::CompareExchange { key: change.key, index, deleted: outcome.value.is_none() });
        }
    }
    Ok(ClusterTransactionReply { results, transaction_index: index })
}

impl Database {
    /// Queues a cluster-wide transaction; `reply` gets its replies once durable, or the first error (a stale
    /// index: `ClusterTransactionConcurrency`), in which case nothing was written.
    pub fn submit_cluster_transaction(
        &self,
        commands: Vec<ClusterCommand>,
        atomic_document_writes: bool,
        reply: impl FnOnce(Result<ClusterTransactionReply, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        for command in &commands {
            validate_cluster_command(command)?;
        }
        self.write(move |txn| run(txn, commands, atomic_document_writes, now_nanos()), reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_index_comes_from_this_databases_trxn_entry() {
        assert_eq!(guard_index_in("A:5-abc, TRXN:7-db1", "db1"), Some(7));
        assert_eq!(guard_index_in("A:5-abc,TRXN:7-db2", "db1"), None);
        assert_eq!(guard_index_in("A:5-db1", "db1"), None);
        assert_eq!(guard_index_in("", "db1"), None);
    }
}
