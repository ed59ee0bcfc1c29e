//! When a board resets: a cron pattern evaluated in a time zone.
//!
//! Patterns are croner's (5 fields, or 6 with seconds first), evaluated in
//! an IANA time zone with chrono-tz. Chosen because croner documents its
//! daylight-saving behaviour and follows Vixie cron's, which is what
//! operators expect of cron: a fixed-time firing that falls into a
//! spring-forward gap runs right after the gap, one in a fall-back overlap
//! runs once; interval patterns (`*/5 …`) skip the missing times.

use std::str::FromStr;

use chrono::{TimeZone as _, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use crate::domain::Timestamp;
use crate::error::{ApiError, ErrorCode};

#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: Tz,
}

/// A time zone by IANA name (`UTC` included).
pub fn parse_timezone(name: &str) -> Result<Tz, ApiError> {
    Tz::from_str(name).map_err(|_| ErrorCode::InvalidTimezone.into())
}

impl Schedule {
    /// Parses a 5- or 6-field pattern (6: seconds first) for `tz`.
    pub fn parse(pattern: &str, tz: Tz) -> Result<Self, ApiError> {
        let fields = pattern.split_whitespace().count();
        let invalid = |why: String| ApiError::with_message(ErrorCode::InvalidReset, why);
        if !(5..=6).contains(&fields) {
            return Err(invalid(format!("reset must have 5 fields, or 6 with seconds first; it has {fields}")));
        }
        let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build();
        let cron = parser.parse(pattern).map_err(|error| invalid(format!("reset is not a cron pattern: {error}")))?;
        let schedule = Self { cron, tz };
        // A pattern that never fires (February 30th) cannot start a period.
        if schedule.next_after(Timestamp::now()).is_none() {
            return Err(invalid("reset never fires".to_owned()));
        }
        Ok(schedule)
    }

    /// The first firing strictly after `t`, if any. Firings fall on whole
    /// seconds: the search starts from `t`'s second (croner would carry the
    /// milliseconds over into the answer).
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let second = t.millis().div_euclid(1000) * 1000;
        let local = Utc.timestamp_millis_opt(second).single()?.with_timezone(&self.tz);
        let next = self.cron.find_next_occurrence(&local, false).ok()?;
        let next = Timestamp::from_millis(next.timestamp_millis());
        (next > t).then_some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        let t = chrono::DateTime::parse_from_rfc3339(text).unwrap();
        Timestamp::from_millis(t.timestamp_millis())
    }

    #[test]
    fn five_and_six_fields_only() {
        let utc = parse_timezone("UTC").unwrap();
        assert!(Schedule::parse("0 0 * * 1", utc).is_ok());
        assert!(Schedule::parse("*/5 * * * * *", utc).is_ok());
        for bad in ["", "* * * *", "0 0 0 * * * 2030", "61 * * * *", "nonsense"] {
            assert_eq!(Schedule::parse(bad, utc).unwrap_err().code(), ErrorCode::InvalidReset, "{bad}");
        }
        assert_eq!(parse_timezone("Mars/Olympus").unwrap_err().code(), ErrorCode::InvalidTimezone);
    }

    #[test]
    fn firings_are_strictly_after_and_in_the_time_zone() {
        let every_five = Schedule::parse("*/5 * * * * *", parse_timezone("UTC").unwrap()).unwrap();
        assert_eq!(every_five.next_after(at("2026-11-30T08:00:00.000Z")), Some(at("2026-11-30T08:00:05.000Z")));
        assert_eq!(every_five.next_after(at("2026-11-30T08:00:04.999Z")), Some(at("2026-11-30T08:00:05.000Z")));
        // Mondays at midnight in Paris are Sunday 23:00 UTC in winter.
        let weekly = Schedule::parse("0 0 * * 1", parse_timezone("Europe/Paris").unwrap()).unwrap();
        assert_eq!(weekly.next_after(at("2026-11-30T08:00:00Z")), Some(at("2026-12-06T23:00:00Z")));
    }

    #[test]
    fn daylight_saving_follows_vixie_cron() {
        let paris = parse_timezone("Europe/Paris").unwrap();
        // 2027-03-28: 02:00 does not exist in Paris (clocks jump to 03:00).
        // A fixed-time job at 02:30 runs right after the gap, at 03:00 CEST.
        let daily = Schedule::parse("30 2 * * *", paris).unwrap();
        assert_eq!(daily.next_after(at("2027-03-27T12:00:00Z")), Some(at("2027-03-28T01:00:00Z")));
        // 2027-10-31: 02:30 happens twice (CEST, then CET); it fires once.
        let first = daily.next_after(at("2027-10-30T12:00:00Z")).unwrap();
        assert_eq!(first, at("2027-10-31T00:30:00Z"));
        assert_eq!(daily.next_after(first), Some(at("2027-11-01T01:30:00Z")));
    }
}
