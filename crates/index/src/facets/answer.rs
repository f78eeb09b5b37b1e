//! What a caller gets back: per facet, term counts or range counts, with their aggregates.

use crate::facets::aggregate::Aggregate;

/// One term of a term facet.
#[derive(Debug, Clone, PartialEq)]
pub struct TermCount {
    /// The term as indexed (lower-cased unless the field keeps case).
    pub term: String,
    /// Matching entries that have the term.
    pub count: u64,
    /// The request's aggregates over those entries.
    pub aggregates: Vec<Aggregate>,
}

/// The counts of one [`FacetRequest`](crate::FacetRequest), in the same order.
#[derive(Debug, Clone, PartialEq)]
pub enum FacetCounts {
    /// Unordered; the caller sorts and pages.
    Terms(Vec<TermCount>),
    /// (count, aggregates) per range, in the order of the request's ranges.
    Ranges(Vec<(u64, Vec<Aggregate>)>),
}

/// Every facet of a query, and how many entries the query matched.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetAnswer {
    /// Entries the query matched.
    pub total: u64,
    /// One per request, in the order asked.
    pub facets: Vec<FacetCounts>,
}
