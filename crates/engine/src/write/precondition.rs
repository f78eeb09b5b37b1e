//! Optimistic concurrency: the change vector a client expects a document to have when it writes.

use corvid_storage::DocumentRecord;

use crate::EngineError;

/// What the client said the document's current change vector must be.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedChangeVector {
    /// No check (`null` or absent).
    Any,
    /// The document must not exist (`""`).
    MustNotExist,
    /// The document must exist with exactly this change vector.
    Exactly(String),
}

impl ExpectedChangeVector {
    /// The expectation a client sends: absent or `null` is no check, `""` means "must not exist".
    pub fn from_wire(value: Option<&str>) -> Self {
        match value {
            None => ExpectedChangeVector::Any,
            Some("") => ExpectedChangeVector::MustNotExist,
            Some(cv) => ExpectedChangeVector::Exactly(cv.to_owned()),
        }
    }

    /// Fails with a concurrency error when `current` (the stored version of `id`, if any) does not match;
    /// `operation` names the write in the message (`PUT`, `DELETE`, `PATCH`, ...).
    pub(crate) fn check(&self, id: &str, current: Option<&DocumentRecord>, operation: &str) -> Result<(), EngineError> {
        let violation = |detail: String| EngineError::Concurrency {
            message: format!("{detail}. Optimistic concurrency violation, transaction will be aborted."),
        };
        match (self, current) {
            (ExpectedChangeVector::Any, _) | (ExpectedChangeVector::MustNotExist, None) => Ok(()),
            (ExpectedChangeVector::MustNotExist, Some(doc)) => Err(violation(format!(
                "Document {id} has change vector {}, but {operation} was called expecting the document not to exist",
                doc.change_vector
            ))),
            (ExpectedChangeVector::Exactly(cv), None) => {
                Err(violation(format!("Document {id} does not exist, but {operation} was called with change vector {cv}")))
            }
            (ExpectedChangeVector::Exactly(cv), Some(doc)) if &doc.change_vector != cv => Err(violation(format!(
                "Document {id} has change vector {}, but {operation} was called with change vector {cv}",
                doc.change_vector
            ))),
            (ExpectedChangeVector::Exactly(_), Some(_)) => Ok(()),
        }
    }
}
