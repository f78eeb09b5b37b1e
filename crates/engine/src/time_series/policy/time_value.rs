//! RavenDB's `TimeValue` (`{"Value": n, "Unit": "Second" | "Month" | "None"}`) as policies use it: a span of
//! seconds or of calendar months, `Zero`, or the unlimited `MaxValue`; and the windows a policy aggregates into.
//! Fixed windows are aligned as RavenDB aligns them (multiples of the span since 0001-01-01, which for spans that
//! divide a day is the same as since the epoch); month windows on calendar months.

use serde_json::{json, Value};
use time::{Date, Month, OffsetDateTime};

/// Milliseconds from 0001-01-01 to 1970-01-01 (.NET ticks start at the former).
const DOTNET_EPOCH_OFFSET_MS: i64 = 62_135_596_800_000;

/// A span of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeValue {
    /// A number of seconds.
    Seconds(i64),
    /// A number of calendar months.
    Months(i64),
    /// `Unit: "None"`: zero, or `MaxValue` (unlimited) when the value is `i32::MAX`.
    Unbounded(i64),
}

impl TimeValue {
    /// `TimeValue.MaxValue`: keep forever.
    pub const MAX: TimeValue = TimeValue::Unbounded(i32::MAX as i64);

    /// Reads `{"Value", "Unit"}`; None when it is not one.
    pub fn from_json(value: &Value) -> Option<TimeValue> {
        let amount = value.get("Value")?.as_i64()?;
        match value.get("Unit")?.as_str()? {
            "Second" => Some(TimeValue::Seconds(amount)),
            "Month" => Some(TimeValue::Months(amount)),
            "None" => Some(TimeValue::Unbounded(amount)),
            _ => None,
        }
    }

    /// As the clients send it.
    pub fn to_json(self) -> Value {
        match self {
            TimeValue::Seconds(v) => json!({"Value": v, "Unit": "Second"}),
            TimeValue::Months(v) => json!({"Value": v, "Unit": "Month"}),
            TimeValue::Unbounded(v) => json!({"Value": v, "Unit": "None"}),
        }
    }

    /// Whether this is `MaxValue` (no retention limit).
    pub fn is_unlimited(self) -> bool {
        matches!(self, TimeValue::Unbounded(v) if v == i32::MAX as i64)
    }

    /// Whether it is a positive span (or `MaxValue`).
    pub fn is_positive(self) -> bool {
        match self {
            TimeValue::Seconds(v) | TimeValue::Months(v) | TimeValue::Unbounded(v) => v > 0,
        }
    }

    /// Bounds in seconds (a month is 28 to 31 days), for comparing spans of different units as RavenDB does.
    fn bounds_in_seconds(self) -> (i64, i64) {
        match self {
            TimeValue::Seconds(v) => (v, v),
            TimeValue::Months(v) => {
                // Whole years are 365 or 366 days, the months left 28 to 31 (the clients' bounds).
                let (years, months) = (v / 12, v % 12);
                let day = 86_400i64;
                (years * 365 * day + months * 28 * day, years * 366 * day + months * 31 * day)
            }
            TimeValue::Unbounded(v) if v == i32::MAX as i64 => (i64::MAX, i64::MAX),
            TimeValue::Unbounded(v) => (v, v),
        }
    }

    /// Orders two spans; None when a month count and a number of seconds overlap (not comparable).
    pub fn compare(self, other: TimeValue) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering;
        match (self, other) {
            (TimeValue::Seconds(a), TimeValue::Seconds(b)) | (TimeValue::Months(a), TimeValue::Months(b)) => Some(a.cmp(&b)),
            _ => {
                let ((a_low, a_high), (b_low, b_high)) = (self.bounds_in_seconds(), other.bounds_in_seconds());
                if a_low == b_low && a_high == b_high {
                    Some(Ordering::Equal)
                } else if a_high < b_low {
                    Some(Ordering::Less)
                } else if a_low > b_high {
                    Some(Ordering::Greater)
                } else {
                    None
                }
            }
        }
    }

    /// Whether `next` is a whole multiple of this span (a policy rolls up whole windows of the previous one).
    pub fn divides(self, next: TimeValue) -> bool {
        match (self, next) {
            (TimeValue::Seconds(a), TimeValue::Seconds(b)) | (TimeValue::Months(a), TimeValue::Months(b)) => a > 0 && b % a == 0,
            // Windows of a whole number of days tile every month.
            (TimeValue::Seconds(a), TimeValue::Months(_)) => a > 0 && 86_400 % a == 0,
            _ => false,
        }
    }

    /// `RavenDB`'s rendering in messages (`"1 hour"`, `"2 months"`, `"MaxValue"`).
    pub fn describe(self) -> String {
        let plural = |n: i64, unit: &str| if n == 1 { format!("{n} {unit}") } else { format!("{n} {unit}s") };
        match self {
            _ if self.is_unlimited() => "MaxValue".into(),
            TimeValue::Unbounded(0) | TimeValue::Seconds(0) | TimeValue::Months(0) => "Zero".into(),
            TimeValue::Unbounded(_) => "Unknown time unit".into(),
            TimeValue::Seconds(mut s) => {
                let mut parts = Vec::new();
                for (size, unit) in [(86_400, "day"), (3_600, "hour"), (60, "minute")] {
                    if s >= size {
                        parts.push(plural(s / size, unit));
                        s %= size;
                    }
                }
                if s > 0 {
                    parts.push(plural(s, "second"));
                }
                parts.join(" ")
            }
            TimeValue::Months(m) => {
                let mut parts = Vec::new();
                if m >= 12 {
                    parts.push(plural(m / 12, "year"));
                }
                if m % 12 > 0 {
                    parts.push(plural(m % 12, "month"));
                }
                parts.join(" ")
            }
        }
    }

    /// `at` minus this span (unix milliseconds); `i64::MIN` for `MaxValue`. Months keep the day of the month
    /// where it exists (the last day otherwise), as .NET's `AddMonths`.
    pub fn before(self, at: i64) -> i64 {
        match self {
            _ if self.is_unlimited() => i64::MIN,
            TimeValue::Seconds(v) | TimeValue::Unbounded(v) => at.saturating_sub(v.saturating_mul(1000)),
            TimeValue::Months(v) => add_months(at, -v),
        }
    }

    /// The start of the window of this span holding `at` (unix milliseconds).
    pub fn window_start(self, at: i64) -> i64 {
        match self {
            TimeValue::Seconds(v) if v > 0 => {
                let span = v * 1000;
                (at + DOTNET_EPOCH_OFFSET_MS).div_euclid(span) * span - DOTNET_EPOCH_OFFSET_MS
            }
            TimeValue::Months(v) if v > 0 => match month_index(at) {
                Some(index) => month_start(index.div_euclid(v) * v),
                None => at,
            },
            _ => at,
        }
    }

    /// The start of the window after the one holding `at`.
    pub fn next_window(self, at: i64) -> i64 {
        let start = self.window_start(at);
        match self {
            TimeValue::Seconds(v) if v > 0 => start + v * 1000,
            TimeValue::Months(v) if v > 0 => match month_index(start) {
                Some(index) => month_start(index + v),
                None => i64::MAX,
            },
            _ => i64::MAX,
        }
    }

    /// The first window start at or after `at`.
    pub fn window_at_or_after(self, at: i64) -> i64 {
        let start = self.window_start(at);
        if start == at {
            at
        } else {
            self.next_window(at)
        }
    }
}

fn month_index(at: i64) -> Option<i64> {
    let moment = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000).ok()?;
    Some(i64::from(moment.year()) * 12 + i64::from(u8::from(moment.month())) - 1)
}

/// Unix milliseconds of the first instant of month number `index` (year * 12 + month - 1).
fn month_start(index: i64) -> i64 {
    let year = index.div_euclid(12) as i32;
    let month = Month::try_from(index.rem_euclid(12) as u8 + 1).unwrap_or(Month::January);
    Date::from_calendar_date(year, month, 1)
        .map(|d| (d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(i64::MIN)
}

fn add_months(at: i64, months: i64) -> i64 {
    let Ok(moment) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000) else { return i64::MIN };
    let index = i64::from(moment.year()) * 12 + i64::from(u8::from(moment.month())) - 1 + months;
    let (year, month) = (index.div_euclid(12) as i32, Month::try_from(index.rem_euclid(12) as u8 + 1).unwrap_or(Month::January));
    let day = moment.day().min(month.length(year));
    match Date::from_calendar_date(year, month, day) {
        Ok(date) => (moment.replace_date(date).unix_timestamp_nanos() / 1_000_000) as i64,
        Err(_) => i64::MIN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: i64 = 3_600_000;

    #[test]
    fn windows_align_on_spans_and_months() {
        let hour = TimeValue::Seconds(3600);
        let at = 1_700_000_123_456;
        assert_eq!(hour.window_start(at), at - at.rem_euclid(HOUR_MS));
        assert_eq!(hour.next_window(at), hour.window_start(at) + HOUR_MS);
        assert_eq!(hour.window_at_or_after(hour.window_start(at)), hour.window_start(at));
        // 2023-11-14T22:13:20Z: the month starts 2023-11-01, the next 2023-12-01.
        let month = TimeValue::Months(1);
        assert_eq!(month.window_start(1_700_000_000_000), 1_698_796_800_000);
        assert_eq!(month.next_window(1_700_000_000_000), 1_701_388_800_000);
        assert_eq!(TimeValue::Months(1).before(1_701_388_800_000), 1_698_796_800_000);
    }

    #[test]
    fn spans_compare_across_units_and_describe_themselves() {
        use std::cmp::Ordering;
        assert_eq!(TimeValue::Seconds(3600).compare(TimeValue::Months(1)), Some(Ordering::Less));
        assert_eq!(TimeValue::Seconds(30 * 86_400).compare(TimeValue::Months(1)), None);
        assert_eq!(TimeValue::MAX.compare(TimeValue::Months(12)), Some(Ordering::Greater));
        assert!(TimeValue::Seconds(3600).divides(TimeValue::Seconds(86_400)));
        assert!(!TimeValue::Seconds(7200).divides(TimeValue::Seconds(3600 * 3)));
        assert_eq!(TimeValue::Seconds(3600 + 120).describe(), "1 hour 2 minutes");
        assert_eq!(TimeValue::Months(14).describe(), "1 year 2 months");
    }
}
