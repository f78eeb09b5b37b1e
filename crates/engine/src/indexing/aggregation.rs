//! What a map-reduce index groups by and aggregates (`group by Company select count(), sum(Total)`).

use serde::{Deserialize, Serialize};

/// An aggregation of a map-reduce index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Aggregation {
    /// `count()`: the documents of a reduce key.
    Count,
    /// `sum(path)`: the sum of the numbers at the path.
    Sum(String),
}

impl Aggregation {
    /// The aggregation as it appears in an automatic index's name.
    pub(super) fn name_part(&self) -> String {
        match self {
            Aggregation::Count => "Count".into(),
            Aggregation::Sum(path) => path.clone(),
        }
    }
}

/// A `group by array(path)` key (RavenDB's `GroupByArrayBehavior.ByContent`): the whole array at `path` is
/// one value of the reduce key. Kept in `group_by` as `array(path)`, RavenDB's index field name for it.
pub fn group_by_array_content(path: &str) -> String {
    format!("array({path})")
}

/// The path of an `array(path)` group by key; None for a plain path.
pub fn array_content_path(group_by: &str) -> Option<&str> {
    group_by.strip_prefix("array(")?.strip_suffix(')')
}

/// A group by key as it appears in the index name: `Array(Lines[].Product)` for array content.
pub(super) fn group_by_name_part(group_by: &str) -> String {
    match array_content_path(group_by) {
        Some(path) => format!("Array({path})"),
        None => group_by.to_owned(),
    }
}
