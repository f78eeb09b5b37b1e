//! What an export or import moved, per item type: RavenDB's `SmugglerResult` (the server renders it); the
//! same counts are the operation's progress while it runs.

use std::fmt::Write as _;

/// The counts of one item type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// The section was met (export: written).
    pub processed: bool,
    /// Items read (export: written).
    pub read: u64,
    /// Items left out on purpose (another collection, an option, a type Corvid does not keep).
    pub skipped: u64,
    /// Items that could not be imported (the messages say why).
    pub errored: u64,
    /// Attachments moved with the documents or revisions.
    pub attachments: u64,
}

/// Per item type counts, the bytes of the (decompressed) dump and what happened worth saying.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmugglerResult {
    #[allow(missing_docs)]
    pub database_record: Counts,
    #[allow(missing_docs)]
    pub documents: Counts,
    #[allow(missing_docs)]
    pub revision_documents: Counts,
    #[allow(missing_docs)]
    pub tombstones: Counts,
    #[allow(missing_docs)]
    pub conflicts: Counts,
    #[allow(missing_docs)]
    pub identities: Counts,
    #[allow(missing_docs)]
    pub indexes: Counts,
    #[allow(missing_docs)]
    pub compare_exchange: Counts,
    #[allow(missing_docs)]
    pub subscriptions: Counts,
    #[allow(missing_docs)]
    pub counters: Counts,
    #[allow(missing_docs)]
    pub time_series: Counts,
    /// Bytes of JSON and attachment content written or read.
    pub bytes: u64,
    /// Export: the database's last etag in the snapshot written (where the next incremental backup starts).
    pub last_etag: u64,
    /// Export: the last compare-exchange index in the snapshot written (RavenDB's `LastRaftIndex`).
    pub last_raft_index: u64,
    /// Notes on what was skipped or failed and why, in order.
    pub messages: Vec<String>,
    /// Import: the parts of the dump's `DatabaseRecord` applied (`Revisions`, `Expiration`, `Refresh`,
    /// `TimeSeries`), as the record shows them, for the caller's catalog to keep; the engine applied its own.
    pub record_config: serde_json::Map<String, serde_json::Value>,
}

/// At most this many messages are kept (a dump of a million bad items says so in its counts).
const MAX_MESSAGES: usize = 100;

impl SmugglerResult {
    /// Keeps a note (the first [`MAX_MESSAGES`]).
    pub(crate) fn note(&mut self, message: impl Into<String>) {
        if self.messages.len() < MAX_MESSAGES {
            self.messages.push(message.into());
        }
    }

    /// Adds the counts of `other`, the result of the file `name` of a folder imported, to these; its notes
    /// are kept with the file's name.
    pub fn absorb(&mut self, name: &str, other: SmugglerResult) {
        let add = |into: &mut Counts, from: &Counts| {
            into.processed |= from.processed;
            into.read += from.read;
            into.skipped += from.skipped;
            into.errored += from.errored;
            into.attachments += from.attachments;
        };
        add(&mut self.database_record, &other.database_record);
        add(&mut self.documents, &other.documents);
        add(&mut self.revision_documents, &other.revision_documents);
        add(&mut self.tombstones, &other.tombstones);
        add(&mut self.conflicts, &other.conflicts);
        add(&mut self.identities, &other.identities);
        add(&mut self.indexes, &other.indexes);
        add(&mut self.compare_exchange, &other.compare_exchange);
        add(&mut self.subscriptions, &other.subscriptions);
        add(&mut self.counters, &other.counters);
        add(&mut self.time_series, &other.time_series);
        self.bytes += other.bytes;
        for message in other.messages {
            self.note(format!("{name}: {message}"));
        }
        self.record_config.extend(other.record_config);
    }

    /// Items moved of every type, for progress.
    pub fn total_items(&self) -> u64 {
        self.sections().iter().map(|(_, c)| c.read + c.attachments).sum()
    }

    /// Every type's counts with RavenDB's name of it.
    pub fn sections(&self) -> [(&'static str, &Counts); 11] {
        [
            ("DatabaseRecord", &self.database_record),
            ("Documents", &self.documents),
            ("RevisionDocuments", &self.revision_documents),
            ("Tombstones", &self.tombstones),
            ("Conflicts", &self.conflicts),
            ("Identities", &self.identities),
            ("Indexes", &self.indexes),
            ("CompareExchange", &self.compare_exchange),
            ("Subscriptions", &self.subscriptions),
            ("Counters", &self.counters),
            ("TimeSeries", &self.time_series),
        ]
    }

    /// "documents 10 (3 attachments), counters 4, ..." for logs and error messages.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (name, counts) in self.sections() {
            if !counts.processed && counts.read == 0 && counts.skipped == 0 && counts.errored == 0 {
                continue;
            }
            if !out.is_empty() {
                out.push_str(", ");
            }
            let _ = write!(out, "{name} {}", counts.read);
            if counts.attachments > 0 {
                let _ = write!(out, " (+{} attachments)", counts.attachments);
            }
            if counts.skipped > 0 {
                let _ = write!(out, " ({} skipped)", counts.skipped);
            }
            if counts.errored > 0 {
                let _ = write!(out, " ({} errored)", counts.errored);
            }
        }
        if out.is_empty() {
            out.push_str("nothing");
        }
        out
    }
}
