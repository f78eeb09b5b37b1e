//! Starting and stopping an index's indexing trace (`indexing::trace`), and the digest of its entries that a
//! replay of the trace must reproduce.

use std::path::Path;

use crate::indexing::TraceSummary;
use crate::{Database, EngineError};

impl Database {
    /// Starts recording what the named index's worker consumes to `path`. Blocking (creates the file).
    pub fn start_index_trace(&self, name: &str, path: &Path) -> Result<(), EngineError> {
        let handle = self.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.to_owned()))?;
        handle.trace.start(&handle.name(), &handle.definition, path)?;
        Ok(())
    }

    /// Stops the named index's trace; the file is complete and synced. Blocking.
    pub fn stop_index_trace(&self, name: &str) -> Result<TraceSummary, EngineError> {
        let handle = self.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.to_owned()))?;
        Ok(handle.trace.stop(&handle.name())?)
    }

    /// The digest of the named index's committed entries (`IndexBackend::entries_digest`). Blocking: reads
    /// every term of the index.
    pub fn index_digest(&self, name: &str) -> Result<String, EngineError> {
        let handle = self.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.to_owned()))?;
        handle.index.entries_digest()
    }
}
