//! What a check of the storage layout reports: each broken invariant of docs/storage-format.md as a value,
//! naming the table and key where it was found.

use std::path::PathBuf;

/// One broken invariant of a database's storage layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A table of the layout is not in the environment.
    #[error("table `{table}` is missing")]
    MissingTable {
        /// The table's name.
        table: &'static str,
    },
    /// `meta/format_version` is missing or not the version this build writes.
    #[error("meta/format_version is {found}; this build writes version {expected}")]
    FormatVersion {
        /// What the table holds (`missing`, or the number).
        found: String,
        /// The version this build writes.
        expected: u32,
    },
    /// `meta/database_id` is missing or not 22 characters of base64.
    #[error("meta/database_id is {found}; it must be 22 characters of base64")]
    DatabaseId {
        /// What the table holds (`missing`, or the text).
        found: String,
    },
    /// A key or value that does not decode as its table's layout.
    #[error("`{table}` entry {key} cannot be read: {reason}")]
    Unreadable {
        /// The table.
        table: &'static str,
        /// The entry's key, as text.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A record stored under a key other than the one its own id or name gives.
    #[error("`{table}` entry {key} holds the record of {found}")]
    KeyMismatch {
        /// The table.
        table: &'static str,
        /// The entry's key.
        key: String,
        /// The id or name the record holds.
        found: String,
    },
    /// A document without its entry in one of the indexes of documents (`docs_by_etag`, `collection_etags`).
    #[error("document {key} (etag {etag}) has no `{table}` entry")]
    MissingIndexEntry {
        /// The index table.
        table: &'static str,
        /// The document's key.
        key: String,
        /// The document's etag.
        etag: u64,
    },
    /// An entry pointing to a document that does not exist.
    #[error("`{table}` entry {key} points to document {target}, which does not exist")]
    Dangling {
        /// The table of the entry.
        table: &'static str,
        /// The entry's key.
        key: String,
        /// The document key it points to.
        target: String,
    },
    /// An index entry pointing to a document that has another etag or collection than its key says.
    #[error("`{table}` entry {key} points to document {target}, whose etag is {etag} and collection {collection}")]
    StaleEntry {
        /// The index table.
        table: &'static str,
        /// The entry's key.
        key: String,
        /// The document key it points to.
        target: String,
        /// The document's etag.
        etag: u64,
        /// The document's collection.
        collection: String,
    },
    /// An etag above `meta/last_etag`, the highest one ever handed out.
    #[error("`{table}` entry {key} has etag {etag}, above meta/last_etag {last_etag}")]
    EtagAboveLast {
        /// The table.
        table: &'static str,
        /// The entry's key.
        key: String,
        /// Its etag.
        etag: u64,
        /// `meta/last_etag`.
        last_etag: u64,
    },
    /// One etag given to both a live document and a tombstone.
    #[error("etag {etag} belongs to both a document and a tombstone")]
    EtagShared {
        /// The etag.
        etag: u64,
    },
    /// A tombstone of a document that exists with an older etag (a delete is always the newer write).
    #[error("tombstone {etag} of {key} is newer than the live document's etag {document_etag}")]
    TombstoneAfterDocument {
        /// The document key.
        key: String,
        /// The tombstone's etag.
        etag: u64,
        /// The live document's etag.
        document_etag: u64,
    },
    /// A change vector that is not `A:<etag>-<database id>` for its own etag.
    #[error("`{table}` entry {key} has change vector {found}, expected {expected}")]
    ChangeVector {
        /// The table.
        table: &'static str,
        /// The entry's key.
        key: String,
        /// The stored change vector.
        found: String,
        /// The one its etag gives.
        expected: String,
    },
    /// `attachment_refs[hash]` differs from the number of attachment rows with that hash (or is 0).
    #[error("attachment_refs[{hash}] is {stored}, but {counted} attachment rows have that hash")]
    ReferenceCount {
        /// The content hash.
        hash: String,
        /// The stored count (0 when absent).
        stored: u64,
        /// Attachment rows with that hash.
        counted: u64,
    },
    /// A referenced attachment content without its file.
    #[error("the content of attachment hash {hash} is missing ({})", path.display())]
    MissingContent {
        /// The content hash.
        hash: String,
        /// Where its file should be.
        path: PathBuf,
    },
    /// A document whose `HasAttachments` / `HasCounters` flag disagrees with its rows.
    #[error("document {key}: flag {flag} is {}, but it has {rows} `{table}` rows", if *set { "set" } else { "not set" })]
    Flag {
        /// The document key.
        key: String,
        /// The flag's name.
        flag: &'static str,
        /// Whether the flag is set.
        set: bool,
        /// The table of the rows.
        table: &'static str,
        /// The document's rows in that table.
        rows: usize,
    },
    /// A series whose stats row disagrees with its segments (count, first or last timestamp), or one of the two
    /// without the other.
    #[error("time series {key}: stats row says {stored}, its segments hold {counted}")]
    SeriesStats {
        /// Document key, `#`, lower-cased series name.
        key: String,
        /// What the stats row says (`count start..end`, or `missing`).
        stored: String,
        /// What the segments hold (`count start..end`, or `nothing`).
        counted: String,
    },
    /// A segment whose entries are not in strictly increasing timestamp order from its key's start.
    #[error("time-series segment {key}: {reason}")]
    SegmentOrder {
        /// Series key and segment start.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A document whose `@attachments` / `@counters` metadata disagrees with its rows.
    #[error("document {key}: its {field} metadata does not list its `{table}` rows")]
    ServerMetadata {
        /// The document key.
        key: String,
        /// `@attachments` or `@counters`.
        field: &'static str,
        /// The table of the rows.
        table: &'static str,
    },
    /// An entry in `revision_counts`, which is emptied at open since format 6 and never written.
    #[error("revision_counts[{key}] = {stored} exists, but that table is retired (format 6) and must be empty")]
    RetiredRevisionCount {
        /// The document key.
        key: String,
        /// The stored count.
        stored: u64,
    },
}

/// What a check of one database's storage found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvariantReport {
    /// Documents looked at.
    pub documents: u64,
    /// Tombstones looked at.
    pub tombstones: u64,
    /// Attachment rows looked at.
    pub attachments: u64,
    /// Counter rows looked at.
    pub counters: u64,
    /// Revision rows looked at.
    pub revisions: u64,
    /// Time-series segments looked at.
    pub time_series_segments: u64,
    /// Every broken invariant, in the order found; empty when the layout is sound.
    pub violations: Vec<Violation>,
}

impl InvariantReport {
    /// Whether every invariant holds.
    pub fn is_sound(&self) -> bool {
        self.violations.is_empty()
    }
}
