//! How a search orders its matches.

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
