//! Invariants of the revision tables: every revision decodes under its own key (document and etag), has its
//! change-vector entry and its collection entry, and is in the bin exactly when it is a delete revision; no
//! lookup entry points to a missing revision; the retired `revision_counts` table is empty.

use corvid_types::id_key;

use super::{decode_failure, text, Checker};
use crate::record::{flags, DocumentRecord};
use crate::revisions::split_revision_key;
use crate::tables::{self, collection_etag_key, decode_etag, etag_key};
use crate::violation::Violation;
use crate::StorageError;

impl Checker<'_> {
    pub(super) fn revisions(&mut self) -> Result<(), StorageError> {
        let table = tables::REVISIONS;
        for entry in self.tables.revisions.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.revisions += 1;
            let Some((doc_key, etag)) = split_revision_key(key) else {
                self.unreadable(table, text(key), "key is not a document id, 0x1E and an 8-byte etag");
                continue;
            };
            let key_text = format!("{}#{etag}", text(doc_key));
            let revision = match DocumentRecord::decode(value) {
                Ok(revision) => revision,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            if id_key(&revision.id).as_bytes() != doc_key || revision.etag != etag {
                self.violation(Violation::KeyMismatch {
                    table,
                    key: key_text.clone(),
                    found: format!("{}#{}", revision.id, revision.etag),
                });
            }
            self.etag_at_most_last(table, &key_text, etag);
            if revision.flags & (flags::REVISION | flags::DELETE_REVISION) == 0 {
                self.unreadable(table, key_text.clone(), "flags name neither Revision nor DeleteRevision");
            }
            if self.tables.revisions_by_change_vector.get(self.txn, revision.change_vector.as_bytes())? != Some(key) {
                let table = tables::REVISIONS_BY_CHANGE_VECTOR;
                self.violation(Violation::MissingIndexEntry { table, key: key_text.clone(), etag });
            }
            let by_collection = collection_etag_key(&id_key(&revision.collection), etag);
            if self.tables.revisions_by_collection.get(self.txn, &by_collection)? != Some(key) {
                let table = tables::REVISIONS_BY_COLLECTION;
                self.violation(Violation::MissingIndexEntry { table, key: key_text.clone(), etag });
            }
            let in_bin = self.tables.revisions_bin.get(self.txn, &etag_key(etag))? == Some(key);
            if in_bin != (revision.flags & flags::DELETE_REVISION != 0) {
                let table = tables::REVISIONS_BIN;
                self.violation(Violation::MissingIndexEntry { table, key: key_text, etag });
            }
        }
        self.revision_lookups()?;
        self.retired_revision_counts()
    }

    /// Entries of `revisions_by_change_vector` and `revisions_bin` point to revision rows.
    fn revision_lookups(&mut self) -> Result<(), StorageError> {
        let lookups = [
            (tables::REVISIONS_BY_CHANGE_VECTOR, self.tables.revisions_by_change_vector),
            (tables::REVISIONS_BIN, self.tables.revisions_bin),
            (tables::REVISIONS_BY_COLLECTION, self.tables.revisions_by_collection),
        ];
        for (table, handle) in lookups {
            for entry in handle.iter(self.txn)? {
                let (key, target) = entry?;
                if self.tables.revisions.get(self.txn, target)?.is_none() {
                    let key = if table == tables::REVISIONS_BIN {
                        decode_etag(key).map_or_else(|| text(key), |e| e.to_string())
                    } else if table == tables::REVISIONS_BY_COLLECTION {
                        tables::split_collection_etag_key(key).map_or_else(|| text(key), |(c, e)| format!("{}#{e}", text(c)))
                    } else {
                        text(key)
                    };
                    self.violation(Violation::Dangling { table, key, target: text(target) });
                }
            }
        }
        Ok(())
    }

    /// `revision_counts` is emptied at open since format 6 and never written again.
    fn retired_revision_counts(&mut self) -> Result<(), StorageError> {
        for entry in self.tables.revision_counts.iter(self.txn)? {
            let (key, value) = entry?;
            let stored = decode_etag(value).unwrap_or(0);
            self.violation(Violation::RetiredRevisionCount { key: text(key), stored });
        }
        Ok(())
    }
}
