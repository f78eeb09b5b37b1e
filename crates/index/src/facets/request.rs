//! What a caller asks: one [`FacetRequest`] per facet of a query.

use crate::Filter;

/// One facet of a query.
#[derive(Debug, Clone, Copy)]
pub enum FacetRequest<'a> {
    /// Every term of `field`, with aggregates of `aggregate_fields` per term.
    Terms {
        /// The faceted field.
        field: &'a str,
        /// Fields aggregated per term.
        aggregate_fields: &'a [String],
    },
    /// How many entries fall in each range (a document counts in every range it matches); `Filter::All`
    /// stands for every match (`@AllResults`).
    Ranges {
        /// The ranges, as filters.
        ranges: &'a [Filter],
        /// Fields aggregated per range.
        aggregate_fields: &'a [String],
    },
}
