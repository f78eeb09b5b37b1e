//! `OutputReduceToCollection`: a map-reduce index also writes each reduce result as a document of the named
//! collection, with the id `<Collection>/<ReduceOutputIndex>/<hash of the reduce key>` and `@flags:
//! Artificial, FromIndex` (RavenDB's shape). The documents go through the transaction merger like any write,
//! so they are durable, indexed by other indexes and queryable.
//!
//! A reduce key with several results gets `<id>`, `<id>/1`, `<id>/2`... The `ReduceOutputIndex` part tells
//! the outputs of a side-by-side replacement from those of the index it replaces; deleting or resetting an
//! index deletes every document under its prefix.

use corvid_storage::flags::{ARTIFICIAL, FROM_INDEX};
use corvid_storage::{MapReduceStore, TransactionMerger, WriteTxn};
use corvid_types::{id_key, now_nanos};
use serde_json::Value;

use super::definition::AutoIndexDefinition;
use super::output_references::{ReferencePattern, ReferencePatternError};
use crate::version_hasher::VersionHasher;
use crate::EngineError;

/// Where a map-reduce index writes its results as documents.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceOutput {
    /// `OutputReduceToCollection`: the collection of the output documents.
    pub collection: String,
    /// `<Collection>/<ReduceOutputIndex>/`: every output document's id starts with it.
    pub prefix: String,
    /// `PatternForOutputReduceToCollectionReferences`, when set.
    pub references: Option<ReferencePattern>,
}

/// What one batch changes in the output collection: new results per reduce key, keys without results.
#[derive(Debug, Default)]
pub struct OutputChanges {
    /// Reduce keys with their new results (JSON texts).
    pub updated: Vec<(String, Vec<String>)>,
    /// Reduce keys left without results.
    pub removed: Vec<String>,
}

fn non_empty(raw: &Value, key: &str) -> Option<String> {
    raw.get(key).and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned)
}

/// The output collection named by a definition as sent, if any.
pub fn output_collection_of(raw: &Value) -> Option<String> {
    non_empty(raw, "OutputReduceToCollection")
}

/// The reference documents' pattern and collection of a definition as sent, if any.
pub fn reference_pattern_of(raw: &Value) -> Option<Result<ReferencePattern, ReferencePatternError>> {
    let output = output_collection_of(raw)?;
    let pattern = non_empty(raw, "PatternForOutputReduceToCollectionReferences")?;
    let collection = non_empty(raw, "PatternReferencesCollectionName").unwrap_or_else(|| format!("{output}/References"));
    Some(ReferencePattern::parse(&pattern, &collection))
}

impl ReduceOutput {
    /// Where a static map-reduce index writes its results; None when it writes none.
    pub fn of(definition: &AutoIndexDefinition) -> Option<ReduceOutput> {
        let raw = &definition.static_index.as_ref()?.definition;
        let collection = output_collection_of(raw)?;
        let prefix = match raw.get("ReduceOutputIndex").and_then(Value::as_u64) {
            Some(n) => format!("{collection}/{n}/"),
            None => format!("{collection}/"),
        };
        // The pattern was checked when the index was defined.
        let references = reference_pattern_of(raw).and_then(Result::ok);
        Some(ReduceOutput { collection, prefix, references })
    }

    /// The id of a reduce key's first output document.
    pub fn document_id(&self, reduce_key: &str) -> String {
        format!("{}{}", self.prefix, VersionHasher::of(reduce_key))
    }

    /// Writes the documents of changed reduce keys and deletes those of vanished keys, in one merged
    /// transaction. Unchanged documents are left alone (no new etag, so nothing re-indexes them).
    pub fn apply(&self, merger: &TransactionMerger, changes: OutputChanges) -> Result<(), EngineError> {
        if changes.updated.is_empty() && changes.removed.is_empty() {
            return Ok(());
        }
        let output = self.clone();
        merger.write_blocking(move |txn| {
            let now = now_nanos();
            for key in &changes.removed {
                output.write_key(txn, key, &[], now)?;
            }
            for (key, results) in &changes.updated {
                output.write_key(txn, key, results, now)?;
            }
            Ok::<(), EngineError>(())
        })
    }

    /// Makes the output collection match the index's stored results: rewrites what differs and deletes
    /// documents under the prefix that no result accounts for. Run when a worker starts and after a failed
    /// write, so a crash between the index commit and the output write is repaired.
    pub fn resync(&self, merger: &TransactionMerger, store: &MapReduceStore) -> Result<(), EngineError> {
        let results = store.all_results()?;
        let output = self.clone();
        merger.write_blocking(move |txn| {
            let now = now_nanos();
            let mut wanted = std::collections::HashSet::new();
            for (key, texts) in &results {
                for id in output.ids(key, texts.len()) {
                    wanted.insert(id_key(&id));
                }
                output.write_key(txn, key, texts, now)?;
            }
            for key in txn.document_keys_with_prefix(&id_key(&output.prefix))? {
                if !wanted.contains(&key) {
                    output.remove_output(txn, &key, now)?;
                }
            }
            Ok::<(), EngineError>(())
        })
    }

    /// Deletes every output document of the index (it is deleted, reset or replaced).
    pub fn delete_all(&self, merger: &TransactionMerger) -> Result<(), EngineError> {
        let output = self.clone();
        merger.write_blocking(move |txn| {
            let now = now_nanos();
            for key in txn.document_keys_with_prefix(&id_key(&output.prefix))? {
                output.remove_output(txn, &key, now)?;
            }
            Ok::<(), EngineError>(())
        })
    }

    /// Writes one output document (unless it is unchanged) and moves it between reference documents.
    fn put_output(&self, txn: &mut WriteTxn<'_>, id: &str, body: Value, now: i64) -> Result<(), EngineError> {
        let text = body.to_string();
        let current = txn.document(&id_key(id))?;
        let flags = ARTIFICIAL | FROM_INDEX;
        if current.as_ref().is_some_and(|c| c.body == text && c.flags == flags && c.collection == self.collection) {
            return Ok(());
        }
        txn.put_document(id, &self.collection, text, "{}".to_owned(), flags, now)?;
        if let Some(pattern) = &self.references {
            let old = current.and_then(|c| corvid_types::json::parse::<Value>(&c.body).ok()).and_then(|b| pattern.reference_id(&b));
            let new = pattern.reference_id(&body);
            if old != new {
                if let Some(old) = old {
                    pattern.remove(txn, &old, id, now)?;
                }
            }
            if let Some(new) = new {
                pattern.add(txn, &new, id, now)?;
            }
        }
        Ok(())
    }

    /// Deletes one output document (by its lower-cased key) and takes it out of its reference document.
    fn remove_output(&self, txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<(), EngineError> {
        let Some(current) = txn.document(key)? else { return Ok(()) };
        if let Some(pattern) = &self.references {
            if let Some(reference) = corvid_types::json::parse::<Value>(&current.body).ok().and_then(|b| pattern.reference_id(&b)) {
                pattern.remove(txn, &reference, &current.id, now)?;
            }
        }
        txn.delete_document(key, now)?;
        Ok(())
    }

    fn ids(&self, reduce_key: &str, count: usize) -> Vec<String> {
        let first = self.document_id(reduce_key);
        (0..count).map(|i| if i == 0 { first.clone() } else { format!("{first}/{i}") }).collect()
    }

    /// The documents of one reduce key become exactly `results` (none: deleted).
    fn write_key(&self, txn: &mut WriteTxn<'_>, reduce_key: &str, results: &[String], now: i64) -> Result<(), EngineError> {
        let ids = self.ids(reduce_key, results.len().max(1));
        for (id, text) in ids.iter().zip(results) {
            let body = match corvid_types::json::parse::<Value>(text) {
                Ok(Value::Object(fields)) => Value::Object(fields.into_iter().filter(|(k, _)| k != "@metadata").collect()),
                _ => continue,
            };
            self.put_output(txn, id, body, now)?;
        }
        if results.is_empty() {
            self.remove_output(txn, &id_key(&ids[0]), now)?;
        }
        // Further results this key had before and has no longer.
        let extra_prefix = id_key(&format!("{}/", ids[0]));
        for key in txn.document_keys_with_prefix(&extra_prefix)? {
            let position: usize = key[extra_prefix.len()..].parse().unwrap_or(usize::MAX);
            if position >= results.len() {
                self.remove_output(txn, &key, now)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_reduce_output_index_and_a_stable_hash() {
        let definition = crate::indexing::compile_definition(&serde_json::json!({
            "Name": "Sales/ByProduct", "OutputReduceToCollection": "DailySales", "ReduceOutputIndex": 7,
            "Maps": ["map('Orders', o => ({ product: o.product, total: o.total }))"],
            "Reduce": "groupBy(x => x.product).aggregate(g => ({ product: g.key, total: g.values.reduce((s, v) => s + v.total, 0) }))"
        }))
        .unwrap();
        let output = ReduceOutput::of(&definition).unwrap();
        assert_eq!(output.prefix, "DailySales/7/");
        let id = output.document_id("\"apples\"");
        assert!(id.starts_with("DailySales/7/") && id[13..].parse::<u64>().is_ok(), "{id}");
        assert_eq!(id, output.document_id("\"apples\""));
        assert_ne!(id, output.document_id("\"pears\""));
        assert_eq!(output.ids("\"apples\"", 2)[1], format!("{id}/1"));
    }
}
