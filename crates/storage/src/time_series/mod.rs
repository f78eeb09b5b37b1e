//! Time series: entries of a (document, series) grouped in compressed segments (`segment`), one stats row per
//! series, reads of a range on any transaction and writes in the merger's. Tables and key layouts are in
//! docs/storage-format.md.

mod keys;
mod read;
mod segment;
mod series_stats;
mod write;

pub use segment::{TimeSeriesEntry, MAX_VALUES};
pub use series_stats::TimeSeriesStats;
pub use write::sorted_unique;

pub(crate) use keys::split_segment_key;

/// The `time_series` key of the segment of a series (lower-cased name) starting at `start`.
pub(crate) fn segment_row_key(doc_key: &str, name_lower: &str, start: i64) -> Vec<u8> {
    keys::segment_key(&keys::segment_prefix(doc_key, name_lower), start)
}
pub(crate) use segment::{decode_segment, entry_count};
pub(crate) use series_stats::decode as decode_stats;
