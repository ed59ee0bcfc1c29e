//! A league's ladder (v3): its tiers, its cohorts' size, and the move
//! rule of the contract, applied to a cohort's final ranks.

use serde_json::{Map, Value};

use crate::error::{ApiError, ErrorCode};

/// Tiers a league has, at least and at most.
const TIERS: std::ops::RangeInclusive<usize> = 2..=20;
/// Players a cohort takes, at least and at most.
const COHORT_SIZE: std::ops::RangeInclusive<i64> = 2..=200;
/// The longest tier name.
const MAX_TIER_NAME_CHARS: usize = 64;

/// A validated ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    /// Lowest first.
    pub tiers: Vec<String>,
    pub cohort_size: i64,
    /// How many of a cohort's best move up, and of its worst down.
    pub promote: i64,
    pub demote: i64,
}

/// Where a player goes when a period ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    Up,
    Down,
    Stay,
}

impl Movement {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
            Self::Stay => "stay",
        }
    }

    /// What a cohort page calls the player's zone.
    pub fn zone(self) -> &'static str {
        match self {
            Self::Up => "promote",
            Self::Down => "demote",
            Self::Stay => "stay",
        }
    }
}

impl Ladder {
    /// The ladder fields of a league's definition.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, ApiError> {
        let names = body.get("tiers").and_then(Value::as_array).ok_or(ErrorCode::InvalidTiers)?;
        let tiers: Vec<String> = names
            .iter()
            .map(|name| {
                name.as_str()
                    .filter(|name| {
                        let length = name.chars().count();
                        (1..=MAX_TIER_NAME_CHARS).contains(&length) && !name.chars().any(char::is_control)
                    })
                    .map(str::to_owned)
                    .ok_or(ErrorCode::InvalidTiers)
            })
            .collect::<Result<_, _>>()?;
        if !TIERS.contains(&tiers.len()) {
            return Err(ErrorCode::InvalidTiers.into());
        }
        let number = |field: &str, code: ErrorCode, range: std::ops::RangeInclusive<i64>| {
            body.get(field).and_then(Value::as_i64).filter(|n| range.contains(n)).ok_or(code)
        };
        let cohort_size = number("cohort_size", ErrorCode::InvalidCohortSize, COHORT_SIZE)?;
        let promote = number("promote", ErrorCode::InvalidPromote, 0..=cohort_size)?;
        let demote = number("demote", ErrorCode::InvalidDemote, 0..=cohort_size)?;
        Ok(Self { tiers, cohort_size, promote, demote })
    }

    pub fn top_tier(&self) -> i64 {
        self.tiers.len() as i64 - 1
    }

    /// The tier's name (tiers stored beyond the ladder, never written, read
    /// as the top one).
    pub fn tier_name(&self, tier: i64) -> &str {
        let index = usize::try_from(tier).unwrap_or(0).min(self.tiers.len().saturating_sub(1));
        self.tiers.get(index).map_or("", String::as_str)
    }

    /// The contract's move rule, for final rank `rank` among the `players`
    /// ranked in a cohort of `tier`: up when `rank <= promote` (not in the
    /// top tier), else down when `rank > players - demote` (not in tier 0),
    /// else stay. Tied players share a rank, so they share a fate.
    pub fn movement(&self, tier: i64, rank: i64, players: i64) -> Movement {
        if rank <= self.promote && tier < self.top_tier() {
            Movement::Up
        } else if rank > players - self.demote && tier > 0 {
            Movement::Down
        } else {
            Movement::Stay
        }
    }

    /// The tier after a move.
    pub fn next_tier(&self, tier: i64, movement: Movement) -> i64 {
        match movement {
            Movement::Up => (tier + 1).min(self.top_tier()),
            Movement::Down => (tier - 1).max(0),
            Movement::Stay => tier,
        }
    }
}

/// A cohort's id: opaque to clients, `<period>-<tier>-<number>` here.
pub fn cohort_id(period: i64, tier: i64, cohort: i64) -> String {
    format!("{period}-{tier}-{cohort}")
}

/// Competition ranks (1, 2, 2, 4) of keys already in board order: equal
/// keys share the rank of the first of them.
pub fn competition_ranks(keys: &[i64]) -> Vec<i64> {
    let mut ranks = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        let rank = match index {
            0 => 1,
            _ if keys[index - 1] == *key => ranks[index - 1],
            _ => index as i64 + 1,
        };
        ranks.push(rank);
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ladder(tiers: usize, promote: i64, demote: i64) -> Ladder {
        Ladder { tiers: (0..tiers).map(|i| format!("T{i}")).collect(), cohort_size: 30, promote, demote }
    }

    #[test]
    fn the_move_rule_as_written() {
        let ladder = ladder(3, 2, 2);
        // Middle tier, five players.
        let fates: Vec<_> = (1..=5).map(|rank| ladder.movement(1, rank, 5)).collect();
        assert_eq!(fates, [Movement::Up, Movement::Up, Movement::Stay, Movement::Down, Movement::Down]);
        // Top tier: nobody goes up; tier 0: nobody goes down.
        assert_eq!(ladder.movement(2, 1, 5), Movement::Stay);
        assert_eq!(ladder.movement(0, 5, 5), Movement::Stay);
        // Up wins over down in a tiny cohort where both apply.
        assert_eq!(ladder.movement(1, 1, 1), Movement::Up);
        assert_eq!(ladder.next_tier(1, Movement::Up), 2);
        assert_eq!(ladder.next_tier(1, Movement::Down), 0);
    }

    #[test]
    fn tied_players_share_a_rank_and_so_a_fate() {
        // Scores 90, 80, 80, 70 (rank keys -90, -80, -80, -70).
        let ranks = competition_ranks(&[-90, -80, -80, -70]);
        assert_eq!(ranks, [1, 2, 2, 4]);
        let ladder = ladder(3, 2, 1);
        let fates: Vec<_> = ranks.iter().map(|rank| ladder.movement(1, *rank, 4)).collect();
        assert_eq!(fates, [Movement::Up, Movement::Up, Movement::Up, Movement::Down]);
        assert_eq!(competition_ranks(&[5, 5, 5]), [1, 1, 1]);
        assert!(competition_ranks(&[]).is_empty());
    }

    #[test]
    fn ladders_are_validated_field_by_field() {
        let good = json!({"tiers": ["Bronze", "Silver"], "cohort_size": 30, "promote": 7, "demote": 5});
        assert!(Ladder::parse(good.as_object().unwrap()).is_ok());
        for (field, value, code) in [
            ("tiers", json!(["Only"]), ErrorCode::InvalidTiers),
            ("tiers", json!(["A", ""]), ErrorCode::InvalidTiers),
            ("cohort_size", json!(1), ErrorCode::InvalidCohortSize),
            ("cohort_size", json!(201), ErrorCode::InvalidCohortSize),
            ("promote", json!(31), ErrorCode::InvalidPromote),
            ("demote", json!(-1), ErrorCode::InvalidDemote),
        ] {
            let mut body = good.as_object().unwrap().clone();
            body.insert(field.to_owned(), value);
            assert_eq!(Ladder::parse(&body).err().map(|e| e.code()), Some(code), "{field}");
        }
    }
}
