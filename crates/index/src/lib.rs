//! Corvid indexes: the only crate that knows tantivy.
//!
//! A [`DocumentIndex`] is one tantivy index in its own directory. The engine hands it mapped documents
//! ([`MappedDocument`]) and asks it [`Filter`] + [`SortKey`] questions; it answers with document keys.
//! How values are turned into index terms (RavenDB's Lucene flavour) is described in `schema.rs` and
//! `entry.rs`.

mod document_index;
mod entry;
mod facets;
mod field_path;
mod merge_priority;
mod query_builder;
mod schema;
mod soft_sync;
mod sort_collector;
mod spatial;
mod terms;

#[cfg(test)]
mod differential_tests;
#[cfg(test)]
mod soft_sync_tests;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use document_index::{DocumentIndex, IndexBatch, RecentSegments, CHECKPOINT_INTERVAL};
pub use facets::{Aggregate, FacetAnswer, FacetCounts, FacetRequest, TermCount};
pub use schema::Analyzer;
pub use spatial::{distance_km, parse_wkt, point_of, shape_center, ShapeError, EARTH_RADIUS_KM};

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSpec {
    pub fields: Vec<FieldSpec>,
}

/// One index entry: a document reduced to what the index needs.
#[derive(Debug, Clone, PartialEq)]
pub struct MappedDocument {
    /// Lower-cased document id.
    pub key: String,
    /// The document JSON without `@metadata`.
    pub body: serde_json::Value,
}

/// A query value. Its type picks the index form it is compared with (rql-and-indexes.md 1.4).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    String(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    All,
    /// `exact = false`: case-insensitive on strings.
    Equal {
        field: String,
        value: Value,
        exact: bool,
    },
    /// Bounds are `(value, inclusive)`. Long/Double bounds compare numerically, strings on the lower-cased term.
    Range {
        field: String,
        lower: Option<(Value, bool)>,
        upper: Option<(Value, bool)>,
    },
    In {
        field: String,
        values: Vec<Value>,
        all: bool,
        exact: bool,
    },
    StartsWith {
        field: String,
        prefix: String,
        exact: bool,
    },
    EndsWith {
        field: String,
        suffix: String,
        exact: bool,
    },
    Exists {
        field: String,
    },
    /// Full-text search on the field's search form; `all` = AND of the terms, else OR.
    Search {
        field: String,
        terms: String,
        all: bool,
    },
    /// Unanchored regular expression over the raw index terms (lower-cased on default fields).
    Regex {
        field: String,
        pattern: String,
    },
    /// Terms of the field within `max_edits` (Levenshtein, transpositions count once) of `term`.
    Fuzzy {
        field: String,
        term: String,
        max_edits: u8,
    },
    /// The analyzed words of `terms` in order, at most `slop` positions apart (full-text fields).
    Proximity {
        field: String,
        terms: String,
        slop: u32,
    },
    /// Any of the terms (already analyzed) in the field's full-text form (or keyword form when it has
    /// none), each with a boost: what `moreLikeThis` asks.
    AnyTerm {
        field: String,
        terms: Vec<(String, f32)>,
    },
    /// The entry whose key (lower-cased document id) is this.
    Key(String),
    /// Entries whose point (in spatial field `field`) relates to `shape`.
    Spatial {
        field: String,
        shape: Shape,
        relation: SpatialRelation,
    },
    And(Vec<Filter>),
    Or(Vec<Filter>),
    /// Everything except the inner filter, including entries without the field.
    Not(Box<Filter>),
    Boost(Box<Filter>, f32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKind {
    /// Ordinal order of the lower-cased term.
    String,
    Long,
    Double,
    /// Natural order: digit runs compare by value (`a2 < a10`).
    AlphaNumeric,
    /// Relevance; ascending means most relevant first (RavenDB's `order by score()`).
    Score,
    /// Distance of the spatial field's point from a point (degrees x 10^7, so the key stays `Eq`).
    Distance {
        lat_e7: i64,
        lng_e7: i64,
    },
}

/// A query shape of spatial filters. Coordinates are degrees.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Circle {
        lat: f64,
        lng: f64,
        radius_km: f64,
    },
    /// Any other WKT geometry (x is the longitude): polygons with holes, lines, their multi forms.
    Geometry(geo::Geometry<f64>),
}

/// How an entry's value relates to the query shape (entry `Within` shape, entry `Contains` shape, ...). For
/// points, `Within`, `Intersects` and `Contains` all mean "the point is in the shape".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpatialRelation {
    Within,
    Contains,
    Intersects,
    Disjoint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: String,
    pub kind: SortKind,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    /// Keys of the page, in order.
    pub keys: Vec<String>,
    /// Number of matching entries (before paging).
    pub total: usize,
    /// Relevance of each key; 0.0 where the sort did not compute scores.
    pub scores: Vec<f32>,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index engine error: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("index I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("index is corrupted or incompatible: {context}")]
    Corrupted { context: String },
    #[error("invalid query: {0}")]
    InvalidQuery(String),
}
