//! Where a plan's results come from: documents read directly, a named index, or the automatic index a
//! dynamic query needs.

use std::fmt;

use crate::indexing::{Aggregation, AutoIndexField};

/// Where the results come from.
#[derive(Clone, PartialEq)]
pub(crate) enum Source {
    /// The documents of a collection, read directly.
    Collection { name: String },
    /// Every document, read directly.
    AllDocs { name: String },
    /// `from index 'name'`.
    Index { name: String },
    /// A dynamic query: the automatic map index of `collection` that has every field in `fields` (an
    /// existing one, or one created when the plan is resolved).
    AutoIndex { collection: String, fields: Vec<AutoIndexField> },
    /// A `group by` query: the automatic map-reduce index of `collection` with that reduce key and at least
    /// these aggregations.
    AutoReduce { collection: String, group_by: Vec<String>, aggregations: Vec<Aggregation> },
}

/// Automatic index fields in the short form of their index names (`Name`, `search(Name)`, `spatial(...)`).
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Collection { name } => f.debug_struct("Collection").field("name", name).finish(),
            Source::AllDocs { name } => f.debug_struct("AllDocs").field("name", name).finish(),
            Source::Index { name } => f.debug_struct("Index").field("name", name).finish(),
            Source::AutoIndex { collection, fields } => {
                let fields: Vec<String> = fields.iter().map(field_form).collect();
                f.debug_struct("AutoIndex").field("collection", collection).field("fields", &fields).finish()
            }
            Source::AutoReduce { collection, group_by, aggregations } => f
                .debug_struct("AutoReduce")
                .field("collection", collection)
                .field("group_by", group_by)
                .field("aggregations", aggregations)
                .finish(),
        }
    }
}

/// `path`, or its forms: `search(path)`, `exact(path)`, `spatial(path)`, joined by `+`.
fn field_form(field: &AutoIndexField) -> String {
    let forms: Vec<String> = [("search", field.search), ("exact", field.exact), ("spatial", field.spatial)]
        .iter()
        .filter(|(_, has)| *has)
        .map(|(form, _)| format!("{form}({})", field.path))
        .collect();
    if forms.is_empty() {
        field.path.clone()
    } else {
        forms.join("+")
    }
}
