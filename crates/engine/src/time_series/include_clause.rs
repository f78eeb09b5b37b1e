//! The arguments of `timeseries(...)` in an `include` clause, as the clients write them (queries and
//! subscriptions): `'Name'`, `'Name', from, to` (dates or null), `'Name', last(N)` (entries) and
//! `'Name', last(N, 'Second'|'Month')` (also minutes, hours, days and years).

use corvid_rql::{Arg, Call, Value, ValueKind};
use corvid_types::parse_date_ms;

use super::includes::TimeSeriesInclude;
use super::range::TimeSeriesRangeRequest;

/// What `timeseries(args)` includes; None when the arguments are none of the forms above.
pub(crate) fn parse_include(args: &[Arg]) -> Option<TimeSeriesInclude> {
    let Some((Arg::Value(Value { kind: ValueKind::String(name), .. }), rest)) = args.split_first() else {
        return None;
    };
    Some(match rest {
        [] => TimeSeriesInclude::Range(TimeSeriesRangeRequest { name: name.clone(), from: None, to: None }),
        [Arg::Call(last)] if last.is("last") => last_range(name, last)?,
        [from, to] => TimeSeriesInclude::Range(TimeSeriesRangeRequest { name: name.clone(), from: date_bound(from)?, to: date_bound(to)? }),
        _ => return None,
    })
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
        [Arg::Value(Value { kind: ValueKind::String(unit), .. })] => {
            // The clients send `Second` or `Month` (a TimeValue); RQL written by hand may name other units.
            let unit = unit.to_ascii_lowercase();
            let unit = unit.trim_end_matches('s');
            let seconds = match unit {
                "second" => Some(1),
                "minute" => Some(60),
                "hour" => Some(3600),
                "day" => Some(86_400),
                _ => None,
            };
            match (seconds, unit) {
                (Some(per), _) => Some(TimeSeriesInclude::LastSeconds { name, seconds: count.checked_mul(per)? }),
                (None, "month") => Some(TimeSeriesInclude::LastMonths { name, months: count }),
                (None, "year") => Some(TimeSeriesInclude::LastMonths { name, months: count.checked_mul(12)? }),
                _ => None,
            }
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
