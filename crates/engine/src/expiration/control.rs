//! What the server calls: set and read the two configurations (kept in the database's own storage, which the
//! thread reads, as the revisions configuration is), and the thread's stats.

use super::config::SweepConfig;
use super::stats::ExpirationStatsSnapshot;
use crate::{Database, EngineError};

impl Database {
    /// Makes `config` the expiration (or, with `refresh`, refresh) configuration; the thread picks it up within
    /// a second and runs its first pass one frequency later. Waits until it is durable.
    pub fn set_expiration_config(&self, refresh: bool, config: &SweepConfig) -> Result<(), EngineError> {
        let bytes = config.to_json(refresh).to_string().into_bytes();
        self.write_blocking(move |txn| Ok(txn.set_expiration_config(refresh, &bytes)?))
    }

    /// The expiration (or refresh) configuration in force; None when never configured.
    pub fn expiration_config(&self, refresh: bool) -> Result<Option<SweepConfig>, EngineError> {
        let Some(bytes) = self.store.read()?.expiration_config(refresh)? else { return Ok(None) };
        Ok(Some(SweepConfig::decode(&bytes, refresh)?))
    }

    /// What the expiration thread has done since the database opened.
    pub fn expiration_stats(&self) -> ExpirationStatsSnapshot {
        self.expiration.stats()
    }
}
