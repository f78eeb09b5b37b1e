//! Replaying a backup chain's complete sections: after a section the dump's record marks complete, what the
//! database holds beyond it was deleted before the backup, and goes (compare-exchange values, counters).

use std::collections::HashSet;

use corvid_storage::flags;
use corvid_types::id_key;

use super::batch_writer::{BatchWriter, ImportItem};
use crate::smuggler::smuggler_result::SmugglerResult;
use crate::{Database, EngineError};

/// Compare-exchange keys are read in pages of this many.
const PAGE: usize = 1024;

/// The keys a complete section held (lower-cased); nothing is kept when the section is not replayed.
pub(crate) struct KeySet {
    keys: Option<HashSet<String>>,
}

impl KeySet {
    /// A set that keeps keys only when `enabled`.
    pub fn new(enabled: bool) -> KeySet {
        KeySet { keys: enabled.then(HashSet::new) }
    }

    pub fn insert(&mut self, key: &str) {
        if let Some(keys) = &mut self.keys {
            keys.insert(id_key(key));
        }
    }
}

/// Deletes the compare-exchange values the complete section did not hold.
pub(crate) fn delete_other_compare_exchange(
    db: &Database,
    writer: &mut BatchWriter<'_>,
    seen: &KeySet,
    result: &mut SmugglerResult,
) -> Result<(), EngineError> {
    let Some(keys) = &seen.keys else { return Ok(()) };
    writer.flush(result)?;
    let mut gone = Vec::new();
    {
        let txn = db.store.read()?;
        let mut start = 0;
        loop {
            let page = txn.compare_exchange_with_prefix("", start, PAGE)?;
            gone.extend(page.iter().filter(|r| !keys.contains(&id_key(&r.key))).map(|r| r.key.clone()));
            if page.len() < PAGE {
                break;
            }
            start += page.len();
        }
    }
    if !gone.is_empty() {
        result.note(format!("{} compare exchange values deleted since the previous backup were removed", gone.len()));
    }
    for key in gone {
        writer.push(ImportItem::DeleteCompareExchange { key }, 64, result)?;
    }
    writer.flush(result)
}

/// Deletes the counters of documents the complete section did not name (all their counters were deleted).
pub(crate) fn delete_other_counters(
    db: &Database,
    writer: &mut BatchWriter<'_>,
    seen: &KeySet,
    result: &mut SmugglerResult,
) -> Result<(), EngineError> {
    let Some(keys) = &seen.keys else { return Ok(()) };
    writer.flush(result)?;
    let mut gone = Vec::new();
    db.store.read()?.documents_after_etag(0, |doc| {
        if doc.flags & flags::HAS_COUNTERS != 0 && !keys.contains(&id_key(&doc.id)) {
            gone.push(doc.id);
        }
        true
    })?;
    for id in gone {
        writer.push(ImportItem::Counters { id, counters: Vec::new(), exact: true }, 64, result)?;
    }
    writer.flush(result)
}
