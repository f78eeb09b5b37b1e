//! One field of an index definition and the forms it is indexed in.

use serde::{Deserialize, Serialize};

/// A field of an index: the path it reads and the forms it is indexed in. Automatic indexes get theirs from
/// the queries they answer, static indexes from their maps and `Fields` options.
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
    /// A field with only the default form (the lower-cased whole value, plus numbers).
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

    /// The field as it appears in an automatic index's name: `Name`, `Search(Name)`, `Search(Name)AndExact(Name)`.
    pub(super) fn name_part(&self) -> String {
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
