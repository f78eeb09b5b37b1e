//! Backups and restore (issue 22): snapshot backups taken while writes go on, periodic schedules and
//! retention, and restore of a snapshot into a new database. The dump-format `Backup` type goes through
//! [`BackupWriter`] and is wired to the smuggler separately.

mod cron;
mod error;
mod manifest;
mod restore;
mod retention;
mod snapshot;
mod summary;
mod writer;

pub use cron::CronSchedule;
pub use error::BackupError;
pub use manifest::{SnapshotManifest, MANIFEST_FILE};
pub use restore::{locate_snapshot, restore_snapshot};
pub use retention::{parse_time_span, prune};
pub use snapshot::snapshot_folder_name;
pub use summary::{BackupKind, BackupRequest, BackupSummary};
pub use writer::{writer_for, BackupWriter, DumpWriter, SnapshotWriter};
