//! The stats row of a series (`time_series_stats`): its name as first written, the number of entries and the
//! first and last timestamps, kept by every write so metadata, stats and reads need no scan of segments.

use crate::codec::{Reader, Writer};
use crate::tables;
use crate::StorageError;

/// One series of a document: its name and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSeriesStats {
    /// As first written (names compare case-insensitively).
    pub name: String,
    /// Number of entries.
    pub count: u64,
    /// Timestamp of the first entry, unix milliseconds.
    pub start: i64,
    /// Timestamp of the last entry, unix milliseconds.
    pub end: i64,
}

/// Layout: count u64, start i64, end i64 (big-endian), name as a u16-length string.
pub(crate) fn encode(stats: &TimeSeriesStats) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(26 + stats.name.len()));
    w.0.extend_from_slice(&stats.count.to_be_bytes());
    w.0.extend_from_slice(&stats.start.to_be_bytes());
    w.0.extend_from_slice(&stats.end.to_be_bytes());
    w.str16(&stats.name);
    w.0
}

/// Reads the layout `encode` writes.
pub(crate) fn decode(bytes: &[u8]) -> Result<TimeSeriesStats, StorageError> {
    let mut r = Reader { bytes, table: tables::TIME_SERIES_STATS };
    Ok(TimeSeriesStats { count: r.u64()?, start: r.u64()? as i64, end: r.u64()? as i64, name: r.str16()? })
}
