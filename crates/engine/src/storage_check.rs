//! Checks of a database's storage layout against the invariants of docs/storage-format.md: on an open
//! database, or offline on a closed one (`corvid check`).

use std::path::Path;

use crate::{Database, EngineError};

pub use corvid_storage::{InvariantReport, Violation};

impl Database {
    /// Checks a snapshot of this database's storage, attachment content files included.
    pub fn check_storage(&self) -> Result<InvariantReport, EngineError> {
        Ok(self.store.check_invariants()?)
    }
}

/// Checks the closed database stored at `path` without writing to it; None when it was never opened (no
/// data file yet).
pub fn check_closed_database(path: &Path) -> Result<Option<InvariantReport>, EngineError> {
    Ok(corvid_storage::check_closed_store(path)?)
}
