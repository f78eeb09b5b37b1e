//! Aggregating entries into rollup windows. A window of raw entries becomes one entry at the window's start with
//! six values per raw value, interleaved as RavenDB lays them out (`values[i * 6 + k]`, k = First, Last, Min,
//! Max, Sum, Count); a window of rollup entries aggregates each of those six by its kind (counts are summed).

use corvid_storage::TimeSeriesEntry;

use super::config::MAX_ROLLUP_SOURCE_VALUES;
use super::time_value::TimeValue;

/// The six aggregations of a rollup entry, in RavenDB's order.
const KINDS: usize = 6;
const FIRST: usize = 0;
const LAST: usize = 1;
const MIN: usize = 2;
const MAX: usize = 3;
const SUM: usize = 4;
const COUNT: usize = 5;

/// Why a series cannot be rolled up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RollupError {
    /// A raw entry has more than five values (a rollup entry would exceed 32).
    #[error("Rollup more than 5 values is not supported. The number of values is {0}, so an aggregated entry will contain {1} values, which will exceed the allowed 32 values per time-series entry.")]
    TooManyValues(usize, usize),
}

/// Folds one value into slot `slot` of an aggregate whose kind is `kind`.
fn fold(slots: &mut [Option<f64>], slot: usize, kind: usize, value: f64, count_of_raw: bool) {
    let current = slots[slot];
    slots[slot] = Some(match (kind, current) {
        (FIRST, Some(first)) => first,
        (FIRST | LAST, _) => value,
        (MIN, Some(min)) => min.min(value),
        (MAX, Some(max)) => max.max(value),
        (MIN | MAX, None) => value,
        (COUNT, c) if count_of_raw => c.unwrap_or(0.0) + 1.0,
        (SUM | COUNT, s) => s.unwrap_or(0.0) + value,
        (_, s) => s.unwrap_or(value),
    });
}

/// Aggregates `entries` (timestamp order) into one entry per window of `aggregation`; `from_rollup` when they
/// are themselves rollup entries.
pub fn roll_up(entries: &[TimeSeriesEntry], aggregation: TimeValue, from_rollup: bool) -> Result<Vec<TimeSeriesEntry>, RollupError> {
    let mut out = Vec::new();
    let mut window: Option<(i64, i64)> = None;
    let mut slots: Vec<Option<f64>> = Vec::new();
    let mut flush = |start: i64, slots: &mut Vec<Option<f64>>| {
        if !slots.is_empty() {
            // Every slot up to the widest entry was set by some entry of the window.
            let values = slots.drain(..).map(|s| s.unwrap_or(0.0)).collect();
            out.push(TimeSeriesEntry { timestamp: start, values, tag: None });
        }
    };
    for entry in entries {
        if window.is_none_or(|(_, end)| entry.timestamp >= end) {
            if let Some((start, _)) = window {
                flush(start, &mut slots);
            }
            window = Some((aggregation.window_start(entry.timestamp), aggregation.next_window(entry.timestamp)));
        }
        if from_rollup {
            if slots.len() < entry.values.len() {
                slots.resize(entry.values.len(), None);
            }
            for (i, value) in entry.values.iter().enumerate() {
                fold(&mut slots, i, i % KINDS, *value, false);
            }
        } else {
            if entry.values.len() > MAX_ROLLUP_SOURCE_VALUES {
                return Err(RollupError::TooManyValues(entry.values.len(), entry.values.len() * KINDS));
            }
            if slots.len() < entry.values.len() * KINDS {
                slots.resize(entry.values.len() * KINDS, None);
            }
            for (i, value) in entry.values.iter().enumerate() {
                for kind in 0..KINDS {
                    fold(&mut slots, i * KINDS + kind, kind, *value, true);
                }
            }
        }
    }
    if let Some((start, _)) = window {
        flush(start, &mut slots);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(timestamp: i64, values: &[f64]) -> TimeSeriesEntry {
        TimeSeriesEntry { timestamp, values: values.to_vec(), tag: None }
    }

    #[test]
    fn raw_entries_become_first_last_min_max_sum_count() {
        let minute = 60_000;
        let entries: Vec<_> = (0..120).map(|m| e(m * minute, &[m as f64, 1.0])).collect();
        let hourly = roll_up(&entries, TimeValue::Seconds(3600), false).unwrap();
        assert_eq!(hourly.len(), 2);
        assert_eq!(hourly[1].timestamp, 3_600_000);
        assert_eq!(hourly[0].values, vec![0.0, 59.0, 0.0, 59.0, 1770.0, 60.0, 1.0, 1.0, 1.0, 1.0, 60.0, 60.0]);
        let two_hours = roll_up(&hourly, TimeValue::Seconds(7200), true).unwrap();
        assert_eq!(two_hours[0].values[..6], [0.0, 119.0, 0.0, 119.0, (0..120).sum::<i64>() as f64, 120.0]);
    }

    #[test]
    fn more_than_five_values_are_refused() {
        assert!(roll_up(&[e(0, &[1.0; 6])], TimeValue::Seconds(60), false).is_err());
    }
}
