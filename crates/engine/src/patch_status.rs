//! What a patch did to its document: the status RavenDB reports per patched document (in the patch reply and
//! in the details of a patch by query). A file of its own so that operation results name it without
//! depending on the patch machinery.

/// What a patch did to one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchStatus {
    /// No such document, and nothing in the command creates it.
    DocumentDoesNotExist,
    /// The document did not exist and was created (`patchIfMissing` or `createIfMissing`).
    Created,
    /// The script ran and the document was written.
    Patched,
    /// The change vector did not match and the command asked to skip rather than fail.
    Skipped,
    /// The script ran and left the document as it was; nothing was written.
    NotModified,
}

impl PatchStatus {
    /// RavenDB's name of the status (`PatchStatus`).
    pub fn as_str(self) -> &'static str {
        match self {
            PatchStatus::DocumentDoesNotExist => "DocumentDoesNotExist",
            PatchStatus::Created => "Created",
            PatchStatus::Patched => "Patched",
            PatchStatus::Skipped => "Skipped",
            PatchStatus::NotModified => "NotModified",
        }
    }
}
