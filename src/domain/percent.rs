//! Percentages in hundredths: a ranked entry's `top_percent` and the
//! percents `/cutoffs` is asked for. Both are whole numbers of hundredths
//! (0.01 %), computed in integers, so a cut-off, an entry's `top_percent`
//! and a reward band agree to the last entry.

use serde::{Serialize, Serializer};

use crate::error::{ApiError, ErrorCode};

/// A percentage as a whole number of hundredths: `1429` is 14.29 %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hundredths(u32);

/// 100 %.
const WHOLE: u64 = 10_000;

impl Hundredths {
    /// `ceil(10000 × rank ÷ players)`: the share of the population at
    /// least as good as this rank, rounded up, so rank 1 of 1,000 is 0.1
    /// and the last is 100. `players` below `rank` is read as `rank` (the
    /// count and the rank always come from one snapshot; the guard keeps a
    /// value in range whatever a caller passes).
    pub fn top(rank: i64, players: i64) -> Self {
        let rank = rank.max(1) as u64;
        let players = (players.max(1) as u64).max(rank);
        Self((WHOLE * rank).div_ceil(players) as u32)
    }

    /// A percent as a query gives it: a number in (0, 100] with at most two
    /// decimals (`1`, `2.5`, `0.01`, `100.00`).
    pub fn parse_percent(raw: &str) -> Option<Self> {
        let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
        let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || whole.len() > 3 || !digits(whole) || fraction.len() > 2 || !digits(fraction) {
            return None;
        }
        if raw.contains('.') && fraction.is_empty() {
            return None;
        }
        let whole: u32 = whole.parse().ok()?;
        let fraction: u32 = format!("{fraction:0<2}").parse().ok()?;
        let value = whole * 100 + fraction;
        (1..=WHOLE as u32).contains(&value).then_some(Self(value))
    }

    /// The whole number of hundredths (as stored).
    pub fn hundredths(self) -> u32 {
        self.0
    }

    /// A stored number of hundredths, if in (0, 100 %].
    pub fn from_hundredths(value: i64) -> Option<Self> {
        (1..=WHOLE as i64).contains(&value).then_some(Self(value as u32))
    }

    /// The 1-based position of the last entry inside this percent of
    /// `players`: `floor(players × percent ÷ 100)`, exactly (0: none).
    pub fn position_in(self, players: i64) -> i64 {
        let players = players.max(0) as u64;
        (players * u64::from(self.0) / WHOLE) as i64
    }
}

/// Written as a JSON number with at most two decimals: `14.29`, `0.1`, `100`.
impl Serialize for Hundredths {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_multiple_of(100) {
            serializer.serialize_u32(self.0 / 100)
        } else {
            // A correctly rounded quotient, which the shortest round-trip
            // printing writes back with the same two (or one) decimals.
            serializer.serialize_f64(f64::from(self.0) / 100.0)
        }
    }
}

impl utoipa::PartialSchema for Hundredths {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Number)
            .minimum(Some(0.01))
            .maximum(Some(100))
            .description(Some("A percentage with at most two decimals"))
            .examples([serde_json::json!(14.29)])
            .into()
    }
}

impl utoipa::ToSchema for Hundredths {}

/// The `percents` of a `/cutoffs` request: 1..=10 of them, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Percents(Vec<Hundredths>);

impl Percents {
    pub const MAX: usize = 10;

    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::with_message(
                ErrorCode::InvalidPercents,
                format!(
                    "percents must be 1 to {} comma-separated numbers above 0 and at most 100, with at most two \
                     decimals",
                    Self::MAX
                ),
            )
        };
        let raw = raw.filter(|raw| !raw.is_empty()).ok_or_else(invalid)?;
        let mut percents = Vec::new();
        for part in raw.split(',') {
            if percents.len() == Self::MAX {
                return Err(invalid());
            }
            percents.push(Hundredths::parse_percent(part).ok_or_else(invalid)?);
        }
        Ok(Self(percents))
    }

    pub fn as_slice(&self) -> &[Hundredths] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(value: Hundredths) -> String {
        serde_json::to_string(&value).unwrap()
    }

    #[test]
    fn top_percent_rounds_up_to_a_hundredth() {
        assert_eq!(json(Hundredths::top(1, 7)), "14.29");
        assert_eq!(json(Hundredths::top(1, 1_000)), "0.1");
        assert_eq!(json(Hundredths::top(1, 3)), "33.34");
        assert_eq!(json(Hundredths::top(5, 5)), "100");
        assert_eq!(json(Hundredths::top(1, 1_000_000)), "0.01");
        assert_eq!(json(Hundredths::top(1, 2)), "50");
    }

    #[test]
    fn every_hundredth_prints_with_at_most_two_decimals() {
        for value in 1..=10_000 {
            let text = json(Hundredths(value));
            let expected = match (value / 100, value % 100) {
                (whole, 0) => whole.to_string(),
                (whole, part) if part % 10 == 0 => format!("{whole}.{}", part / 10),
                (whole, part) => format!("{whole}.{part:02}"),
            };
            assert_eq!(text, expected);
        }
    }

    #[test]
    fn percents_parse_as_the_contract_spells_them() {
        let parsed = |raw| Hundredths::parse_percent(raw).map(|h| h.0);
        assert_eq!(parsed("1"), Some(100));
        assert_eq!(parsed("2.5"), Some(250));
        assert_eq!(parsed("0.01"), Some(1));
        assert_eq!(parsed("100.00"), Some(10_000));
        for bad in ["0", "0.00", "100.01", "101", "1.234", "-1", "+1", ".5", "5.", "1e1", "abc", "", " 1", "1000"] {
            assert_eq!(parsed(bad), None, "{bad:?}");
        }
        assert!(Percents::parse(Some("1,5,10")).is_ok());
        assert!(Percents::parse(Some("1,2,3,4,5,6,7,8,9,10")).is_ok());
        for bad in [None, Some(""), Some("1,2,3,4,5,6,7,8,9,10,11"), Some("1,,2"), Some("1,x")] {
            assert_eq!(Percents::parse(bad).unwrap_err().code(), ErrorCode::InvalidPercents, "{bad:?}");
        }
    }

    #[test]
    fn the_entry_at_a_cutoff_is_inside_it_and_the_next_rank_is_not() {
        for players in 1..=300_i64 {
            for percent in [1, 33, 50, 99, 250, 1_000, 3_333, 9_999, 10_000] {
                let percent = Hundredths(percent);
                let position = percent.position_in(players);
                // With no ties, the entry at a position has that rank.
                if position > 0 {
                    assert!(Hundredths::top(position, players) <= percent);
                }
                if position < players {
                    assert!(Hundredths::top(position + 1, players) > percent);
                }
            }
        }
    }
}
