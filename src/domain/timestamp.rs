//! Points in time as the contract writes them (RFC 3339, milliseconds, UTC).

use serde::{Serialize, Serializer};
use time::macros::format_description;
use time::OffsetDateTime;

/// A point in time with millisecond precision, stored as milliseconds since
/// the Unix epoch (an integer sorts and compares the same on every database)
/// and serialised as RFC 3339 UTC, e.g. `2026-11-30T08:00:00.123Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub fn now() -> Self {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Self((nanos / 1_000_000) as i64)
    }

    pub fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn plus_millis(self, millis: i64) -> Self {
        Self(self.0 + millis)
    }

    /// An RFC 3339 time as a client writes it (any offset), to the millisecond.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        chrono::DateTime::parse_from_rfc3339(text).ok().map(|time| Self(time.timestamp_millis()))
    }

    pub fn to_rfc3339(self) -> String {
        match self.digits() {
            Some(digits) => Self::text(&digits).to_owned(),
            None => self.formatted_by_time(),
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` written digit by digit, for years 0 to
    /// 9999 (every time a post or clock makes): every entry of every
    /// rendered page has one, and a general formatter cost 2.4 % of a
    /// profile read (issue 43). `None` for other years.
    fn digits(self) -> Option<[u8; 24]> {
        const DAY: i64 = 86_400_000;
        let (year, month, day) = civil_date(self.0.div_euclid(DAY));
        let year = u32::try_from(year).ok().filter(|year| *year <= 9999)?;
        let in_day = u32::try_from(self.0.rem_euclid(DAY)).expect("a day's milliseconds fit");
        let mut text = *b"0000-00-00T00:00:00.000Z";
        for (range, value) in [
            (0..4, year),
            (5..7, month),
            (8..10, day),
            (11..13, in_day / 3_600_000),
            (14..16, in_day / 60_000 % 60),
            (17..19, in_day / 1000 % 60),
            (20..23, in_day % 1000),
        ] {
            let mut value = value;
            for digit in text[range].iter_mut().rev() {
                *digit = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        Some(text)
    }

    fn text(digits: &[u8; 24]) -> &str {
        std::str::from_utf8(digits).expect("digits and separators are ASCII")
    }

    /// Years outside 0..=9999, which no clock or client time reaches.
    fn formatted_by_time(self) -> String {
        let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .ok()
            .and_then(|t| t.format(&format).ok())
            .unwrap_or_else(|| "9999-12-31T23:59:59.999Z".to_owned())
    }
}

/// The proleptic Gregorian (year, month, day) of a day counted from
/// 1970-01-01 (Howard Hinnant's `civil_from_days`: 400-year eras of
/// 146,097 days, years taken to begin on 1 March so that the leap day
/// comes last).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468; // from 0000-03-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.digits() {
            Some(digits) => serializer.serialize_str(Self::text(&digits)),
            None => serializer.serialize_str(&self.formatted_by_time()),
        }
    }
}

/// In the OpenAPI document: an RFC 3339 date-time string.
impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .examples(["2026-11-30T08:00:00.123Z"])
            .into()
    }
}

impl utoipa::ToSchema for Timestamp {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339_with_any_offset() {
        assert_eq!(
            Timestamp::parse_rfc3339("2026-12-01T08:00:00.123Z"),
            Some(Timestamp::from_millis(1_796_112_000_123))
        );
        assert_eq!(
            Timestamp::parse_rfc3339("2026-12-01T09:00:00+01:00"),
            Some(Timestamp::from_millis(1_796_112_000_000))
        );
        assert_eq!(Timestamp::parse_rfc3339("2026-12-01"), None);
    }

    #[test]
    fn formats_rfc3339_with_milliseconds() {
        assert_eq!(Timestamp::from_millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::from_millis(1_796_112_000_123).to_rfc3339(), "2026-12-01T08:00:00.123Z");
    }

    /// The digit-by-digit formatter against the `time` crate's, at the
    /// edges of days, months, leap years and centuries, and at random.
    #[test]
    fn digits_agree_with_a_general_formatter() {
        let date = |year: i32, month: u8, day: u8| {
            let month = time::Month::try_from(month).unwrap();
            let date = time::Date::from_calendar_date(year, month, day).unwrap();
            date.with_hms(0, 0, 0).unwrap().assume_utc().unix_timestamp() * 1000
        };
        let mut millis = vec![0, -1, 1, 86_399_999, 86_400_000, -86_400_000, 1_796_112_000_123];
        for (year, month, day) in [
            (0, 1, 1),
            (1600, 2, 29),
            (1900, 2, 28),
            (1900, 3, 1),
            (1969, 12, 31),
            (2000, 2, 29),
            (2000, 3, 1),
            (2024, 12, 31),
            (2100, 2, 28),
            (2100, 3, 1),
            (9999, 12, 31),
        ] {
            let midnight = date(year, month, day);
            millis.extend([midnight, midnight + 1, midnight + 86_399_999]);
            if year > 0 {
                millis.push(midnight - 1);
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Anywhere in years 0 to 9999.
            millis.push(date(0, 1, 1) + (state % 315_569_520_000_000) as i64);
        }
        for millis in millis {
            let time = Timestamp::from_millis(millis);
            let digits = time.digits().unwrap_or_else(|| panic!("{millis} has digits"));
            assert_eq!(Timestamp::text(&digits), time.formatted_by_time(), "{millis}");
        }
        // Outside years 0 to 9999 the general formatter answers.
        let before = Timestamp::from_millis(date(0, 1, 1) - 1);
        assert_eq!(before.digits(), None);
        assert_eq!(before.to_rfc3339(), before.formatted_by_time());
        assert_eq!(Timestamp::from_millis(date(9999, 12, 31) + 86_400_000).digits(), None);
    }

    #[test]
    fn now_is_recent_and_serialises_as_a_string() {
        let now = Timestamp::now();
        assert!(now.millis() > 1_700_000_000_000);
        let json = serde_json::to_string(&now).unwrap();
        assert!(json.starts_with("\"20") && json.ends_with("Z\""), "{json}");
    }
}
