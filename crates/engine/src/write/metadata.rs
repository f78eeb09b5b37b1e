//! The metadata the server keeps on a document for its attachments, counters and time series:
//! `@attachments` (name, hash, content type, size of each), `@counters` and `@timeseries` (the names), with
//! the `HasAttachments`, `HasCounters` and `HasTimeSeries` flags. Client metadata never sets them; they are
//! rebuilt from the stored rows.

use corvid_storage::{flags, WriteTxn};
use serde_json::{json, Map, Value};

use crate::EngineError;

/// The flags this module owns; every other flag of a document is kept as it is.
pub(crate) const KEPT_BY_SERVER: u32 = flags::HAS_ATTACHMENTS | flags::HAS_COUNTERS | flags::HAS_TIME_SERIES;

/// Client metadata with the server-kept `@attachments` and `@counters` of the stored document added, and
/// the flags that go with them.
pub(crate) fn with_server_metadata(txn: &WriteTxn<'_>, key: &str, client_metadata: &str) -> Result<(String, u32), EngineError> {
    let mut meta: Map<String, Value> = corvid_types::json::parse(client_metadata).unwrap_or_default();
    meta.shift_remove("@attachments");
    meta.shift_remove("@counters");
    meta.shift_remove("@timeseries");
    let mut bits = 0;
    // In key order: by lower-cased name, as RavenDB lists them.
    let attachments = txn.attachments_of(key)?;
    if !attachments.is_empty() {
        let list: Vec<Value> =
            attachments.iter().map(|a| json!({"Name": a.name, "Hash": a.hash, "ContentType": a.content_type, "Size": a.size})).collect();
        meta.insert("@attachments".into(), Value::Array(list));
        bits |= flags::HAS_ATTACHMENTS;
    }
    let mut counters: Vec<String> = txn.counters_of(key)?.into_iter().map(|c| c.name).collect();
    if !counters.is_empty() {
        counters.sort_by_key(|n| n.to_lowercase());
        meta.insert("@counters".into(), json!(counters));
        bits |= flags::HAS_COUNTERS;
    }
    let mut series: Vec<String> = txn.time_series_of(key)?.into_iter().map(|s| s.name).collect();
    if !series.is_empty() {
        series.sort_by_key(|n| n.to_lowercase());
        meta.insert("@timeseries".into(), json!(series));
        bits |= flags::HAS_TIME_SERIES;
    }
    Ok((Value::Object(meta).to_string(), bits))
}

/// Rewrites a document after its attachments, counters or series changed: new `@attachments`/`@counters`/
/// `@timeseries`, flags,
/// etag and change vector. Returns the new change vector.
pub(crate) fn refresh_document(txn: &mut WriteTxn<'_>, key: &str, now: i64) -> Result<String, EngineError> {
    let doc = txn.document(key)?.ok_or_else(|| EngineError::DocumentDoesNotExist(key.to_owned()))?;
    let (meta, bits) = with_server_metadata(txn, key, &doc.client_metadata)?;
    let kept = doc.flags & !KEPT_BY_SERVER;
    let out = crate::revisions::writes::put_document(txn, Some(&doc), &doc.id, &doc.collection, doc.body.clone(), meta, kept | bits, now)?;
    Ok(out.change_vector)
}
