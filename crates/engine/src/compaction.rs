//! Compaction of a closed database's data file, for the server's compact operation.

use std::path::Path;
use std::time::Duration;

use crate::EngineError;

pub use corvid_storage::Compaction;

/// Compacts the data file of the closed database stored at `path` (LMDB's compacting copy). While a handle of
/// the database is still open, this waits up to `wait` for it to go.
pub fn compact_closed_database(path: &Path, wait: Duration) -> Result<Compaction, EngineError> {
    Ok(corvid_storage::compact_closed_store(path, wait)?)
}
