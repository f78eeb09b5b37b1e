//! What the operations of a database report when they complete: the counts and per-document details of a
//! patch or delete by query, the summary of a bulk insert. The server renders them as RavenDB's JSON.

use crate::patch_status::PatchStatus;

/// The result of a completed operation of a database.
#[derive(Debug, Clone, PartialEq)]
pub enum OperationResult {
    /// A patch or delete by query.
    ByQuery(ByQueryResult),
    /// A bulk insert.
    BulkInsert(BulkInsertSummary),
    /// A revert of documents to a point in time.
    Revert(RevertSummary),
    /// An export or import (`smuggler`).
    Smuggler(Box<crate::smuggler::SmugglerResult>),
    /// A one-time backup.
    Backup(crate::backup::BackupSummary),
}

/// What a patch or delete by query changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ByQueryResult {
    /// The query text.
    pub query: String,
    /// Documents patched (also those a script left unchanged) or deleted.
    pub changed: u64,
    /// One entry per document (only when the client asked for details).
    pub details: Vec<ByQueryDetail>,
}

/// What happened to one document of a patch or delete by query.
#[derive(Debug, Clone, PartialEq)]
pub enum ByQueryDetail {
    /// The patch's outcome for the document (as stored: its id and new change vector).
    Patched {
        /// The id as stored.
        id: String,
        /// Its change vector after the patch (`None` when it was not written).
        change_vector: Option<String>,
        /// What the patch did.
        status: PatchStatus,
    },
    /// The document was deleted (the id as the query matched it).
    Deleted {
        /// The id as the query matched it.
        id: String,
    },
}

/// What a bulk insert wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BulkInsertSummary {
    /// Documents written.
    pub documents: u64,
    /// Documents not rewritten because they equal the stored ones.
    pub skipped_unchanged: u64,
    /// Counter operations applied.
    pub counters: u64,
    /// Attachments stored.
    pub attachments: u64,
    /// Time-series entries appended.
    pub time_series: u64,
    /// Bytes of the stream read.
    pub bytes: u64,
    /// Transactions the writes were committed in.
    pub batches: u64,
}

/// What a revert to a point in time did (RavenDB's `RevertResult`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevertSummary {
    /// Revisions of the documents changed since the time.
    pub scanned_revisions: u64,
    /// Documents changed since the time.
    pub scanned_documents: u64,
    /// Documents restored (or deleted, when they did not exist at the time).
    pub reverted_documents: u64,
}
