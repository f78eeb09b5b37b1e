//! Dates in the form every RavenDB client parses: `yyyy-MM-ddTHH:mm:ss.fffffffZ` (always 7 fraction digits).

use time::OffsetDateTime;

pub fn now_nanos() -> i64 {
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

pub fn format_date(unix_nanos: i64) -> String {
    format_datetime(OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_nanos)).unwrap_or(OffsetDateTime::UNIX_EPOCH))
}

/// Unix milliseconds of `0001-01-01T00:00:00Z` and `9999-12-31T23:59:59.999Z`, .NET's `DateTime.MinValue` and
/// `MaxValue` at millisecond precision.
pub const MIN_DATE_MS: i64 = -62_135_596_800_000;
/// See [`MIN_DATE_MS`].
pub const MAX_DATE_MS: i64 = 253_402_300_799_999;

/// A date in unix milliseconds (years 1 to 9999) in RavenDB's format (`yyyy-MM-ddTHH:mm:ss.fffffffZ`).
pub fn format_date_ms(unix_ms: i64) -> String {
    let nanos = i128::from(unix_ms.clamp(MIN_DATE_MS, MAX_DATE_MS)) * 1_000_000;
    format_datetime(OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH))
}

/// RavenDB's `yyyy-MM-ddTHH:mm:ss.fffffffZ` of one instant.
fn format_datetime(dt: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}Z",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.nanosecond() / 100
    )
}

/// Parses `yyyy-MM-ddTHH:mm:ss[.fraction][Z|±hh:mm]` (a space may replace the `T`; without a zone the time is
/// UTC, as RavenDB reads dates) to unix milliseconds, dropping digits below the millisecond as RavenDB does.
pub fn parse_date_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let mut rest = &b[19..];
    let mut millis = 0i64;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for i in 0..3 {
            millis = millis * 10 + fraction.get(i).filter(|_| i < n).map_or(0, |d| i64::from(d - b'0'));
        }
        rest = &fraction[n..];
    }
    let offset_minutes = match rest {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let part = [*h1, *h2, *m1, *m2];
            if !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let minutes = i64::from(h1 - b'0') * 600 + i64::from(h2 - b'0') * 60 + i64::from(m1 - b'0') * 10 + i64::from(m2 - b'0');
            if *sign == b'-' {
                -minutes
            } else {
                minutes
            }
        }
        _ => return None,
    };
    let month = time::Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()?;
    let time = time::Time::from_hms(u8::try_from(hour).ok()?, u8::try_from(minute).ok()?, u8::try_from(second).ok()?).ok()?;
    let seconds = date.with_time(time).assume_utc().unix_timestamp() - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_millisecond_dates() {
        assert_eq!(parse_date_ms("1970-01-01T00:00:01.2345678"), Some(1234));
        assert_eq!(parse_date_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_date_ms("0001-01-01T00:00:00.0000000"), Some(MIN_DATE_MS));
        assert_eq!(parse_date_ms("9999-12-31T23:59:59.9999999Z"), Some(MAX_DATE_MS));
        assert_eq!(parse_date_ms("2024-02-30T00:00:00"), None);
        assert_eq!(parse_date_ms("yesterday"), None);
        assert_eq!(format_date_ms(1234), "1970-01-01T00:00:01.2340000Z");
        assert_eq!(format_date_ms(MAX_DATE_MS), "9999-12-31T23:59:59.9990000Z");
    }

    #[test]
    fn formats_seven_fraction_digits() {
        assert_eq!(format_date(0), "1970-01-01T00:00:00.0000000Z");
        assert_eq!(format_date(1_700_000_000_123_456_789), "2023-11-14T22:13:20.1234567Z");
    }
}
