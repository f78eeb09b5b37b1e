//! Facets: term counts and range counts over the entries a filter matches, with numeric aggregations.
//!
//! All the facets of a query are counted in one pass over its matches: each matching entry adds one to the
//! slot of every term it has in the multi-valued facet column (`f{i}_fv`, a dense array per segment indexed
//! by term ordinal), and tests its numeric column values against every range. Counting every term and every
//! range thus costs about what counting the matches costs; nothing runs a query per term or per range. Only
//! ranges that are not comparisons on numbers (string ranges, `exists`, `or`) run a query of their own.
//!
//! Fields indexed for full-text search (`Indexing: Search`) have no facet column: their facet values are the
//! tokens of the search field. The pass marks the matches in a bitset, and each segment then walks the
//! postings of every token once, counting the marked entries: the tokens of long texts would make a facet
//! column as costly to build as the rest of the index.
//!
//! The parts: what a caller asks and gets back (`request.rs`, `answer.rs`, `aggregate.rs`), how a request is
//! compiled against the schema (`compile.rs`, with numeric ranges as column intervals in `ranges.rs`), the
//! per-segment pass (`segment.rs`), the collector that runs it and merges segments (`collector.rs`), and the
//! entry point [`crate::DocumentIndex::facets`] (`search.rs`).

mod aggregate;
mod answer;
mod collector;
mod compile;
mod ranges;
mod request;
mod search;
mod segment;

pub use aggregate::Aggregate;
pub use answer::{FacetAnswer, FacetCounts, TermCount};
pub use request::FacetRequest;
