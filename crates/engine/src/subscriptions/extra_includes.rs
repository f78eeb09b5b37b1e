//! The counters and time series a subscription's query includes with each document it sends
//! (`include counters()`, `include counters('Likes')`, `include timeseries('HeartRate', last(1, 'Month'))`),
//! read from the `include` clause as the clients write it.

use corvid_rql::{Arg, Call, Value, ValueKind};
use corvid_types::parse_date_ms;

use crate::time_series::{TimeSeriesInclude, TimeSeriesRangeRequest};
use crate::EngineError;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidQuery { message: message.into() }
}

/// What a subscription includes besides documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtraIncludes {
    /// `None`: no counters; `Some(empty)`: every counter of each document; otherwise these names.
    pub counters: Option<Vec<String>>,
    /// The series ranges included with each document.
    pub time_series: Vec<TimeSeriesInclude>,
}

impl ExtraIncludes {
    /// True when nothing besides documents is included.
    pub fn is_empty(&self) -> bool {
        self.counters.is_none() && self.time_series.is_empty()
    }

    /// Adds `counters(...)`: no name means all of them, and all wins over a list.
    pub(crate) fn add_counters(&mut self, call: &Call) -> Result<(), EngineError> {
        let mut names = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            match arg {
                Arg::Value(Value { kind: ValueKind::String(name), .. }) => names.push(name.clone()),
                _ => return Err(invalid("A subscription includes counters by name: counters() or counters('Name')")),
            }
        }
        self.counters = match self.counters.take() {
            Some(list) if list.is_empty() => Some(list),
            _ if names.is_empty() => Some(Vec::new()),
            Some(mut list) => {
                list.extend(names);
                Some(list)
            }
            None => Some(names),
        };
        Ok(())
    }

    /// Adds `timeseries('Name'[, from, to])` or `timeseries('Name', last(N[, 'Unit']))`.
    pub(crate) fn add_time_series(&mut self, call: &Call) -> Result<(), EngineError> {
        let usage = "A subscription includes time series as timeseries('Name'), timeseries('Name', from, to), \
                     timeseries('Name', last(N, 'Second'|'Month')) or timeseries('Name', last(N))";
        let Some((Arg::Value(Value { kind: ValueKind::String(name), .. }), rest)) = call.args.split_first() else {
            return Err(invalid(usage));
        };
        let include = match rest {
            [] => TimeSeriesInclude::Range(TimeSeriesRangeRequest { name: name.clone(), from: None, to: None }),
            [Arg::Call(last)] if last.is("last") => last_range(name, last).ok_or_else(|| invalid(usage))?,
            [from, to] => TimeSeriesInclude::Range(TimeSeriesRangeRequest {
                name: name.clone(),
                from: date_bound(from).ok_or_else(|| invalid(usage))?,
                to: date_bound(to).ok_or_else(|| invalid(usage))?,
            }),
            _ => return Err(invalid(usage)),
        };
        self.time_series.push(include);
        Ok(())
    }
}

/// `last(N)` (entries) or `last(N, 'Second'|'Month')` (time before the last entry).
fn last_range(name: &str, last: &Call) -> Option<TimeSeriesInclude> {
    let count = match last.args.first()? {
        Arg::Value(Value { kind: ValueKind::Long(n), .. }) if *n >= 0 => *n,
        _ => return None,
    };
    let name = name.to_owned();
    match last.args.get(1..)? {
        [] => Some(TimeSeriesInclude::LastCount { name, count: usize::try_from(count).ok()? }),
        [Arg::Value(Value { kind: ValueKind::String(unit), .. })] if unit.eq_ignore_ascii_case("Second") => {
            Some(TimeSeriesInclude::LastSeconds { name, seconds: count })
        }
        [Arg::Value(Value { kind: ValueKind::String(unit), .. })] if unit.eq_ignore_ascii_case("Month") => {
            Some(TimeSeriesInclude::LastMonths { name, months: count })
        }
        _ => None,
    }
}

/// A range bound: a date string, or null for an open end. `None` when it is neither.
fn date_bound(arg: &Arg) -> Option<Option<i64>> {
    match arg {
        Arg::Value(Value { kind: ValueKind::Null, .. }) => Some(None),
        Arg::Value(Value { kind: ValueKind::String(text), .. }) => parse_date_ms(text).map(Some),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_rql::IncludeItem;

    fn includes(text: &str) -> Result<ExtraIncludes, EngineError> {
        let query = corvid_rql::parse(text).unwrap();
        let mut extra = ExtraIncludes::default();
        for item in &query.include {
            let IncludeItem::Call(call) = item else { continue };
            if call.is("counters") {
                extra.add_counters(call)?;
            } else {
                extra.add_time_series(call)?;
            }
        }
        Ok(extra)
    }

    #[test]
    fn counters_and_series_as_the_clients_write_them() {
        let extra = includes("from Companies as doc include counters('Likes'),counters('Dislikes')").unwrap();
        assert_eq!(extra.counters, Some(vec!["Likes".into(), "Dislikes".into()]));
        assert_eq!(includes("from C include counters('A'), counters()").unwrap().counters, Some(vec![]));
        let extra = includes("from C include timeseries('Heart', last(1, 'Month')), timeseries('Heart', last(3))").unwrap();
        assert_eq!(
            extra.time_series,
            vec![
                TimeSeriesInclude::LastMonths { name: "Heart".into(), months: 1 },
                TimeSeriesInclude::LastCount { name: "Heart".into(), count: 3 }
            ]
        );
        let extra = includes("from C include timeseries('Heart', '2024-01-01T00:00:00.0000000Z', null)").unwrap();
        assert_eq!(
            extra.time_series,
            vec![TimeSeriesInclude::Range(TimeSeriesRangeRequest { name: "Heart".into(), from: Some(1_704_067_200_000), to: None })]
        );
    }

    #[test]
    fn shapes_the_subscription_cannot_serve_are_refused_with_the_usage() {
        for text in [
            "from C include timeseries(Heart)",
            "from C include timeseries('Heart', last(1, 'Week'))",
            "from C include timeseries('Heart', 'not a date', null)",
            "from C include counters(Company, 'Likes')",
        ] {
            assert!(matches!(includes(text), Err(EngineError::InvalidQuery { .. })), "{text}");
        }
    }
}
