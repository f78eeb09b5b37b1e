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
    /// An operation ended (completed, faulted or canceled); its state is read when it is rendered.
    Operation {
        /// The operation's id (as `/operations/state?id=` takes it).
        id: u64,
    },
}
