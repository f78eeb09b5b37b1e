//! The revisions configuration in force: kept in the database's own storage, so every write sees exactly the
//! configuration committed before it (and a crash never separates the two). Parsed once per change and
//! cached per writer thread (each database has its own). The server sets and reads it through
//! `config_api.rs`.

use std::cell::RefCell;
use std::sync::Arc;

use corvid_storage::WriteTxn;

use super::config::RevisionsConfig;
use crate::EngineError;

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
