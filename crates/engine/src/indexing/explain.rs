//! Why a dynamic query uses the automatic index it uses (`queries?debug=explain`): every automatic index of
//! the query's collection with the reason it is or is not chosen, worked out the way the query itself chooses
//! (`IndexRegistry::find_or_create`), without creating anything.

use std::sync::Arc;

use super::aggregation::Aggregation;
use super::definition::AutoIndexDefinition;
use super::field::AutoIndexField;
use super::handle::IndexHandle;
use super::registry::IndexRegistry;

/// One index considered for a query, as RavenDB's explain answers it (`{"Index": ..., "Reason": ...}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexExplanation {
    /// The index's name.
    pub index: String,
    /// Why it is (or is not) the one the query uses.
    pub reason: String,
}

/// The index a query would use (or create), and every index considered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryExplanation {
    /// The index the query uses, or the one running it creates.
    pub index_name: String,
    /// Every index considered, the chosen (or created) one included.
    pub explanations: Vec<IndexExplanation>,
}

fn describe_field(field: &AutoIndexField) -> String {
    let mut forms = Vec::new();
    if field.search {
        forms.push("full-text");
    }
    if field.exact {
        forms.push("exact");
    }
    if field.spatial {
        forms.push("spatial");
    }
    if forms.is_empty() {
        format!("'{}'", field.path)
    } else {
        format!("'{}' ({})", field.path, forms.join(", "))
    }
}

fn describe_aggregation(aggregation: &Aggregation) -> String {
    match aggregation {
        Aggregation::Count => "count()".into(),
        Aggregation::Sum(path) => format!("sum({path})"),
    }
}

fn same_handle(a: &Option<Arc<IndexHandle>>, b: &Arc<IndexHandle>) -> bool {
    a.as_ref().is_some_and(|a| Arc::ptr_eq(a, b))
}

impl IndexRegistry {
    /// Explains the choice of an automatic map index for a query on `collection` that filters or sorts on
    /// `needed`.
    pub fn explain_map(&self, collection: &str, needed: &[AutoIndexField]) -> QueryExplanation {
        let chosen = self.find_covering(collection, needed);
        let explanations = self.considered(
            |definition| definition.is_auto_map_of(collection),
            |handle| {
                let definition = &handle.definition;
                if same_handle(&chosen, handle) {
                    "Selected: it indexes every field the query filters or sorts on".to_owned()
                } else if definition.covers(collection, needed) {
                    let chosen = chosen.as_ref().map(|c| c.definition.name.as_str()).unwrap_or_default();
                    format!("Not selected: it covers the query too, but '{chosen}' has indexed more documents or more fields")
                } else {
                    let missing: Vec<String> =
                        needed.iter().filter(|n| !definition.covers(collection, std::slice::from_ref(n))).map(describe_field).collect();
                    format!("Not selected: it does not index {}", missing.join(", "))
                }
            },
        );
        conclude(explanations, chosen, "automatic index", || self.map_index_to_create(collection, needed))
    }

    /// Explains the choice of an automatic map-reduce index for a `group by` query.
    pub fn explain_reduce(&self, collection: &str, group_by: &[String], aggregations: &[Aggregation]) -> QueryExplanation {
        let chosen = self.find_covering_reduce(collection, group_by, aggregations);
        let explanations = self.considered(
            |definition| definition.is_auto_reduce_of(collection),
            |handle| {
                let definition = &handle.definition;
                if same_handle(&chosen, handle) {
                    "Selected: it groups by the query's fields and computes every aggregation the query uses".to_owned()
                } else if !definition.covers_reduce(collection, group_by, &[]) {
                    format!("Not selected: it groups by {} instead", definition.group_by.join(", "))
                } else {
                    let missing: Vec<String> =
                        aggregations.iter().filter(|a| !definition.aggregations.contains(a)).map(describe_aggregation).collect();
                    format!("Not selected: it does not compute {}", missing.join(", "))
                }
            },
        );
        conclude(explanations, chosen, "automatic map-reduce index", || self.reduce_index_to_create(collection, group_by, aggregations))
    }

    /// Every index `candidate` accepts, with the reason `reason` gives for it.
    fn considered(
        &self,
        candidate: impl Fn(&AutoIndexDefinition) -> bool,
        reason: impl Fn(&Arc<IndexHandle>) -> String,
    ) -> Vec<IndexExplanation> {
        self.all()
            .iter()
            .filter(|handle| candidate(&handle.definition))
            .map(|handle| IndexExplanation { index: handle.definition.name.clone(), reason: reason(handle) })
            .collect()
    }
}

/// The index the query uses: the chosen one, or else the one running it creates (`to_create`: its definition
/// and the index it extends), added to the explanations.
fn conclude(
    mut explanations: Vec<IndexExplanation>,
    chosen: Option<Arc<IndexHandle>>,
    kind: &str,
    to_create: impl FnOnce() -> (AutoIndexDefinition, Option<Arc<IndexHandle>>),
) -> QueryExplanation {
    if let Some(chosen) = chosen {
        return QueryExplanation { index_name: chosen.definition.name.clone(), explanations };
    }
    let (definition, base) = to_create();
    let mut reason = format!("No {kind} covers the query: running it creates this index");
    if let Some(base) = base {
        reason.push_str(&format!(", extending '{}'", base.definition.name));
    }
    explanations.push(IndexExplanation { index: definition.name.clone(), reason });
    QueryExplanation { index_name: definition.name, explanations }
}
