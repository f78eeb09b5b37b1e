//! The planner's read-only view of a database's indexes: which exist, of what kind, and which automatic
//! index a dynamic query would use. Asking creates nothing.

use crate::indexing::{Aggregation, AutoIndexField, IndexBackend, IndexRegistry, QueryExplanation};

/// How an index keeps its entries, as far as planning a query on it cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexKind {
    /// Documents (or map entries) searchable by field: every query feature works on it.
    Map,
    /// An automatic map-reduce index: reduce rows per `group by` key.
    AutoReduce,
    /// A static map-reduce index: reduce results searchable by field.
    StaticReduce,
}

/// One index of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CatalogIndex {
    /// Its name (`ReplacementOf/<name>` for a replacement being built).
    pub name: String,
    pub kind: IndexKind,
    /// Why the index refuses queries (it failed too often); None while it answers them.
    pub errored: Option<String>,
}

/// What the planner may ask about indexes. Implementations answer from the current state and change
/// nothing.
pub(crate) trait IndexCatalog {
    /// The index of that name (case-insensitive; `ReplacementOf/<name>` names the replacement being built).
    fn index(&self, name: &str) -> Option<CatalogIndex>;

    /// Which automatic map index a query on `collection` filtering or sorting on `needed` uses, or the one
    /// running it would create, with the reason for each index considered.
    fn explain_map(&self, collection: &str, needed: &[AutoIndexField]) -> QueryExplanation;

    /// The same for a `group by` query and its automatic map-reduce index.
    fn explain_reduce(&self, collection: &str, group_by: &[String], aggregations: &[Aggregation]) -> QueryExplanation;
}

impl IndexCatalog for IndexRegistry {
    fn index(&self, name: &str) -> Option<CatalogIndex> {
        let handle = self.get(name)?;
        let kind = match &handle.index {
            IndexBackend::Search(_) => IndexKind::Map,
            IndexBackend::Reduce(_) => IndexKind::AutoReduce,
            IndexBackend::StaticReduce { .. } => IndexKind::StaticReduce,
        };
        Some(CatalogIndex { name: handle.name(), kind, errored: handle.control.errored_reason() })
    }

    fn explain_map(&self, collection: &str, needed: &[AutoIndexField]) -> QueryExplanation {
        IndexRegistry::explain_map(self, collection, needed)
    }

    fn explain_reduce(&self, collection: &str, group_by: &[String], aggregations: &[Aggregation]) -> QueryExplanation {
        IndexRegistry::explain_reduce(self, collection, group_by, aggregations)
    }
}
