//! Indexing performance as `/indexes/performance` shows it: each index's last batches.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::indexing::BatchPerformance;
use crate::{Database, EngineError};

/// The kept batches of one index.
#[derive(Debug, Clone)]
pub struct IndexPerformance {
    /// The index's name.
    pub name: String,
    /// The etag it has indexed up to.
    pub etag: u64,
    /// Its batches with an id above the one asked for, oldest first.
    pub batches: Vec<Arc<BatchPerformance>>,
}

impl Database {
    /// The kept batches of the named indexes (every index when `names` is empty) newer than `after(name)`
    /// (the live feed asks for what it has not sent yet).
    pub fn index_performance(&self, names: &[String], after: &dyn Fn(&str) -> u64) -> Result<Vec<IndexPerformance>, EngineError> {
        let handles = if names.is_empty() {
            self.indexes.all()
        } else {
            names.iter().map(|n| self.indexes.get(n).ok_or_else(|| EngineError::IndexDoesNotExist(n.clone()))).collect::<Result<_, _>>()?
        };
        Ok(handles
            .iter()
            .map(|handle| {
                let name = handle.name();
                let batches = handle.performance.since(after(&name));
                IndexPerformance { etag: handle.processed_etag.load(Ordering::Relaxed), batches, name }
            })
            .collect())
    }
}
