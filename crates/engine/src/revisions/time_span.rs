//! .NET `TimeSpan` text (`[-][d.]hh:mm:ss[.fffffff]`), as RavenDB's configuration carries durations.

use std::time::Duration;

/// Parses `[d.]hh:mm:ss[.fffffff]`; negative spans are refused (no configuration uses them).
pub(crate) fn parse(text: &str) -> Option<Duration> {
    let (days, rest) = match text.split_once('.') {
        Some((d, rest)) if !d.contains(':') => (d.parse::<u64>().ok()?, rest),
        _ => (0, text),
    };
    let (clock, fraction) = match rest.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (rest, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let [h, m, s] = parts.as_slice() else { return None };
    let (h, m, s): (u64, u64, u64) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
    if m >= 60 || s >= 60 || (days > 0 && h >= 24) {
        return None;
    }
    let nanos = match fraction {
        None => 0,
        Some(f) if !f.is_empty() && f.len() <= 7 && f.bytes().all(|b| b.is_ascii_digit()) => {
            f.parse::<u64>().ok()? * 10u64.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
    };
    let seconds = days.checked_mul(86_400)?.checked_add(h * 3600 + m * 60 + s)?;
    Some(Duration::new(seconds, nanos as u32))
}

/// Formats as .NET prints a `TimeSpan`: `d.hh:mm:ss` with the day part only when non-zero, and seven
/// fraction digits only when there is a fraction.
pub(crate) fn format(span: Duration) -> String {
    let total = span.as_secs();
    let (days, h, m, s) = (total / 86_400, (total % 86_400) / 3600, (total % 3600) / 60, total % 60);
    let mut out = if days > 0 { format!("{days}.") } else { String::new() };
    out.push_str(&format!("{h:02}:{m:02}:{s:02}"));
    if span.subsec_nanos() > 0 {
        out.push_str(&format!(".{:07}", span.subsec_nanos() / 100));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_spans_round_trip() {
        for (text, secs) in [("00:00:05", 5), ("01:02:03", 3723), ("2.00:00:00", 172_800), ("14.03:00:00", 14 * 86_400 + 3 * 3600)] {
            assert_eq!(parse(text), Some(Duration::from_secs(secs)), "{text}");
            assert_eq!(format(Duration::from_secs(secs)), text);
        }
        assert_eq!(parse("00:00:01.5"), Some(Duration::from_millis(1500)));
        assert_eq!(format(Duration::from_millis(1500)), "00:00:01.5000000");
        for bad in ["", "5", "1:2", "00:61:00", "a.00:00:00", "00:00:00.12345678", "-00:00:01"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
