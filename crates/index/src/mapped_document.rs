//! What the engine hands the index for each entry.

/// One index entry: a document reduced to what the index needs.
#[derive(Debug, Clone, PartialEq)]
pub struct MappedDocument {
    /// Lower-cased document id.
    pub key: String,
    /// The document JSON without `@metadata`.
    pub body: serde_json::Value,
}
