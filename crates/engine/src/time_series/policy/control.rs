//! What the server calls: hand the runner the record's configuration (at opening and at every change; the
//! record in the catalog is the one copy) and read what it did.

use std::sync::Arc;

use super::config::TimeSeriesPolicies;
use super::runner::PolicyRunnerStats;
use crate::Database;

impl Database {
    /// Runs these rollup and retention policies from now on (None: none). The first pass runs one check
    /// frequency later.
    pub fn set_time_series_policies(&self, policies: Option<TimeSeriesPolicies>) {
        self.policy_runner.configure(policies);
    }

    /// The policies in force.
    pub fn time_series_policies(&self) -> Option<Arc<TimeSeriesPolicies>> {
        self.policy_runner.config()
    }

    /// What the policy runner has done since the database opened.
    pub fn time_series_policy_stats(&self) -> PolicyRunnerStats {
        self.policy_runner.stats()
    }
}
