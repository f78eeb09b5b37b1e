//! The revisions configuration in force: kept in the database's own storage, so every write sees exactly the
//! configuration committed before it (and a crash never separates the two). Parsed once per change and
//! cached per writer thread (each database has its own).

use std::cell::RefCell;
use std::sync::Arc;

use corvid_storage::WriteTxn;

use super::config::RevisionsConfig;
use crate::{Database, EngineError};

thread_local! {
    /// The stored bytes last parsed on this thread, with what they parsed to.
    static PARSED: RefCell<Option<(Vec<u8>, Arc<RevisionsConfig>)>> = const { RefCell::new(None) };
}

/// The configuration the write `txn` runs under; None when revisions are not configured.
pub(crate) fn in_force(txn: &WriteTxn<'_>) -> Result<Option<Arc<RevisionsConfig>>, EngineError> {
    let Some(bytes) = txn.revisions_config()? else { return Ok(None) };
    if let Some(hit) = PARSED.with(|p| p.borrow().as_ref().filter(|(b, _)| *b == bytes).map(|(_, c)| c.clone())) {
        return Ok(Some(hit));
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EngineError::Internal(format!("the stored revisions configuration is not JSON: {e}")))?;
    let config = Arc::new(RevisionsConfig::from_json(&value)?);
    PARSED.with(|p| *p.borrow_mut() = Some((bytes, config.clone())));
    Ok(Some(config))
}

impl Database {
    /// Makes `config` the revisions configuration of the writes queued after it (None or an empty one: no
    /// revisions are written, existing ones stay). Waits until it is durable.
    pub fn set_revisions_config(&self, config: Option<RevisionsConfig>) -> Result<(), EngineError> {
        let bytes = config.filter(|c| !c.is_empty()).map(|c| c.to_json().to_string().into_bytes());
        self.write_blocking(move |txn| Ok(txn.set_revisions_config(bytes.as_deref())?))
    }

    /// The revisions configuration in force (None when not configured).
    pub fn revisions_config(&self) -> Result<Option<RevisionsConfig>, EngineError> {
        let Some(bytes) = self.store.read()?.revisions_config()? else { return Ok(None) };
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| EngineError::Internal(format!("the stored revisions configuration is not JSON: {e}")))?;
        Ok(Some(RevisionsConfig::from_json(&value)?))
    }

    /// Whether writes to `collection` keep revisions (what a revisions subscription needs).
    pub fn revisions_enabled_for(&self, collection: &str) -> Result<bool, EngineError> {
        Ok(self.revisions_config()?.is_some_and(|config| config.for_collection(collection).is_some_and(|c| !c.disabled)))
    }
}
