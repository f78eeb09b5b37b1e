//! Index definitions (automatic, or static with their maps) and RavenDB's naming of automatic indexes
//! (`Auto/Users/ByAgeAndName`).

use serde::{Deserialize, Serialize};

use super::aggregation::{group_by_name_part, Aggregation};
use super::all_docs::is_all_docs;
use super::field::AutoIndexField;
use super::static_index::{IndexSource, StaticIndex};

/// Fields (and, for map-reduce, group-by fields and aggregations) an automatic index may have: a dynamic
/// query needing more is refused before anything is created (each field costs columns in every segment).
pub const MAX_AUTO_INDEX_FIELDS: usize = 128;
/// Characters an automatic index's name (made of its field names) may have.
pub const MAX_AUTO_INDEX_NAME_CHARS: usize = 4096;

/// What an index computes: an automatic index's fields (or reduce key and aggregations), or a static index's
/// maps with the fields they produce. Stored as `definition.json` in the index's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoIndexDefinition {
    /// The index name (`Auto/Users/ByName`, or the static index's own).
    pub name: String,
    /// The collection as written in the query, or `@all_docs`.
    pub collection: String,
    /// The fields of the search index (of a static map-reduce index: those of its reduce results).
    pub fields: Vec<AutoIndexField>,
    /// Map-reduce indexes (dynamic `group by`): the reduce key paths...
    #[serde(default)]
    pub group_by: Vec<String>,
    /// ...and what is aggregated per reduce key.
    #[serde(default)]
    pub aggregations: Vec<Aggregation>,
    /// Set for user-defined (static) indexes: their maps and the definition as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_index: Option<StaticIndex>,
}

impl AutoIndexDefinition {
    /// An automatic map index of `collection` over `fields` (sorted, and merged where a path repeats).
    pub fn new(collection: &str, mut fields: Vec<AutoIndexField>) -> Self {
        fields.sort_by_key(|f| sort_key(&f.path));
        fields.dedup_by(|a, b| {
            if a.path == b.path {
                b.search |= a.search;
                b.exact |= a.exact;
                b.spatial |= a.spatial;
                true
            } else {
                false
            }
        });
        AutoIndexDefinition {
            name: auto_index_name(collection, &fields),
            collection: collection.to_owned(),
            fields,
            group_by: Vec::new(),
            aggregations: Vec::new(),
            static_index: None,
        }
    }

    /// A map-reduce index for `group by` queries.
    pub fn map_reduce(collection: &str, mut group_by: Vec<String>, mut aggregations: Vec<Aggregation>) -> Self {
        group_by.sort_by_key(|g| sort_key(&group_by_name_part(g)));
        group_by.dedup();
        if !aggregations.contains(&Aggregation::Count) {
            aggregations.insert(0, Aggregation::Count); // the count is kept anyway: it tells when a key is empty
        }
        aggregations.sort_by_key(|a| sort_key(&a.name_part()));
        aggregations.dedup();
        let coll = if is_all_docs(collection) { "AllDocs" } else { collection };
        let maps: Vec<String> = aggregations.iter().map(Aggregation::name_part).collect();
        let keys: Vec<String> = group_by.iter().map(|g| group_by_name_part(g)).collect();
        let name = format!("Auto/{coll}/By{}ReducedBy{}", maps.join("And"), keys.join("And"));
        AutoIndexDefinition { name, collection: collection.to_owned(), fields: Vec::new(), group_by, aggregations, static_index: None }
    }

    /// Refuses an automatic index over [`MAX_AUTO_INDEX_FIELDS`] fields or [`MAX_AUTO_INDEX_NAME_CHARS`]
    /// characters of name, with what to do instead.
    pub fn check_auto_limits(&self) -> Result<(), crate::EngineError> {
        let fields = self.fields.len() + self.group_by.len() + self.aggregations.len();
        let name_chars = self.name.chars().count();
        let problem = if fields > MAX_AUTO_INDEX_FIELDS {
            format!("{fields} fields; at most {MAX_AUTO_INDEX_FIELDS} are allowed")
        } else if name_chars > MAX_AUTO_INDEX_NAME_CHARS {
            format!("a name of {name_chars} characters; at most {MAX_AUTO_INDEX_NAME_CHARS} are allowed")
        } else {
            return Ok(());
        };
        let head: String = self.name.chars().take(100).collect();
        Err(crate::EngineError::InvalidQuery {
            message: format!("This query needs an automatic index of {problem} ('{head}…'). Query fewer fields, or define a static index"),
        })
    }

    /// A user-defined index (never matched to queries on collections, never retired or deleted when idle).
    pub fn is_static(&self) -> bool {
        self.static_index.is_some()
    }

    /// An automatic map-reduce index (it has a reduce key); a static index's reduce is in `static_index`.
    pub fn is_map_reduce(&self) -> bool {
        !self.group_by.is_empty()
    }

    /// Position of an aggregation's value in a reduce row (`0` is the count).
    pub fn value_position(&self, aggregation: &Aggregation) -> Option<usize> {
        match aggregation {
            Aggregation::Count => Some(0),
            Aggregation::Sum(_) => self.sums().position(|a| a == aggregation).map(|p| p + 1),
        }
    }

    /// The summed aggregations, in the order of their values after the count.
    pub fn sums(&self) -> impl Iterator<Item = &Aggregation> {
        self.aggregations.iter().filter(|a| matches!(a, Aggregation::Sum(_)))
    }

    /// Whether this map-reduce index answers a `group by` with these aggregations.
    pub fn covers_reduce(&self, collection: &str, group_by: &[String], aggregations: &[Aggregation]) -> bool {
        let mut wanted = group_by.to_vec();
        wanted.sort_by_key(|g| sort_key(&group_by_name_part(g)));
        wanted.dedup();
        self.is_auto_reduce_of(collection) && self.group_by == wanted && aggregations.iter().all(|a| self.aggregations.contains(a))
    }

    /// What a static index maps when it is not documents: counters or time series.
    pub fn item_source(&self) -> Option<IndexSource> {
        self.static_index.as_ref().map(|s| s.source).filter(|s| *s != IndexSource::Documents)
    }

    /// Whether the index reads every document rather than one collection.
    pub fn is_all_docs(&self) -> bool {
        is_all_docs(&self.collection)
    }

    /// An automatic map index of `collection`: one a dynamic query on it may use or extend.
    pub fn is_auto_map_of(&self, collection: &str) -> bool {
        !self.is_map_reduce() && !self.is_static() && self.collection.eq_ignore_ascii_case(collection)
    }

    /// An automatic map-reduce index of `collection`: one a `group by` query on it may use or extend.
    pub fn is_auto_reduce_of(&self, collection: &str) -> bool {
        self.is_map_reduce() && !self.is_static() && self.collection.eq_ignore_ascii_case(collection)
    }

    /// Whether this index can answer a query needing `needed` on `collection`.
    pub fn covers(&self, collection: &str, needed: &[AutoIndexField]) -> bool {
        self.is_auto_map_of(collection)
            && needed.iter().all(|n| {
                self.fields
                    .iter()
                    .any(|f| f.path == n.path && (f.search || !n.search) && (f.exact || !n.exact) && (f.spatial || !n.spatial))
            })
    }

    /// The union of this index's fields and `needed`.
    pub fn extended_with(&self, needed: &[AutoIndexField]) -> AutoIndexDefinition {
        let mut fields = self.fields.clone();
        fields.extend(needed.iter().cloned());
        AutoIndexDefinition::new(&self.collection, fields)
    }
}

/// .NET's default string ordering is culture-aware: case-insensitive first.
fn sort_key(s: &str) -> (String, String) {
    (s.to_lowercase(), s.to_owned())
}

/// RavenDB's name of the automatic map index of `collection` over `fields`.
pub fn auto_index_name(collection: &str, fields: &[AutoIndexField]) -> String {
    let coll = if is_all_docs(collection) { "AllDocs" } else { collection };
    if fields.is_empty() {
        return format!("Auto/{coll}/ById()");
    }
    let mut names: Vec<String> = fields.iter().map(AutoIndexField::name_part).collect();
    names.sort_by_key(|n| sort_key(n));
    format!("Auto/{coll}/By{}", names.join("And"))
}

#[cfg(test)]
mod tests {
    use super::super::aggregation::{array_content_path, group_by_array_content};
    use super::*;

    #[test]
    fn names_follow_ravendb() {
        let f = |p: &str| AutoIndexField::plain(p);
        assert_eq!(AutoIndexDefinition::new("Users", vec![f("Name"), f("Age")]).name, "Auto/Users/ByAgeAndName");
        assert_eq!(AutoIndexDefinition::new("Genres", vec![f("name")]).name, "Auto/Genres/Byname");
        assert_eq!(AutoIndexDefinition::new("Orders", vec![f("ShipTo.Country")]).name, "Auto/Orders/ByShipTo.Country");
        let search = AutoIndexField { search: true, ..AutoIndexField::plain("Notes") };
        assert_eq!(AutoIndexDefinition::new("Employees", vec![search]).name, "Auto/Employees/BySearch(Notes)");
        assert_eq!(AutoIndexDefinition::new("@all_docs", vec![f("Name")]).name, "Auto/AllDocs/ByName");
    }

    #[test]
    fn map_reduce_names_follow_ravendb() {
        let def = AutoIndexDefinition::map_reduce("Orders", vec!["employee".into(), "company".into()], vec![Aggregation::Count]);
        assert_eq!(def.name, "Auto/Orders/ByCountReducedBycompanyAndemployee");
        let def = AutoIndexDefinition::map_reduce("Orders", vec!["Company".into()], vec![Aggregation::Sum("Total".into())]);
        assert_eq!(def.name, "Auto/Orders/ByCountAndTotalReducedByCompany");
        assert_eq!(def.value_position(&Aggregation::Sum("Total".into())), Some(1));
        assert!(def.covers_reduce("orders", &["Company".into()], &[Aggregation::Count]));
        assert!(!def.covers_reduce("Orders", &["Company".into(), "x".into()], &[]));
        let def = AutoIndexDefinition::map_reduce("Orders", vec![group_by_array_content("Lines[].Product")], vec![Aggregation::Count]);
        assert_eq!(def.name, "Auto/Orders/ByCountReducedByArray(Lines[].Product)");
        let keys = vec!["Company".into(), group_by_array_content("Lines[].Product")];
        let def = AutoIndexDefinition::map_reduce("Orders", keys, vec![Aggregation::Count]);
        assert_eq!(def.name, "Auto/Orders/ByCountReducedByArray(Lines[].Product)AndCompany");
        assert_eq!(array_content_path(&def.group_by[0]), Some("Lines[].Product"));
    }

    #[test]
    fn covering_and_extending() {
        let f = |p: &str| AutoIndexField::plain(p);
        let def = AutoIndexDefinition::new("Users", vec![f("Name")]);
        assert!(def.covers("users", &[f("Name")]));
        assert!(!def.covers("Users", &[f("Age")]));
        assert!(!def.covers("Users", &[AutoIndexField { search: true, ..AutoIndexField::plain("Name") }]));
        let wider = def.extended_with(&[f("Age"), AutoIndexField { search: true, ..AutoIndexField::plain("Name") }]);
        assert_eq!(wider.name, "Auto/Users/ByAgeAndSearch(Name)");
        assert!(wider.covers("Users", &[f("Name"), f("Age")]));
    }

    #[test]
    fn automatic_indexes_are_limited_in_fields_and_name_length() {
        let fields = |n: usize, len: usize| (0..n).map(|i| AutoIndexField::plain(&format!("{i:0len$}"))).collect::<Vec<_>>();
        assert!(AutoIndexDefinition::new("Users", fields(MAX_AUTO_INDEX_FIELDS, 3)).check_auto_limits().is_ok());
        let e = AutoIndexDefinition::new("Users", fields(MAX_AUTO_INDEX_FIELDS + 1, 3)).check_auto_limits().unwrap_err();
        assert!(e.to_string().contains("129 fields; at most 128"), "{e}");
        let e = AutoIndexDefinition::new("Users", fields(2, 3000)).check_auto_limits().unwrap_err();
        assert!(e.to_string().contains("name of 6016 characters"), "{e}");
        let group_by = (0..MAX_AUTO_INDEX_FIELDS).map(|i| format!("g{i}")).collect();
        assert!(AutoIndexDefinition::map_reduce("Users", group_by, vec![Aggregation::Count]).check_auto_limits().is_err());
    }
}
