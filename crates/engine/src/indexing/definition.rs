//! Automatic index definitions and RavenDB's naming of them (`Auto/Users/ByAgeAndName`).

use serde::{Deserialize, Serialize};

pub const ALL_DOCS: &str = "@all_docs";
/// Fields (and, for map-reduce, group-by fields and aggregations) an automatic index may have: a dynamic
/// query needing more is refused before anything is created (each field costs columns in every segment).
pub const MAX_AUTO_INDEX_FIELDS: usize = 128;
/// Characters an automatic index's name (made of its field names) may have.
pub const MAX_AUTO_INDEX_NAME_CHARS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AutoIndexField {
    /// The path as written in the query (`Name`, `Address.City`, `Lines[].Quantity`).
    pub path: String,
    /// Has a full-text form (`search()`).
    pub search: bool,
    /// Has a case-sensitive form (`exact()`).
    pub exact: bool,
    /// Holds points (`spatial.point(Lat, Lng)` in queries, spatial fields of static indexes).
    #[serde(default)]
    pub spatial: bool,
    /// Static indexes: the analyzer of the full-text form (`Fields[x].Analyzer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analyzer: Option<String>,
    /// Static indexes: `Fields[x].Spatial` (cartesian, bounding box); None: geography.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spatial_options: Option<corvid_index::SpatialOptions>,
    /// Static indexes: `Indexing: Exact` (values keep their case everywhere; no lower-cased form).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
    /// Static indexes: `Indexing: Search` (strings indexed only as tokens; no whole-value form).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub analyzed_only: bool,
}

impl AutoIndexField {
    pub fn plain(path: &str) -> Self {
        AutoIndexField {
            path: path.to_owned(),
            search: false,
            exact: false,
            spatial: false,
            analyzer: None,
            spatial_options: None,
            case_sensitive: false,
            analyzed_only: false,
        }
    }

    fn name_part(&self) -> String {
        let mut parts = Vec::new();
        if self.search {
            parts.push(format!("Search({})", self.path));
        }
        if self.exact {
            parts.push(format!("Exact({})", self.path));
        }
        if parts.is_empty() {
            self.path.clone()
        } else {
            parts.join("And")
        }
    }
}

/// An aggregation of a map-reduce index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Aggregation {
    Count,
    Sum(String),
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
fn group_by_name_part(group_by: &str) -> String {
    match array_content_path(group_by) {
        Some(path) => format!("Array({path})"),
        None => group_by.to_owned(),
    }
}

impl Aggregation {
    fn name_part(&self) -> String {
        match self {
            Aggregation::Count => "Count".into(),
            Aggregation::Sum(path) => path.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoIndexDefinition {
    pub name: String,
    /// The collection as written in the query, or `@all_docs`.
    pub collection: String,
    pub fields: Vec<AutoIndexField>,
    /// Map-reduce indexes (dynamic `group by`): the reduce key paths...
    #[serde(default)]
    pub group_by: Vec<String>,
    /// ...and what is aggregated per reduce key.
    #[serde(default)]
    pub aggregations: Vec<Aggregation>,
    /// Set for user-defined (static) indexes: their maps and the definition as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_index: Option<super::static_index::StaticIndex>,
}

impl AutoIndexDefinition {
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
        let coll = if collection.eq_ignore_ascii_case(ALL_DOCS) { "AllDocs" } else { collection };
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

    pub fn is_all_docs(&self) -> bool {
        self.collection.eq_ignore_ascii_case(ALL_DOCS)
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

pub fn auto_index_name(collection: &str, fields: &[AutoIndexField]) -> String {
    let coll = if collection.eq_ignore_ascii_case(ALL_DOCS) { "AllDocs" } else { collection };
    if fields.is_empty() {
        return format!("Auto/{coll}/ById()");
    }
    let mut names: Vec<String> = fields.iter().map(AutoIndexField::name_part).collect();
    names.sort_by_key(|n| sort_key(n));
    format!("Auto/{coll}/By{}", names.join("And"))
}

#[cfg(test)]
mod tests {
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
