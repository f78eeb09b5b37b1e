//! Time-series rollup and retention policies (RavenDB's `TimeSeriesConfiguration.Collections` and its
//! `TimeSeriesPolicyRunner`): the configuration and its checks (`config`, `time_value`), the aggregation of
//! windows (`rollup`), one pass of rollups and retention (`pass`) and the thread that runs it (`runner`).

mod config;
mod control;
mod pass;
mod rollup;
mod runner;
mod time_value;

pub use config::{
    collection_json, parse_configuration, parse_policy, policies_of, CollectionPolicies, RollupPolicy, TimeSeriesPolicies,
    DEFAULT_CHECK_FREQUENCY, RAW_POLICY_NAME,
};
pub use rollup::{roll_up, RollupError};
pub use runner::PolicyRunnerStats;
pub use time_value::TimeValue;

pub(crate) use runner::PolicyRunner;
