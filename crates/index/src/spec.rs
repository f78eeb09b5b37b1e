//! What an index is built for: its fields and how each is indexed.

use serde::{Deserialize, Serialize};

/// One field of an index definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldSpec {
    /// Path into the document: `Name`, `Address.City`, `Lines[].Quantity`.
    pub path: String,
    /// Also index a tokenized, lower-cased form for `search()`.
    pub search: bool,
    /// Also index the value with its case kept, for `exact()`.
    pub exact: bool,
    /// A spatial field: values are points (`{"Latitude", "Longitude"}`, `[lat, lng]` or WKT `POINT(lng lat)`);
    /// a path `spatial.point(LatPath,LngPath)` reads the two coordinates from their own paths.
    #[serde(default)]
    pub spatial: bool,
    /// The analyzer of the full-text form (RavenDB's names: `StandardAnalyzer`, `WhitespaceAnalyzer`, ...);
    /// None: the standard one. Setting it gives the field a full-text form.
    #[serde(default)]
    pub analyzer: Option<String>,
    /// How a spatial field measures and stores shapes; None: geography, exact shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spatial_options: Option<SpatialOptions>,
    /// `Indexing: Exact` of a static index: the value is kept with its case for equality, ranges, sorting and
    /// facets, and there is no lower-cased form (RavenDB indexes such a field as one untokenized term).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
    /// `Indexing: Search` of a static index: strings are indexed only as the analyzer's tokens, as RavenDB's
    /// analyzed Lucene field. Equality, ranges and facets see the tokens; there is no whole-value term, and
    /// sorts (string or alphanumeric) compare the first 32 bytes of the lower-cased value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub analyzed_only: bool,
}

impl FieldSpec {
    /// A field with the default form only (lower-cased keyword terms and numbers).
    pub fn new(path: impl Into<String>) -> FieldSpec {
        FieldSpec {
            path: path.into(),
            search: false,
            exact: false,
            spatial: false,
            analyzer: None,
            spatial_options: None,
            case_sensitive: false,
            analyzed_only: false,
        }
    }
}

/// A spatial field's `Fields[x].Spatial` options that change answers (RavenDB's tree strategies and their
/// precision settings do not: shapes are kept exactly).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpatialOptions {
    /// `Type: Cartesian`: plane coordinates, Euclidean distances in coordinate units; else geography
    /// (degrees, distances in km on the sphere).
    #[serde(default)]
    pub cartesian: bool,
    /// `Strategy: BoundingBox`: each indexed shape stands for its bounding rectangle.
    #[serde(default)]
    pub bounding_box: bool,
}

/// What an index is built for: its fields. Kept in each commit; opening with another spec is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSpec {
    /// The indexed fields.
    pub fields: Vec<FieldSpec>,
}
