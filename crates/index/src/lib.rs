//! Corvid indexes: the only crate that knows tantivy.
//!
//! A [`DocumentIndex`] is one tantivy index in its own directory. The engine hands it mapped documents
//! ([`MappedDocument`]) and asks it [`Filter`] + [`SortKey`] questions; it answers with document keys.
//! How values are turned into index terms (RavenDB's Lucene flavour) is described in `schema.rs` and
//! `entry.rs`.

#![warn(missing_docs)]

mod document_index;
mod entries_digest;
mod entry;
mod error;
mod facets;
mod field_path;
mod filter;
mod mapped_document;
mod merge_priority;
mod query_builder;
mod schema;
mod search_result;
mod soft_sync;
mod sort_collector;
mod sort_key;
mod spatial;
mod spec;
mod terms;

#[cfg(test)]
mod differential_tests;
#[cfg(test)]
mod soft_sync_tests;
#[cfg(test)]
mod tests;

pub use document_index::{DocumentIndex, IndexBatch, RecentSegments, CHECKPOINT_INTERVAL};
pub use entries_digest::EntriesDigest;
pub use error::IndexError;
pub use facets::{Aggregate, FacetAnswer, FacetCounts, FacetRequest, TermCount};
pub use filter::{Filter, Shape, SpatialRelation, Value};
pub use mapped_document::MappedDocument;
pub use schema::Analyzer;
pub use search_result::SearchResult;
pub use sort_key::{SortKey, SortKind};
pub use spatial::{distance_km, parse_wkt, point_of, shape_center, ShapeError, EARTH_RADIUS_KM};
pub use spec::{FieldSpec, IndexSpec, SpatialOptions};
