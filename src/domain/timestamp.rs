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
        let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .ok()
            .and_then(|t| t.format(&format).ok())
            // Only reachable for timestamps beyond year 9999, which we never store.
            .unwrap_or_else(|| "9999-12-31T23:59:59.999Z".to_owned())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
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

    #[test]
    fn now_is_recent_and_serialises_as_a_string() {
        let now = Timestamp::now();
        assert!(now.millis() > 1_700_000_000_000);
        let json = serde_json::to_string(&now).unwrap();
        assert!(json.starts_with("\"20") && json.ends_with("Z\""), "{json}");
    }
}
