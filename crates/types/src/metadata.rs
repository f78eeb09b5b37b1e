//! Reserved `@metadata` keys. Server-owned keys are rewritten on every read; client keys are kept verbatim.

pub const METADATA: &str = "@metadata";
pub const ID: &str = "@id";
pub const COLLECTION: &str = "@collection";
pub const CHANGE_VECTOR: &str = "@change-vector";
pub const LAST_MODIFIED: &str = "@last-modified";
pub const FLAGS: &str = "@flags";
pub const PROJECTION: &str = "@projection";

/// Collection of documents whose metadata names none.
pub const EMPTY_COLLECTION: &str = "@empty";
/// Collection of HiLo state documents (`Raven/Hilo/<tag>`).
pub const HILO_COLLECTION: &str = "@hilo";

/// Keys the server computes; a client that sends them back (the Python client does) is ignored.
pub const SERVER_OWNED: &[&str] =
    &[ID, CHANGE_VECTOR, LAST_MODIFIED, FLAGS, PROJECTION, "@index-score", "@attachments", "@counters", "@timeseries"];

pub fn is_server_owned(key: &str) -> bool {
    SERVER_OWNED.contains(&key)
}
