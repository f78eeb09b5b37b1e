//! Series included with loaded documents (`GET /docs?...&timeseries=`): a range by dates, the last span of
//! time before a series' last entry, or its last entries (those two open to the end of time), per document, as the session's range cache takes
//! them (`TimeSeriesIncludes`).

use corvid_types::{id_key, MIN_DATE_MS};
use time::{Duration, OffsetDateTime};

use super::range::{read_range, TimeSeriesRange, TimeSeriesRangeRequest};
use crate::{Database, EngineError};

/// What part of a series to include.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeSeriesInclude {
    /// Entries between two dates (`None` = open).
    Range(TimeSeriesRangeRequest),
    /// Entries of the last `seconds` before (and at) the series' last entry.
    LastSeconds {
        /// The series.
        name: String,
        /// How far back.
        seconds: i64,
    },
    /// Entries of the last `months` calendar months before (and at) the series' last entry.
    LastMonths {
        /// The series.
        name: String,
        /// How far back.
        months: i64,
    },
    /// The last `count` entries.
    LastCount {
        /// The series.
        name: String,
        /// How many.
        count: usize,
    },
}

/// The series name the clients send to include every series of a document (`include_all_time_series_by_*`).
pub const ALL_TIME_SERIES: &str = "@all_timeseries";

impl TimeSeriesInclude {
    /// The same include for series `name`.
    fn for_series(&self, name: &str) -> TimeSeriesInclude {
        let name = name.to_owned();
        match self {
            TimeSeriesInclude::Range(r) => TimeSeriesInclude::Range(TimeSeriesRangeRequest { name, ..r.clone() }),
            TimeSeriesInclude::LastSeconds { seconds, .. } => TimeSeriesInclude::LastSeconds { name, seconds: *seconds },
            TimeSeriesInclude::LastMonths { months, .. } => TimeSeriesInclude::LastMonths { name, months: *months },
            TimeSeriesInclude::LastCount { count, .. } => TimeSeriesInclude::LastCount { name, count: *count },
        }
    }

    fn name(&self) -> &str {
        match self {
            TimeSeriesInclude::Range(r) => &r.name,
            TimeSeriesInclude::LastSeconds { name, .. }
            | TimeSeriesInclude::LastMonths { name, .. }
            | TimeSeriesInclude::LastCount { name, .. } => name,
        }
    }
}

/// `end` moved back by `months` calendar months (the day clamped to the month's length).
fn months_before(end_ms: i64, months: i64) -> i64 {
    let Ok(end) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(end_ms) * 1_000_000) else { return MIN_DATE_MS };
    let total = i64::from(end.year()) * 12 + i64::from(u8::from(end.month())) - 1 - months;
    let (year, month) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let Ok(month) = time::Month::try_from(month as u8) else { return MIN_DATE_MS };
    let Ok(year) = i32::try_from(year) else { return MIN_DATE_MS };
    let day = end.day().min(month.length(year));
    match time::Date::from_calendar_date(year, month, day) {
        Ok(date) => {
            let moved = date.with_time(end.time()).assume_utc();
            i64::try_from(moved.unix_timestamp_nanos() / 1_000_000).unwrap_or(MIN_DATE_MS).max(MIN_DATE_MS)
        }
        Err(_) => MIN_DATE_MS,
    }
}

impl Database {
    /// The included series of each document that exists (by its stored id), each include as one range; a
    /// series the document lacks is an empty range.
    pub fn time_series_includes(
        &self,
        ids: &[String],
        includes: &[TimeSeriesInclude],
    ) -> Result<Vec<(String, Vec<TimeSeriesRange>)>, EngineError> {
        series_of_documents(&self.store.read()?, ids, includes)
    }
}

/// [`Database::time_series_includes`] on a given snapshot (a subscription batch reads its documents and
/// their series from one).
pub(crate) fn series_of_documents(
    snapshot: &corvid_storage::ReadTxn<'_>,
    ids: &[String],
    includes: &[TimeSeriesInclude],
) -> Result<Vec<(String, Vec<TimeSeriesRange>)>, EngineError> {
    let mut out = Vec::new();
    for id in ids {
        let key = id_key(id);
        let Some(doc) = snapshot.document(&key)? else { continue };
        let mut ranges = Vec::with_capacity(includes.len());
        let mut expanded = Vec::with_capacity(includes.len());
        for include in includes {
            if include.name().eq_ignore_ascii_case(ALL_TIME_SERIES) {
                expanded.extend(snapshot.time_series_of(&key)?.iter().map(|series| include.for_series(&series.name)));
            } else {
                expanded.push(include.clone());
            }
        }
        for include in &expanded {
            let Some(stats) = snapshot.time_series_stats(&key, include.name())? else {
                let request = match include {
                    TimeSeriesInclude::Range(r) => r.clone(),
                    other => TimeSeriesRangeRequest { name: other.name().to_owned(), from: None, to: None },
                };
                ranges.push(TimeSeriesRange {
                    name: request.name,
                    from: request.from,
                    to: request.to,
                    entries: Vec::new(),
                    total_results: None,
                });
                continue;
            };
            let request = match include {
                TimeSeriesInclude::Range(r) => r.clone(),
                TimeSeriesInclude::LastSeconds { name, seconds } => {
                    let from = Duration::seconds(*seconds).whole_milliseconds();
                    let from = i64::try_from(i128::from(stats.end) - from).unwrap_or(MIN_DATE_MS).max(MIN_DATE_MS);
                    TimeSeriesRangeRequest { name: name.clone(), from: Some(from), to: None }
                }
                TimeSeriesInclude::LastMonths { name, months } => {
                    TimeSeriesRangeRequest { name: name.clone(), from: Some(months_before(stats.end, *months)), to: None }
                }
                TimeSeriesInclude::LastCount { name, count } => {
                    let from = snapshot.time_series_nth_from_end(&key, name, *count)?;
                    TimeSeriesRangeRequest { name: name.clone(), from, to: None }
                }
            };
            let (mut start, mut page_size) = (0, usize::MAX);
            ranges.extend(read_range(snapshot, &key, &stats, &request, &mut start, &mut page_size)?);
        }
        out.push((doc.id, ranges));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_back_clamp_the_day() {
        // 2024-03-31T12:00Z minus one month is 2024-02-29T12:00Z.
        assert_eq!(months_before(1_711_886_400_000, 1), 1_709_208_000_000);
        assert_eq!(months_before(1_711_886_400_000, 12), 1_680_264_000_000);
    }
}
