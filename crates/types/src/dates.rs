//! Dates in the form every RavenDB client parses: `yyyy-MM-ddTHH:mm:ss.fffffffZ` (always 7 fraction digits).

use time::OffsetDateTime;

pub fn now_nanos() -> i64 {
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

pub fn format_date(unix_nanos: i64) -> String {
    let dt = OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_nanos)).unwrap_or(OffsetDateTime::UNIX_EPOCH);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_seven_fraction_digits() {
        assert_eq!(format_date(0), "1970-01-01T00:00:00.0000000Z");
        assert_eq!(format_date(1_700_000_000_123_456_789), "2023-11-14T22:13:20.1234567Z");
    }
}
