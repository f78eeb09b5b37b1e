//! Vocabulary shared by every Corvid layer: document ids, etags, change vectors, metadata key names and the
//! date format the RavenDB clients parse. No I/O here.

mod change_vector;
mod dates;
mod ids;
pub mod io_metrics;
pub mod json;
mod json_string;
pub mod metadata;
mod names;
mod time_span;

pub use change_vector::{format_change_vector, new_database_id, new_guid, NODE_TAG};
pub use dates::{format_date, format_date_ms, now_nanos, parse_date_ms, MAX_DATE_MS, MIN_DATE_MS};
pub use ids::{id_key, validate_id, IdError, MAX_ID_BYTES};
pub use json_string::push_json_string;
pub use names::{validate_name, NameError, NameKind, MAX_NAME_BYTES};
pub use time_span::parse_time_span;

/// Per-database, strictly increasing sequence number of every document write and delete.
pub type Etag = u64;
