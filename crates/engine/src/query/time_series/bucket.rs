//! `group by` time buckets: `1h`, `'1 hour'`, `'15 minutes'`, `'1 month'`, `'1 year'`. Fixed spans (up to
//! weeks) are aligned on multiples of the span since the epoch; months and years on calendar months.

use time::{Date, Month, OffsetDateTime};

use super::error::invalid;
use crate::EngineError;

/// The width of one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bucket {
    /// A fixed number of milliseconds.
    Fixed(i64),
    /// A number of calendar months (years are twelve).
    Months(i64),
}

fn unit_millis(unit: &str) -> Option<Result<i64, i64>> {
    // Ok: milliseconds per unit; Err: months per unit.
    Some(match unit {
        "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => Ok(1),
        "s" | "sec" | "secs" | "second" | "seconds" => Ok(1_000),
        "m" | "min" | "mins" | "minute" | "minutes" => Ok(60_000),
        "h" | "hour" | "hours" => Ok(3_600_000),
        "d" | "day" | "days" => Ok(86_400_000),
        "w" | "week" | "weeks" => Ok(7 * 86_400_000),
        "mo" | "month" | "months" => Err(1),
        "q" | "quarter" | "quarters" => Err(3),
        "y" | "year" | "years" => Err(12),
        _ => return None,
    })
}

impl Bucket {
    /// Parses `1h`, `1 hour`, `hour`, `15 minutes`.
    pub(crate) fn parse(text: &str) -> Result<Bucket, EngineError> {
        let trimmed = text.trim();
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        let count: i64 = if digits == 0 { 1 } else { trimmed[..digits].parse().unwrap_or(0) };
        let unit = trimmed[digits..].trim().to_ascii_lowercase();
        let refused = || invalid(format!("Cannot group time series by '{text}': expected a number and a unit such as '1 hour'"));
        if count <= 0 {
            return Err(refused());
        }
        match unit_millis(&unit).ok_or_else(refused)? {
            Ok(ms) => Ok(Bucket::Fixed(ms.checked_mul(count).ok_or_else(refused)?)),
            Err(months) => Ok(Bucket::Months(months * count)),
        }
    }

    /// The bucket holding `timestamp` (unix milliseconds): its start and end (exclusive).
    pub(crate) fn range_of(self, timestamp: i64) -> (i64, i64) {
        match self {
            Bucket::Fixed(width) => {
                let start = timestamp.div_euclid(width) * width;
                (start, start.saturating_add(width))
            }
            Bucket::Months(width) => {
                let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(timestamp) * 1_000_000) else {
                    return (timestamp, timestamp);
                };
                let index = i64::from(at.year()) * 12 + i64::from(u8::from(at.month())) - 1;
                let first = index.div_euclid(width) * width;
                (month_start(first), month_start(first + width))
            }
        }
    }
}

/// Unix milliseconds of the first instant of month number `index` (year * 12 + month - 1).
fn month_start(index: i64) -> i64 {
    let year = index.div_euclid(12) as i32;
    let month = Month::try_from(index.rem_euclid(12) as u8 + 1).unwrap_or(Month::January);
    Date::from_calendar_date(year, month, 1)
        .map(|d| (d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_clients_write() {
        assert_eq!(Bucket::parse("1h").unwrap(), Bucket::Fixed(3_600_000));
        assert_eq!(Bucket::parse("1 hour").unwrap(), Bucket::Fixed(3_600_000));
        assert_eq!(Bucket::parse("15 minutes").unwrap(), Bucket::Fixed(900_000));
        assert_eq!(Bucket::parse("1 month").unwrap(), Bucket::Months(1));
        assert!(Bucket::parse("1 fortnight").is_err());
        assert!(Bucket::parse("0 h").is_err());
    }

    #[test]
    fn months_follow_the_calendar() {
        // 2023-02-15T00:00:00Z
        let (start, end) = Bucket::Months(1).range_of(1_676_419_200_000);
        assert_eq!(start, 1_675_209_600_000); // 2023-02-01
        assert_eq!(end, 1_677_628_800_000); // 2023-03-01
        assert_eq!(Bucket::Fixed(3_600_000).range_of(3_600_001), (3_600_000, 7_200_000));
    }
}
