//! What the server calls to set and read the revisions configuration in force (kept apart from `active.rs`,
//! which every write reaches, so the write path never depends on `Database`).

use super::config::RevisionsConfig;
use crate::{Database, EngineError};

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
