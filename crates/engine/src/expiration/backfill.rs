//! Queues the documents written before the expiration queue existed (storage format < 4: their `@expires` /
//! `@refresh` had no queue row, so they would never expire until written again). Runs once per database on
//! its expiration thread, in merged writes of `CHUNK` documents, resuming after the last etag it queued;
//! then marks the database so it never scans again. Queueing a document twice writes the same row, so an
//! interrupted backfill just runs again at the next open.

use corvid_storage::{Store, TransactionMerger};

use super::schedule::{on_document_put, EXPIRES, REFRESH};
use crate::EngineError;

/// Documents queued per merged write.
const CHUNK: usize = 1024;

/// Queues every document whose metadata names `@expires` or `@refresh`, unless done before. How many.
/// Stops between chunks when `stopping` says so (the database closes; the next opening starts over).
pub(crate) fn backfill(store: &Store, merger: &TransactionMerger, stopping: &dyn Fn() -> bool) -> Result<u64, EngineError> {
    if store.read()?.expiration_backfilled()? {
        return Ok(0);
    }
    let mut after = 0u64;
    let mut queued = 0u64;
    loop {
        let mut chunk: Vec<(String, String)> = Vec::new();
        let mut last = after;
        store.read()?.documents_after_etag(after, |doc| {
            last = doc.etag;
            if doc.client_metadata.contains(EXPIRES) || doc.client_metadata.contains(REFRESH) {
                chunk.push((doc.id, doc.client_metadata));
            }
            chunk.len() < CHUNK
        })?;
        let done = last == after || chunk.len() < CHUNK;
        queued += chunk.len() as u64;
        merger.write_blocking(move |txn| {
            for (id, metadata) in &chunk {
                on_document_put(txn, id, metadata)?;
            }
            if done {
                txn.mark_expiration_backfilled()?;
            }
            Ok::<_, EngineError>(())
        })?;
        if done || stopping() {
            return Ok(queued);
        }
        after = last;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use corvid_storage::{StorageError, Store, StoreOptions, TransactionMerger};

    use super::*;

    #[test]
    fn documents_written_without_queue_rows_are_queued_once() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(Store::open(dir.path(), &StoreOptions { map_size: 64 << 20, disk_reserve_bytes: 0, ..Default::default() }).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        // Written straight to storage, as a build before the queue did: no rows.
        merger
            .write_blocking(|txn| {
                for i in 0..2500 {
                    let metadata = match i % 3 {
                        0 => r#"{"@expires":"2030-01-01T00:00:00.0000000Z"}"#,
                        1 => r#"{"@refresh":"2030-01-01T00:00:00.0000000Z","@expires":"2031-01-01T00:00:00.0000000Z"}"#,
                        _ => "{}",
                    };
                    txn.put_document(&format!("users/{i}"), "Users", "{}".into(), metadata.into(), 0, 1)?;
                }
                Ok::<_, StorageError>(())
            })
            .unwrap();
        assert_eq!(store.read().unwrap().queued_timer_count().unwrap(), 0);
        let queued = backfill(&store, &merger, &|| false).unwrap();
        assert_eq!(queued, 834 + 833, "documents with either date");
        assert_eq!(store.read().unwrap().queued_timer_count().unwrap(), 834 + 2 * 833, "one row per date");
        assert!(store.read().unwrap().expiration_backfilled().unwrap());
        assert_eq!(backfill(&store, &merger, &|| false).unwrap(), 0, "marked: never scans again");
    }
}
