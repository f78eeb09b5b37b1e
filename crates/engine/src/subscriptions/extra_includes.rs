//! The counters and time series a subscription's query includes with each document it sends
//! (`include counters()`, `include counters('Likes')`, `include timeseries('HeartRate', last(1, 'Month'))`),
//! read from the `include` clause as the clients write it.

use corvid_rql::{Arg, Call, Value, ValueKind};

use crate::time_series::{parse_include, TimeSeriesInclude};
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
        self.time_series.push(parse_include(&call.args).ok_or_else(|| invalid(usage))?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_series::TimeSeriesRangeRequest;
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
