//! Backups and restore (issue 22): snapshot backups taken while writes go on, dump-format (`Backup`) full
//! and incremental backups written by the smuggler, periodic schedules and retention, and restore of a
//! snapshot or of a chain of dump backups into a new database.

mod cron;
mod dump_backup;
mod dump_chain;
mod error;
mod import_dir;
mod manifest;
mod restore;
mod retention;
mod snapshot;
mod summary;
mod writer;

pub use cron::CronSchedule;
pub use dump_backup::{dump_folder_name, FULL_BACKUP_EXTENSION, INCREMENTAL_BACKUP_EXTENSION};
pub use dump_chain::{locate_dump_chain, replay_dump_chain};
pub use error::BackupError;
pub use import_dir::{files_to_import, import_directory};
pub use manifest::{SnapshotManifest, MANIFEST_FILE};
pub use restore::{locate_snapshot, restore_snapshot};
pub use retention::{parse_time_span, prune, prune_dump_folders};
pub use snapshot::snapshot_folder_name;
pub use summary::{BackupKind, BackupPoint, BackupRequest, BackupSummary};
pub use writer::{writer_for, BackupWriter, DumpWriter, SnapshotWriter};
