//! One batch of a pass, inside one merged write: each due row is removed, and its target acted on only when
//! its current metadata still asks for it by now (a row left by an older version of the document is stale).
//! Deletes and refreshes go through the ordinary write path, so revisions, tombstones, indexes, the Changes
//! API and subscriptions see them like any client's write.

use corvid_storage::{DueTimer, TimerKind, WriteTxn};
use serde_json::{Map, Value};

use super::schedule::{compare_exchange_expiry, due_time, EXPIRES, REFRESH};
use crate::write::document::{delete_document, put_document};
use crate::write::precondition::ExpectedChangeVector;
use crate::{EngineError, IncomingDocument};

/// What a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchOutcome {
    /// Targets deleted or refreshed.
    pub acted: u64,
    /// Rows whose target had changed or gone.
    pub stale: u64,
}

/// Acts on the due rows of `kind` at `now` (unix nanoseconds).
pub(crate) fn run_batch(txn: &mut WriteTxn<'_>, kind: TimerKind, due: &[DueTimer], now: i64) -> Result<BatchOutcome, EngineError> {
    let mut outcome = BatchOutcome::default();
    for timer in due {
        txn.remove_timer(kind, timer)?;
        let acted = match kind {
            TimerKind::Expire => expire_document(txn, &timer.key, now)?,
            TimerKind::Refresh => refresh_document(txn, &timer.key, now)?,
            TimerKind::CompareExchangeExpire => expire_compare_exchange(txn, &timer.key, now)?,
        };
        if acted {
            outcome.acted += 1;
        } else {
            outcome.stale += 1;
        }
    }
    Ok(outcome)
}

/// Whether the metadata names a time (`at`) and it is not after `now`.
fn has_passed(at: Option<i64>, now: i64) -> bool {
    at.is_some_and(|at| at <= now)
}

fn metadata_of(client_metadata: &str) -> Map<String, Value> {
    serde_json::from_str(client_metadata).unwrap_or_default()
}

fn expire_document(txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<bool, EngineError> {
    let Some(doc) = txn.document(key)? else { return Ok(false) };
    if !has_passed(due_time(&metadata_of(&doc.client_metadata), EXPIRES), now) {
        return Ok(false);
    }
    Ok(delete_document(txn, &doc.id, &ExpectedChangeVector::Any, now)?.deleted)
}

/// RavenDB's refresh: the document is written again without `@refresh` (a new change vector and etag, so
/// indexes, subscriptions and ETL see it again).
fn refresh_document(txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<bool, EngineError> {
    let Some(doc) = txn.document(key)? else { return Ok(false) };
    let mut metadata = metadata_of(&doc.client_metadata);
    if !has_passed(due_time(&metadata, REFRESH), now) {
        return Ok(false);
    }
    metadata.shift_remove(REFRESH);
    let document = IncomingDocument { collection: doc.collection, body: doc.body, client_metadata: Value::Object(metadata).to_string() };
    put_document(txn, &doc.id, &ExpectedChangeVector::Any, document, now)?;
    Ok(true)
}

fn expire_compare_exchange(txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<bool, EngineError> {
    let Some(record) = txn.compare_exchange(key)? else { return Ok(false) };
    if !has_passed(compare_exchange_expiry(&record.value), now) {
        return Ok(false);
    }
    Ok(txn.delete_compare_exchange(key)?)
}
