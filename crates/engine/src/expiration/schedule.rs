//! The queue rows a write adds: a document whose metadata has `@expires` or `@refresh`, a compare-exchange
//! value whose `@metadata` has `@expires`. The date is RavenDB's ISO text (UTC when it names no zone); a value
//! that is not a date is kept as written and never acted on, as RavenDB ignores it.

use corvid_storage::{TimerKind, WriteTxn};
use corvid_types::parse_date_ms;
use serde_json::{Map, Value};

use crate::EngineError;

/// `@expires`: when the document (or compare-exchange value) is deleted.
pub(crate) const EXPIRES: &str = "@expires";
/// `@refresh`: when the document is written again without it.
pub(crate) const REFRESH: &str = "@refresh";

/// The instant (unix nanoseconds) `field` of `metadata` names, if it is a date.
pub(crate) fn due_time(metadata: &Map<String, Value>, field: &str) -> Option<i64> {
    let ms = parse_date_ms(metadata.get(field)?.as_str()?)?;
    ms.checked_mul(1_000_000)
}

/// Queues the document `id` for what its client metadata (compact JSON) asks.
pub(crate) fn on_document_put(txn: &mut WriteTxn<'_>, id: &str, client_metadata: &str) -> Result<(), EngineError> {
    // Most documents have neither: skip the parse.
    if !client_metadata.contains(EXPIRES) && !client_metadata.contains(REFRESH) {
        return Ok(());
    }
    let Ok(metadata) = serde_json::from_str::<Map<String, Value>>(client_metadata) else { return Ok(()) };
    let key = corvid_types::id_key(id);
    if let Some(at) = due_time(&metadata, EXPIRES) {
        txn.queue_timer(TimerKind::Expire, at, &key)?;
    }
    if let Some(at) = due_time(&metadata, REFRESH) {
        txn.queue_timer(TimerKind::Refresh, at, &key)?;
    }
    Ok(())
}

/// Queues the compare-exchange value `key` when its stored JSON (`{"Object": .., "@metadata": ..}`) expires.
pub(crate) fn on_compare_exchange_put(txn: &mut WriteTxn<'_>, key: &str, stored: &str) -> Result<(), EngineError> {
    if !stored.contains(EXPIRES) {
        return Ok(());
    }
    if let Some(at) = compare_exchange_expiry(stored) {
        txn.queue_timer(TimerKind::CompareExchangeExpire, at, &corvid_types::id_key(key))?;
    }
    Ok(())
}

/// When a stored compare-exchange value expires, if its metadata says so.
pub(crate) fn compare_exchange_expiry(stored: &str) -> Option<i64> {
    let value: Value = serde_json::from_str(stored).ok()?;
    due_time(value.get(corvid_types::metadata::METADATA)?.as_object()?, EXPIRES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dates_with_or_without_a_zone() {
        let metadata: Map<String, Value> =
            serde_json::from_str(r#"{"@expires":"2030-01-01T00:00:00.0000000Z","@refresh":"2030-01-01T00:00:00.123456"}"#).unwrap();
        assert_eq!(due_time(&metadata, EXPIRES), Some(1_893_456_000_000 * 1_000_000));
        assert_eq!(due_time(&metadata, REFRESH), Some(1_893_456_000_123 * 1_000_000));
        assert_eq!(compare_exchange_expiry(r#"{"Object":1,"@metadata":{"@expires":"not a date"}}"#), None);
        assert!(compare_exchange_expiry(r#"{"Object":1,"@metadata":{"@expires":"2030-01-01T00:00:00Z"}}"#).is_some());
    }
}
