//! One notification of the Changes API, before the server renders it as RavenDB's JSON.

/// What happened to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentChangeKind {
    /// Created or replaced.
    Put,
    /// Deleted (a tombstone was written).
    Delete,
}

impl DocumentChangeKind {
    /// RavenDB's `DocumentChangeTypes` name.
    pub fn name(self) -> &'static str {
        match self {
            DocumentChangeKind::Put => "Put",
            DocumentChangeKind::Delete => "Delete",
        }
    }
}

/// What happened to an index (RavenDB's `IndexChangeTypes`, the ones Corvid raises).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexChangeKind {
    /// An indexing batch was committed.
    BatchCompleted,
    /// The index was created.
    IndexAdded,
    /// The index was deleted.
    IndexRemoved,
    /// Indexing was paused.
    IndexPaused,
    /// The index was disabled.
    IndexDemotedToDisabled,
    /// Its lock mode was set.
    LockModeChanged,
    /// Its priority was set.
    PriorityChanged,
    /// It failed too often and stopped indexing until it is reset, enabled or redefined.
    IndexMarkedAsErrored,
    /// A side-by-side replacement caught up and took the index's place.
    SideBySideReplace,
}

impl IndexChangeKind {
    /// RavenDB's `IndexChangeTypes` name.
    pub fn name(self) -> &'static str {
        match self {
            IndexChangeKind::BatchCompleted => "BatchCompleted",
            IndexChangeKind::IndexAdded => "IndexAdded",
            IndexChangeKind::IndexRemoved => "IndexRemoved",
            IndexChangeKind::IndexPaused => "IndexPaused",
            IndexChangeKind::IndexDemotedToDisabled => "IndexDemotedToDisabled",
            IndexChangeKind::LockModeChanged => "LockModeChanged",
            IndexChangeKind::PriorityChanged => "PriorityChanged",
            IndexChangeKind::IndexMarkedAsErrored => "IndexMarkedAsErrored",
            IndexChangeKind::SideBySideReplace => "SideBySideReplace",
        }
    }
}

/// What happened to a counter (RavenDB's `CounterChangeTypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterChangeKind {
    /// The counter was created.
    Put,
    /// An existing counter was incremented (or decremented).
    Increment,
    /// The counter was deleted.
    Delete,
}

impl CounterChangeKind {
    /// RavenDB's `CounterChangeTypes` name.
    pub fn name(self) -> &'static str {
        match self {
            CounterChangeKind::Put => "Put",
            CounterChangeKind::Increment => "Increment",
            CounterChangeKind::Delete => "Delete",
        }
    }
}

/// What happened to a time series (RavenDB's `TimeSeriesChangeTypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSeriesChangeKind {
    /// Entries were appended.
    Put,
    /// A range was deleted.
    Delete,
    /// Appends and deletes in one write.
    Mixed,
}

impl TimeSeriesChangeKind {
    /// RavenDB's `TimeSeriesChangeTypes` name.
    pub fn name(self) -> &'static str {
        match self {
            TimeSeriesChangeKind::Put => "Put",
            TimeSeriesChangeKind::Delete => "Delete",
            TimeSeriesChangeKind::Mixed => "Mixed",
        }
    }
}

/// One change of a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A document was written or deleted.
    Document {
        /// Put or delete.
        kind: DocumentChangeKind,
        /// The id as stored.
        id: String,
        /// Its collection (of the deleted document, for a delete).
        collection: String,
        /// The change vector of the write or of the tombstone.
        change_vector: String,
    },
    /// Something happened to an index.
    Index {
        /// What happened.
        kind: IndexChangeKind,
        /// The index's name.
        name: String,
    },
    /// A counter of a document was created, changed or deleted.
    Counter {
        /// Put, increment or delete.
        kind: CounterChangeKind,
        /// The document, with its id as stored.
        document_id: String,
        /// The document's collection.
        collection: String,
        /// The counter's name as written.
        name: String,
        /// Its value after the write (0 once deleted).
        value: i64,
        /// The document's change vector after the write (Corvid keeps no change vector per counter).
        change_vector: String,
    },
    /// Entries of a document's time series were written or deleted.
    TimeSeries {
        /// Put, delete or both.
        kind: TimeSeriesChangeKind,
        /// The document, with its id as stored.
        document_id: String,
        /// The document's collection.
        collection: String,
        /// The time series' name.
        name: String,
        /// First timestamp touched, in unix milliseconds (None: unbounded).
        from_ms: Option<i64>,
        /// Last timestamp touched, in unix milliseconds (None: unbounded).
        to_ms: Option<i64>,
        /// The change vector of the write.
        change_vector: String,
    },
    /// An operation made progress or ended; its state is read when it is rendered.
    Operation {
        /// The operation's id (as `/operations/state?id=` takes it).
        id: u64,
        /// True when it ended (completed, faulted or canceled), false for a progress report.
        finished: bool,
    },
}

impl Change {
    /// Whether a throttled connection may skip this change when a newer one follows (RavenDB skips
    /// document, counter, time-series and BatchCompleted changes, never the others).
    pub fn skippable(&self) -> bool {
        match self {
            Change::Document { .. } | Change::Counter { .. } | Change::TimeSeries { .. } => true,
            Change::Index { kind, .. } => *kind == IndexChangeKind::BatchCompleted,
            Change::Operation { .. } => false,
        }
    }
}
