//! The writes of imported time series, in the import's batches: entries appended (an entry at an existing
//! timestamp is replaced, so a repeated import converges) and ranges removed, the document's
//! `@timeseries` following when a series appears or goes.

use corvid_storage::{TimeSeriesEntry, WriteTxn};
use corvid_types::id_key;

use crate::write::metadata::refresh_document;
use crate::EngineError;

/// Appends imported entries (an entry at an existing timestamp replaces it, so a repeated import
/// converges); the document's `@timeseries` follows when the series is new. False: no such document.
pub(crate) fn write_entries(txn: &mut WriteTxn<'_>, id: &str, name: &str, entries: &[TimeSeriesEntry]) -> Result<bool, EngineError> {
    let key = id_key(id);
    let Some(document) = txn.document(&key)? else { return Ok(false) };
    let existed = txn.time_series_stats(&key, name)?.is_some();
    txn.append_time_series(&key, name, entries)?;
    if !existed {
        // The document keeps its `@last-modified` from the dump.
        refresh_document(txn, &key, document.last_modified)?;
    }
    Ok(true)
}

/// Removes a range of a series; the document's `@timeseries` follows when the series is gone.
pub(crate) fn delete_range(txn: &mut WriteTxn<'_>, id: &str, name: &str, from: i64, to: i64) -> Result<(), EngineError> {
    let key = id_key(id);
    let Some(document) = txn.document(&key)? else { return Ok(()) };
    if txn.delete_time_series_range(&key, name, from, to)? {
        refresh_document(txn, &key, document.last_modified)?;
    }
    Ok(())
}
