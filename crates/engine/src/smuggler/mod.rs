//! Export and import in RavenDB's `.ravendbdump` format (the clients' `DatabaseSmuggler`, Studio's
//! export/import, and the backups built on them). Both are plain blocking functions over a writer or a
//! reader, so the HTTP handlers, the command line and backups share them:
//! [`export`] writes one storage snapshot as a dump; [`import`] reads a dump into a database.
//! See `docs/decisions/0038-smuggler-dump-format.md`.

pub mod format;
mod item_types;
mod options;
mod reader;
mod record_config;
mod smuggler_result;
mod transform;
mod writer;

pub use format::compression::{open_dump, Compression, DumpSink};
pub use item_types::{ItemType, ItemTypes};
pub use options::{ExportOptions, ImportOptions};
pub use reader::import;
pub use record_config::RecordTypes;
pub use smuggler_result::{Counts, SmugglerResult};
pub use transform::{TransformScript, DEFAULT_MAX_STEPS};
pub use writer::{export, Progress};
