//! What a patch did to its document: the status RavenDB reports per patched document (in the patch reply and
//! in the details of a patch by query). A file of its own so that operation results name it without
//! depending on the patch machinery.

/// What a patch did to one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchStatus {
    DocumentDoesNotExist,
    Created,
    Patched,
    Skipped,
    NotModified,
}

impl PatchStatus {
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
