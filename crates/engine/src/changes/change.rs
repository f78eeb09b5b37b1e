//! One notification of the Changes API, before the server renders it as RavenDB's JSON.

/// What happened to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentChangeKind {
    Put,
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
    BatchCompleted,
    IndexAdded,
    IndexRemoved,
    IndexPaused,
    IndexDemotedToDisabled,
    LockModeChanged,
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
    Document {
        kind: DocumentChangeKind,
        id: String,
        collection: String,
        change_vector: String,
    },
    Index {
        kind: IndexChangeKind,
        name: String,
    },
    /// An operation ended (completed, faulted or canceled); its state is read when it is rendered.
    Operation {
        id: u64,
    },
}
