//! Corvid indexes: the only crate that knows tantivy.
//!
//! A [`DocumentIndex`] is one tantivy index in its own directory. The engine hands it mapped documents
//! ([`MappedDocument`]) and asks it [`Filter`] + [`SortKey`] questions; it answers with document keys.
//! How values are turned into index terms (RavenDB's Lucene flavour) is described in `schema.rs` and
//! `entry.rs`.

#![warn(missing_docs)]

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

/// What an index is built for: its fields. Kept in each commit; opening with another spec is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSpec {
    /// The indexed fields.
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
    /// `null`: compared with the null marker term.
    Null,
    /// `true` or `false`: compared with their terms.
    Bool(bool),
    /// An integer: compared with the long column.
    Long(i64),
    /// A floating-point number: compared with the double column.
    Double(f64),
    /// A string: compared with the keyword terms.
    String(String),
}

/// Which entries a search, a count or a facet considers. `field` is always a field path of the [`IndexSpec`].
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every entry.
    All,
    /// `exact = false`: case-insensitive on strings.
    Equal {
        /// The compared field.
        field: String,
        /// The value it must equal.
        value: Value,
        /// Compare strings with their case.
        exact: bool,
    },
    /// Bounds are `(value, inclusive)`. Long/Double bounds compare numerically, strings on the lower-cased term.
    Range {
        /// The compared field.
        field: String,
        /// The lower bound, if any.
        lower: Option<(Value, bool)>,
        /// The upper bound, if any.
        upper: Option<(Value, bool)>,
    },
    /// `in (…)`: any of the values, or with `all` (`all in (…)`) every one of them.
    In {
        /// The compared field.
        field: String,
        /// The values.
        values: Vec<Value>,
        /// Every value must be present (an empty list then matches everything).
        all: bool,
        /// Compare strings with their case.
        exact: bool,
    },
    /// `startsWith(field, prefix)`.
    StartsWith {
        /// The compared field.
        field: String,
        /// The prefix.
        prefix: String,
        /// Compare with case.
        exact: bool,
    },
    /// `endsWith(field, suffix)`.
    EndsWith {
        /// The compared field.
        field: String,
        /// The suffix.
        suffix: String,
        /// Compare with case.
        exact: bool,
    },
    /// `exists(field)`: entries with any value (or point or shape) in the field.
    Exists {
        /// The field.
        field: String,
    },
    /// Full-text search on the field's search form; `all` = AND of the terms, else OR.
    Search {
        /// The searched field.
        field: String,
        /// Whitespace-separated terms, "quoted phrases", `*`/`?` wildcards.
        terms: String,
        /// Every term must match.
        all: bool,
    },
    /// Unanchored regular expression over the raw index terms (lower-cased on default fields).
    Regex {
        /// The field.
        field: String,
        /// The regular expression.
        pattern: String,
    },
    /// Terms of the field within `max_edits` (Levenshtein, transpositions count once) of `term`.
    Fuzzy {
        /// The field.
        field: String,
        /// The term looked for.
        term: String,
        /// Edits allowed.
        max_edits: u8,
    },
    /// The analyzed words of `terms` in order, at most `slop` positions apart (full-text fields).
    Proximity {
        /// The field.
        field: String,
        /// The words, analyzed as the field is.
        terms: String,
        /// Positions allowed between the words.
        slop: u32,
    },
    /// Any of the terms (already analyzed) in the field's full-text form (or keyword form when it has
    /// none), each with a boost: what `moreLikeThis` asks.
    AnyTerm {
        /// The field.
        field: String,
        /// Terms and their boosts.
        terms: Vec<(String, f32)>,
    },
    /// The entry whose key (lower-cased document id) is this.
    Key(String),
    /// Entries whose point (in spatial field `field`) relates to `shape`.
    Spatial {
        /// The spatial field.
        field: String,
        /// The query shape.
        shape: Shape,
        /// How an entry's value must relate to the shape.
        relation: SpatialRelation,
    },
    /// Entries every filter matches.
    And(Vec<Filter>),
    /// Entries any filter matches.
    Or(Vec<Filter>),
    /// Everything except the inner filter, including entries without the field.
    Not(Box<Filter>),
    /// The inner filter with its relevance scores multiplied.
    Boost(Box<Filter>, f32),
}

/// How a sort key compares entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKind {
    /// Ordinal order of the lower-cased term.
    String,
    /// The field's long column.
    Long,
    /// The field's double column.
    Double,
    /// Natural order: digit runs compare by value (`a2 < a10`).
    AlphaNumeric,
    /// Relevance; ascending means most relevant first (RavenDB's `order by score()`).
    Score,
    /// Distance of the spatial field's point from a point (degrees x 10^7, so the key stays `Eq`).
    Distance {
        /// Latitude of the origin, in 10^-7 degrees.
        lat_e7: i64,
        /// Longitude of the origin, in 10^-7 degrees.
        lng_e7: i64,
    },
}

/// A query shape of spatial filters. Coordinates are degrees.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A circle; a point when the radius is 0.
    Circle {
        /// Latitude of the center.
        lat: f64,
        /// Longitude of the center.
        lng: f64,
        /// Radius: kilometres, or coordinate units on cartesian fields.
        radius_km: f64,
    },
    /// Any other WKT geometry (x is the longitude): polygons with holes, lines, their multi forms.
    Geometry(geo::Geometry<f64>),
}

/// How an entry's value relates to the query shape (entry `Within` shape, entry `Contains` shape, ...). For
/// points, `Within`, `Intersects` and `Contains` all mean "the point is in the shape".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpatialRelation {
    /// The entry's value lies inside the shape.
    Within,
    /// The entry's value contains the shape.
    Contains,
    /// The entry's value meets the shape.
    Intersects,
    /// The entry has a value and none of its values meets the shape.
    Disjoint,
}

/// One key of an `order by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    /// The sorted field.
    pub field: String,
    /// How values compare.
    pub kind: SortKind,
    /// Largest first.
    pub descending: bool,
}

/// A page of a search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    /// Keys of the page, in order.
    pub keys: Vec<String>,
    /// Number of matching entries (before paging).
    pub total: usize,
    /// Relevance of each key; 0.0 where the sort did not compute scores.
    pub scores: Vec<f32>,
}

/// Why an index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy failed.
    #[error("index engine error: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// Reading or writing the index's files failed.
    #[error("index I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The index's files cannot be used; it must be rebuilt.
    #[error("index is corrupted or incompatible: {context}")]
    Corrupted {
        /// What was found wrong, and where.
        context: String,
    },
    /// The query asks something the index cannot answer (a field it lacks, mixed bounds, a bad shape).
    #[error("invalid query: {0}")]
    InvalidQuery(String),
}
