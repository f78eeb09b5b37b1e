//! Document expiration and refresh (`@expires`, `@refresh`) and the expiration of compare-exchange values:
//! the database record's configurations (`config`), the queue rows every write of such metadata adds
//! (`schedule`), the passes that act on the due rows in merged batches (`sweep`), and the background thread
//! that runs them at the configured frequencies and reports what it did (`sweeper`, `stats`).

mod backfill;
mod config;
mod control;
pub(crate) mod schedule;
mod stats;
mod sweep;
mod sweeper;

pub use config::SweepConfig;
pub use stats::{ExpirationStatsSnapshot, TaskStats};
pub(crate) use sweeper::ExpirationSweeper;
