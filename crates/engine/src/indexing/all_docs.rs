//! `@all_docs`: the collection name by which an index definition reads every document.

/// The collection of an index that reads every document (automatic indexes of `from @all_docs`, static
/// indexes whose maps read several collections or all of them).
pub const ALL_DOCS: &str = "@all_docs";

/// Whether a collection name, as written in a query or a map, means every document.
pub fn is_all_docs(collection: &str) -> bool {
    collection.eq_ignore_ascii_case(ALL_DOCS)
}
