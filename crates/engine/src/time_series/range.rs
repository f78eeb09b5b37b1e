//! Reading series: ranges with RavenDB's paging (`start` and `pageSize` shared by every range of a request,
//! `TotalResults` when a range covers the whole series) and per-document stats, each from one snapshot.

use corvid_storage::{ReadTxn, TimeSeriesEntry, TimeSeriesStats};
use corvid_types::{id_key, validate_name, NameKind};

use crate::{Database, EngineError};

/// One range asked for: a series and its bounds (unix milliseconds; `None` is open).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesRangeRequest {
    /// The series.
    pub name: String,
    /// First timestamp, or from the beginning.
    pub from: Option<i64>,
    /// Last timestamp, or to the end.
    pub to: Option<i64>,
}

/// The entries of one range, as RavenDB's `TimeSeriesRangeResult` reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesRange {
    /// The series, as asked for.
    pub name: String,
    /// Where the returned entries start (`None`: the beginning of time).
    pub from: Option<i64>,
    /// Where they end (`None`: the end of time); the last entry's timestamp when the page cut the range.
    pub to: Option<i64>,
    /// The entries, in timestamp order.
    pub entries: Vec<TimeSeriesEntry>,
    /// The series' entry count, when the range covers all of it.
    pub total_results: Option<u64>,
}

/// Reads one range, taking `start` entries to skip and `page_size` entries to return from the counters the
/// request's ranges share; None when the page is already full (RavenDB leaves such ranges out).
pub(crate) fn read_range(
    snapshot: &ReadTxn<'_>,
    key: &str,
    stats: &TimeSeriesStats,
    request: &TimeSeriesRangeRequest,
    start: &mut usize,
    page_size: &mut usize,
) -> Result<Option<TimeSeriesRange>, EngineError> {
    if *page_size == 0 {
        return Ok(None);
    }
    let (from, to) = (request.from.unwrap_or(i64::MIN), request.to.unwrap_or(i64::MAX));
    let initial_start = *start;
    let mut entries = Vec::new();
    let mut has_more = false;
    let mut last_seen = request.from;
    snapshot.visit_time_series(key, &request.name, from, to, |entry| {
        last_seen = Some(entry.timestamp);
        if *start > 0 {
            *start -= 1;
            return true;
        }
        if *page_size == 0 {
            has_more = true;
            return false;
        }
        *page_size -= 1;
        entries.push(entry);
        true
    })?;
    let range_from = if initial_start > 0 { entries.first().map(|e| Some(e.timestamp)).unwrap_or(last_seen) } else { request.from };
    let range_to = if has_more { entries.last().map(|e| e.timestamp) } else { request.to };
    let total_results = (from <= stats.start && to >= stats.end).then_some(stats.count);
    Ok(Some(TimeSeriesRange { name: request.name.clone(), from: range_from, to: range_to, entries, total_results }))
}

impl Database {
    /// Ranges of series of one document, paged together (`start` entries skipped, at most `page_size`
    /// returned over all ranges). None when the document has no series of one of the names (RavenDB's 404).
    pub fn time_series_ranges(
        &self,
        id: &str,
        requests: &[TimeSeriesRangeRequest],
        mut start: usize,
        mut page_size: usize,
    ) -> Result<Option<Vec<TimeSeriesRange>>, EngineError> {
        for request in requests {
            validate_name(NameKind::TimeSeries, &request.name)?;
        }
        let snapshot = self.store.read()?;
        let key = id_key(id);
        let mut stats = Vec::with_capacity(requests.len());
        for request in requests {
            match snapshot.time_series_stats(&key, &request.name)? {
                Some(s) => stats.push(s),
                None => return Ok(None),
            }
        }
        let mut out = Vec::with_capacity(requests.len());
        for (request, stats) in requests.iter().zip(&stats) {
            match read_range(&snapshot, &key, stats, request, &mut start, &mut page_size)? {
                Some(range) => out.push(range),
                None => break,
            }
        }
        Ok(Some(out))
    }

    /// The series of a document, sorted by name (case-insensitively) as `@timeseries` lists them; None when
    /// the document does not exist.
    pub fn time_series_stats(&self, id: &str) -> Result<Option<(String, Vec<TimeSeriesStats>)>, EngineError> {
        let snapshot = self.store.read()?;
        let key = id_key(id);
        let Some(doc) = snapshot.document(&key)? else { return Ok(None) };
        let mut series = snapshot.time_series_of(&key)?;
        series.sort_by_key(|s| s.name.to_lowercase());
        Ok(Some((doc.id, series)))
    }
}
