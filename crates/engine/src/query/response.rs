//! What a query answers: results as wire JSON, includes and the statistics RavenDB's clients read.

use crate::CounterDetail;

/// The highlighted fragments of one document (or group key).
pub type Fragments = (String, Vec<String>);

/// The answer to one query.
#[derive(Debug, Clone, Default)]
pub struct QueryResponse {
    /// Wire JSON of each result (documents with `@metadata`, or projections).
    pub results: Vec<String>,
    /// Included documents: (id, wire JSON).
    pub includes: Vec<(String, String)>,
    /// The paths the query included documents from.
    pub included_paths: Vec<String>,
    /// `include counters(...)`: per result document, its counters (None for a named one it lacks).
    pub counter_includes: Option<Vec<(String, Vec<Option<CounterDetail>>)>>,
    /// `include cmpxchg(...)`: each key met once, with its value (None where missing).
    pub compare_exchange_includes: Option<Vec<(String, Option<crate::CompareExchangeValue>)>>,
    /// `include timeseries(...)`: per result document (its stored id), the included ranges.
    pub time_series_includes: Option<Vec<(String, Vec<crate::time_series::TimeSeriesRange>)>>,
    /// The counter names asked per document (empty: all), as RavenDB's `IncludedCounterNames`.
    pub included_counter_names: Vec<(String, Vec<String>)>,
    /// Every match, before paging.
    pub total_results: u64,
    /// Matches left out (RavenDB's `SkippedResults`).
    pub skipped_results: u64,
    /// `filter` queries: how many documents the filter evaluated (RavenDB's `ScannedResults`).
    pub scanned_results: Option<u64>,
    /// The index that answered (`collection/<name>` for collection scans).
    pub index_name: String,
    /// The index had not processed every write when the query ran.
    pub is_stale: bool,
    /// When the index last indexed (nanoseconds since the epoch).
    pub index_timestamp: i64,
    /// When the query ran (nanoseconds since the epoch).
    pub last_query_time: i64,
    /// Changes whenever the results would (RavenDB's `ResultEtag`).
    pub result_etag: u64,
    /// `include highlight(...)`: per field, per document id (or group key), the fragments.
    pub highlightings: Vec<(String, Vec<Fragments>)>,
    /// `include explanations()`: per document id, how its score came about.
    pub explanations: Vec<(String, Vec<String>)>,
    /// `include timings()` was asked.
    pub timings: bool,
}
