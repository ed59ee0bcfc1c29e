//! A posted score.

use serde_json::Value;

use crate::error::{ApiError, ErrorCode};

/// What became of a post (v3 score integrity): it counts (`Accepted`), or
/// waits for review (`Held`), or was refused by a reviewer (`Rejected`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PostStatus {
    Accepted,
    Held,
    Rejected,
}

impl PostStatus {
    /// As stored and as clients see it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Held => "held",
            Self::Rejected => "rejected",
        }
    }

    /// A stored value; anything unknown counts as accepted (the column's default).
    pub fn from_stored(text: &str) -> Self {
        match text {
            "held" => Self::Held,
            "rejected" => Self::Rejected,
            _ => Self::Accepted,
        }
    }
}

/// A posted score: an integer in `0..=MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Score(i64);

impl Score {
    pub const MAX: i64 = 1_000_000_000;

    /// Parses the raw JSON value so that floats, strings and out-of-range
    /// numbers all get the contract's 422 `invalid_score` instead of a
    /// generic deserialisation error. `max` is the configured plausibility
    /// bound (never above [`Score::MAX`]).
    pub fn parse(raw: Option<&Value>, max: i64) -> Result<Self, ApiError> {
        let max = max.min(Self::MAX);
        let invalid =
            || ApiError::with_message(ErrorCode::InvalidScore, format!("score must be an integer from 0 to {max}"));
        let value = raw.and_then(Value::as_i64).ok_or_else(invalid)?;
        // `as_i64` accepts only integers (not 5.0), so the range is all that is left.
        if (0..=max).contains(&value) {
            Ok(Self(value))
        } else {
            Err(invalid())
        }
    }

    /// A score for a custom board, whose range is `min..=max` (validated
    /// when the board was created).
    pub fn parse_in(raw: Option<&Value>, min: i64, max: i64) -> Result<Self, ApiError> {
        let invalid =
            || ApiError::with_message(ErrorCode::InvalidScore, format!("score must be an integer from {min} to {max}"));
        let value = raw.and_then(Value::as_i64).ok_or_else(invalid)?;
        if (min..=max).contains(&value) {
            Ok(Self(value))
        } else {
            Err(invalid())
        }
    }

    pub fn value(self) -> i64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_integers_in_range() {
        for ok in [0, 1, 123_456, Score::MAX] {
            assert_eq!(Score::parse(Some(&json!(ok)), Score::MAX).unwrap().value(), ok);
        }
    }

    #[test]
    fn rejects_everything_else() {
        let bad = [
            json!(-1),
            json!(Score::MAX + 1),
            json!(1.5),
            json!(5.0),
            json!("10"),
            json!(null),
            json!(true),
            json!([1]),
            json!({"v": 1}),
            json!(u64::MAX),
            json!(1e300),
        ];
        for value in bad {
            let err = Score::parse(Some(&value), Score::MAX).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidScore, "{value}");
        }
        assert_eq!(Score::parse(None, Score::MAX).unwrap_err().code(), ErrorCode::InvalidScore);
    }

    #[test]
    fn a_lower_configured_maximum_is_a_plausibility_bound() {
        assert!(Score::parse(Some(&json!(1000)), 1000).is_ok());
        assert_eq!(Score::parse(Some(&json!(1001)), 1000).unwrap_err().code(), ErrorCode::InvalidScore);
        // Never above the contract's maximum.
        assert!(Score::parse(Some(&json!(Score::MAX + 1)), i64::MAX).is_err());
    }
}
