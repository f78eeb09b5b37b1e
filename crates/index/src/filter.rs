//! The questions an index answers: which entries a search, a count or a facet considers.

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

/// Which entries a search, a count or a facet considers. `field` is always a field path of the [`IndexSpec`](crate::IndexSpec).
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
