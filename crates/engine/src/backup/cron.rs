//! Backup schedules: five-field cron expressions as RavenDB's `FullBackupFrequency` and
//! `IncrementalBackupFrequency` hold them (minute, hour, day of month, month, day of week; `*`, lists, ranges,
//! steps, month and day names). Decision 0040 says why this is ours rather than a crate.

use time::{Duration, OffsetDateTime};

use super::error::BackupError;

/// A parsed schedule: the allowed values of each field as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// Whether the day-of-month and day-of-week fields were both restricted (cron then takes either).
    either_day: bool,
}

const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn value(text: &str, min: u32, max: u32, names: &[&str], name_base: u32) -> Result<u32, String> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(i as u32 + name_base);
    }
    let n: u32 = text.parse().map_err(|_| format!("'{text}' is not a number"))?;
    if n < min || n > max {
        return Err(format!("{n} is outside {min}-{max}"));
    }
    Ok(n)
}

/// Parses one field into a bit set of allowed values; true as the second value when it is `*`.
fn field(text: &str, min: u32, max: u32, names: &[&str], name_base: u32) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, step.parse::<u32>().ok().filter(|s| *s > 0).ok_or_else(|| format!("bad step in '{part}'"))?),
            None => (part, 1),
        };
        let (from, to) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, min, max, names, name_base)?, value(b, min, max, names, name_base)?)
        } else {
            let v = value(range, min, max, names, name_base)?;
            // `5/15` means from 5 to the end, every 15.
            (v, if part.contains('/') { max } else { v })
        };
        if from > to {
            return Err(format!("the range '{range}' runs backwards"));
        }
        bits |= (from..=to).step_by(step as usize).fold(0u64, |acc, v| acc | (1 << v));
    }
    Ok((bits, text == "*"))
}

impl CronSchedule {
    /// Parses a five-field expression.
    pub fn parse(expression: &str) -> Result<CronSchedule, BackupError> {
        let invalid = |reason: String| BackupError::InvalidConfiguration(format!("Invalid backup frequency '{expression}': {reason}"));
        let fields: Vec<&str> = expression.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(invalid(format!("expected 5 fields (minute hour day-of-month month day-of-week), found {}", fields.len())));
        }
        let (minutes, _) = field(fields[0], 0, 59, &[], 0).map_err(invalid)?;
        let (hours, _) = field(fields[1], 0, 23, &[], 0).map_err(invalid)?;
        let (days_of_month, any_dom) = field(fields[2], 1, 31, &[], 0).map_err(invalid)?;
        let (months, _) = field(fields[3], 1, 12, &MONTHS, 1).map_err(invalid)?;
        let (mut days_of_week, any_dow) = field(fields[4], 0, 7, &DAYS, 0).map_err(invalid)?;
        // 7 is Sunday too.
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(CronSchedule { minutes, hours, days_of_month, months, days_of_week, either_day: !any_dom && !any_dow })
    }

    fn day_matches(&self, at: OffsetDateTime) -> bool {
        if self.months & (1 << u8::from(at.month())) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << at.day()) != 0;
        let dow = self.days_of_week & (1 << at.weekday().number_days_from_sunday()) != 0;
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first time strictly after `after` (whole minutes, UTC) the schedule fires; None if none within
    /// five years (an expression like `0 0 31 2 *`).
    pub fn next_after(&self, after: OffsetDateTime) -> Option<OffsetDateTime> {
        let after = after.to_offset(time::UtcOffset::UTC);
        let mut at = after.replace_second(0).ok()?.replace_nanosecond(0).ok()? + Duration::minutes(1);
        let limit = after + Duration::days(5 * 366);
        while at <= limit {
            if !self.day_matches(at) {
                at = (at + Duration::days(1)).replace_hour(0).ok()?.replace_minute(0).ok()?;
                continue;
            }
            if self.hours & (1 << at.hour()) == 0 {
                at = (at + Duration::hours(1)).replace_minute(0).ok()?;
                continue;
            }
            if self.minutes & (1 << at.minute()) == 0 {
                at += Duration::minutes(1);
                continue;
            }
            return Some(at);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn next(expression: &str, after: OffsetDateTime) -> OffsetDateTime {
        CronSchedule::parse(expression).unwrap().next_after(after).unwrap()
    }

    #[test]
    fn schedules_fire_when_cron_says() {
        let t = datetime!(2026-11-26 11:40:30 UTC);
        assert_eq!(next("* * * * *", t), datetime!(2026-11-26 11:41 UTC));
        assert_eq!(next("*/15 * * * *", t), datetime!(2026-11-26 11:45 UTC));
        assert_eq!(next("0 2 * * *", t), datetime!(2026-11-27 02:00 UTC));
        assert_eq!(next("30 3 * * SUN", t), datetime!(2026-11-29 03:30 UTC));
        assert_eq!(next("0 0 1 JAN *", t), datetime!(2027-01-01 00:00 UTC));
        assert_eq!(next("0 12 1-7 * 1", t), datetime!(2026-11-30 12:00 UTC), "either day field matches");
        assert_eq!(next("5,10 8-9 * * 7", t), datetime!(2026-11-29 08:05 UTC));
        assert!(CronSchedule::parse("0 0 31 2 *").unwrap().next_after(t).is_none());
    }

    #[test]
    fn bad_expressions_say_why() {
        for (expression, reason) in
            [("* * * *", "expected 5 fields"), ("61 * * * *", "outside 0-59"), ("*/0 * * * *", "bad step"), ("5-1 * * * *", "backwards")]
        {
            let error = CronSchedule::parse(expression).unwrap_err().to_string();
            assert!(error.contains(reason), "{expression}: {error}");
        }
    }
}
