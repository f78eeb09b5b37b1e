//! .NET `TimeSpan` text as the clients send it (`[d.]hh:mm:ss[.fffffff]`): query and operation timeouts,
//! subscription retry waits, backup retention ages, time-series policy check frequencies.

use std::time::Duration;

/// Parses `[d.]hh:mm:ss[.fffffff]`; None for anything else, or seconds of 60 and more (as .NET refuses).
pub fn parse_time_span(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (days, rest) = match text.split_once('.') {
        Some((d, rest)) if !d.contains(':') => (d.parse::<u64>().ok()?, rest),
        _ => (0, text),
    };
    let mut parts = rest.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (s, fraction) = s.split_once('.').unwrap_or((s, ""));
    let seconds: u64 = s.parse().ok()?;
    if seconds >= 60 {
        return None;
    }
    let nanos = if fraction.is_empty() { 0 } else { format!("{fraction:0<9}").get(..9)?.parse::<u64>().ok()? };
    let whole = days.checked_mul(86_400)? + h.parse::<u64>().ok()?.checked_mul(3_600)? + m.parse::<u64>().ok()?.checked_mul(60)? + seconds;
    Some(Duration::from_secs(whole) + Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_spans_parse_as_dotnet_writes_them() {
        assert_eq!(parse_time_span("00:00:15"), Some(Duration::from_secs(15)));
        assert_eq!(parse_time_span("0:00:05"), Some(Duration::from_secs(5)));
        assert_eq!(parse_time_span("1.02:00:05"), Some(Duration::from_secs(86_400 + 7_205)));
        assert_eq!(parse_time_span("00:00:01.5000000"), Some(Duration::from_millis(1_500)));
        assert_eq!(parse_time_span("00:00:00.3000000"), Some(Duration::from_millis(300)));
        assert_eq!(parse_time_span("soon"), None);
        assert_eq!(parse_time_span("00:00:60"), None);
        assert_eq!(parse_time_span("1:2:3:4"), None);
    }
}
