//! Section names of a dump, as RavenDB writes them, and the reserved keys of its items.

/// The build number Corvid writes: a 7.x reader's layout (`BuildVersion` 70000-79999 is V7).
pub const BUILD_VERSION: u64 = 70_000;

pub const BUILD_VERSION_KEY: &str = "BuildVersion";
pub const DATABASE_RECORD: &str = "DatabaseRecord";
pub const DOCS: &str = "Docs";
pub const REVISION_DOCUMENTS: &str = "RevisionDocuments";
pub const TOMBSTONES: &str = "Tombstones";
pub const CONFLICTS: &str = "Conflicts";
pub const INDEXES: &str = "Indexes";
pub const IDENTITIES: &str = "Identities";
pub const COMPARE_EXCHANGE: &str = "CompareExchange";
pub const COUNTER_GROUPS: &str = "CounterGroups";
pub const SUBSCRIPTIONS: &str = "Subscriptions";
pub const TIME_SERIES: &str = "TimeSeries";
pub const TIME_SERIES_DELETED_RANGES: &str = "TimeSeriesDeletedRanges";

/// A property of Corvid's `DatabaseRecord`: the sections written whole (see `ImportOptions::replay`).
pub const COMPLETE_SECTIONS: &str = "CorvidCompleteSections";

/// `@metadata.@export-type` of an attachment header item, whose content follows it raw.
pub const EXPORT_TYPE: &str = "@export-type";
/// The value of [`EXPORT_TYPE`] for attachments.
pub const ATTACHMENT_EXPORT_TYPE: &str = "Attachment";
/// The size of a blob following an item outside the JSON (time-series segments, unknown sections).
pub const BLOB_SIZE: &str = "@raven-blob-size";

/// A section of a dump as a reader meets it; aliases and case are folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    BuildVersion,
    DatabaseRecord,
    Docs,
    RevisionDocuments,
    Tombstones,
    Conflicts,
    Indexes,
    Identities,
    CompareExchange,
    CompareExchangeTombstones,
    CounterGroups,
    /// The one-counter-per-item section of 4.x dumps.
    LegacyCounters,
    Subscriptions,
    TimeSeries,
    TimeSeriesDeletedRanges,
    Unknown,
}

impl Section {
    /// The section a property name of the dump's object names.
    pub fn of(name: &str) -> Section {
        let is = |s: &str| name.eq_ignore_ascii_case(s);
        if is(BUILD_VERSION_KEY) {
            Section::BuildVersion
        } else if is(DATABASE_RECORD) {
            Section::DatabaseRecord
        } else if is(DOCS) || is("Results") {
            Section::Docs
        } else if is(REVISION_DOCUMENTS) {
            Section::RevisionDocuments
        } else if is(TOMBSTONES) {
            Section::Tombstones
        } else if is(CONFLICTS) {
            Section::Conflicts
        } else if is(INDEXES) {
            Section::Indexes
        } else if is(IDENTITIES) {
            Section::Identities
        } else if is(COMPARE_EXCHANGE) || is("CmpXchg") {
            Section::CompareExchange
        } else if is("CompareExchangeTombstones") {
            Section::CompareExchangeTombstones
        } else if is(COUNTER_GROUPS) {
            Section::CounterGroups
        } else if is("Counters") {
            Section::LegacyCounters
        } else if is(SUBSCRIPTIONS) {
            Section::Subscriptions
        } else if is(TIME_SERIES) {
            Section::TimeSeries
        } else if is(TIME_SERIES_DELETED_RANGES) {
            Section::TimeSeriesDeletedRanges
        } else {
            Section::Unknown
        }
    }
}
