//! How `LoadDocument` reaches other documents: the caller supplies the loader.

use serde_json::Value;

/// Loads referenced documents for `LoadDocument`; the caller records every id asked for.
pub trait DocumentLoader {
    /// The document with this id, if it exists.
    fn load(&mut self, id: &str) -> Option<Value>;
}

/// A loader for maps that load nothing.
pub struct NoDocuments;

impl DocumentLoader for NoDocuments {
    fn load(&mut self, _id: &str) -> Option<Value> {
        None
    }
}
