//! Automatic index definitions and RavenDB's naming of them (`Auto/Users/ByAgeAndName`).

use serde::{Deserialize, Serialize};

pub const ALL_DOCS: &str = "@all_docs";

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AutoIndexField {
    /// The path as written in the query (`Name`, `Address.City`, `Lines[].Quantity`).
    pub path: String,
    /// Has a full-text form (`search()`).
    pub search: bool,
    /// Has a case-sensitive form (`exact()`).
    pub exact: bool,
}

impl AutoIndexField {
    pub fn plain(path: &str) -> Self {
        AutoIndexField { path: path.to_owned(), search: false, exact: false }
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoIndexDefinition {
    pub name: String,
    /// The collection as written in the query, or `@all_docs`.
    pub collection: String,
    pub fields: Vec<AutoIndexField>,
}

impl AutoIndexDefinition {
    pub fn new(collection: &str, mut fields: Vec<AutoIndexField>) -> Self {
        fields.sort_by_key(|f| sort_key(&f.path));
        fields.dedup_by(|a, b| {
            if a.path == b.path {
                b.search |= a.search;
                b.exact |= a.exact;
                true
            } else {
                false
            }
        });
        AutoIndexDefinition { name: auto_index_name(collection, &fields), collection: collection.to_owned(), fields }
    }

    pub fn is_all_docs(&self) -> bool {
        self.collection.eq_ignore_ascii_case(ALL_DOCS)
    }

    /// Whether this index can answer a query needing `needed` on `collection`.
    pub fn covers(&self, collection: &str, needed: &[AutoIndexField]) -> bool {
        self.collection.eq_ignore_ascii_case(collection)
            && needed.iter().all(|n| self.fields.iter().any(|f| f.path == n.path && (f.search || !n.search) && (f.exact || !n.exact)))
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
        let search = AutoIndexField { path: "Notes".into(), search: true, exact: false };
        assert_eq!(AutoIndexDefinition::new("Employees", vec![search]).name, "Auto/Employees/BySearch(Notes)");
        assert_eq!(AutoIndexDefinition::new("@all_docs", vec![f("Name")]).name, "Auto/AllDocs/ByName");
    }

    #[test]
    fn covering_and_extending() {
        let f = |p: &str| AutoIndexField::plain(p);
        let def = AutoIndexDefinition::new("Users", vec![f("Name")]);
        assert!(def.covers("users", &[f("Name")]));
        assert!(!def.covers("Users", &[f("Age")]));
        assert!(!def.covers("Users", &[AutoIndexField { path: "Name".into(), search: true, exact: false }]));
        let wider = def.extended_with(&[f("Age"), AutoIndexField { path: "Name".into(), search: true, exact: false }]);
        assert_eq!(wider.name, "Auto/Users/ByAgeAndSearch(Name)");
        assert!(wider.covers("Users", &[f("Name"), f("Age")]));
    }
}
