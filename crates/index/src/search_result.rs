//! What a search answers.

/// A page of a search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    /// Keys of the page, in order.
    pub keys: Vec<String>,
    /// Number of matching entries (before paging).
    pub total: usize,
    /// Relevance of each key; 0.0 where the sort did not compute scores.
    pub scores: Vec<f32>,
}
