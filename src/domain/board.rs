//! Which board a request is about, and the rules of custom boards as a
//! client writes them: ids, names, orders, operators, score ranges.

use std::fmt;

use serde_json::Value;

use crate::error::{ApiError, ErrorCode};

/// Which way a board's scores run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// Higher is better.
    Desc,
    /// Lower is better (e.g. a time).
    Asc,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Desc => "desc",
            Self::Asc => "asc",
        }
    }

    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(Self::Desc),
            Some(Value::String(text)) if text == "desc" => Ok(Self::Desc),
            Some(Value::String(text)) if text == "asc" => Ok(Self::Asc),
            _ => Err(ErrorCode::InvalidOrder.into()),
        }
    }

    /// Whether `a` ranks strictly above `b` on a board of this order.
    pub fn better(self, a: i64, b: i64) -> bool {
        match self {
            Self::Desc => a > b,
            Self::Asc => a < b,
        }
    }
}

/// How a custom board turns a player's posts into their entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The better score in the board's order (the first post that reached it).
    Best,
    /// The last posted score.
    Latest,
    /// The sum of the posted scores (`desc` only).
    Total,
}

impl Operator {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Latest => "latest",
            Self::Total => "total",
        }
    }

    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(Self::Best),
            Some(Value::String(text)) => match text.as_str() {
                "best" => Ok(Self::Best),
                "latest" => Ok(Self::Latest),
                "total" => Ok(Self::Total),
                _ => Err(ErrorCode::InvalidOperator.into()),
            },
            _ => Err(ErrorCode::InvalidOperator.into()),
        }
    }
}

/// Who may post to a board (v3 score integrity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Writers {
    /// Players, with their sessions (and server keys too).
    #[default]
    Players,
    /// Only server keys: the game's servers post for the players.
    Server,
}

impl Writers {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Players => "players",
            Self::Server => "server",
        }
    }

    /// A stored or sent value; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "players" => Some(Self::Players),
            "server" => Some(Self::Server),
            _ => None,
        }
    }

    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(Self::Players),
            Some(Value::String(text)) => Self::from_name(text).ok_or_else(|| ErrorCode::InvalidWriters.into()),
            _ => Err(ErrorCode::InvalidWriters.into()),
        }
    }
}

/// One leaderboard: a built-in one, or a custom board by its number (the
/// catalog's key, never reused, so that a board deleted and created again
/// under the same id shares nothing with its predecessor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Board {
    /// Ordered by `best_score` desc, `best_at` asc, `id` asc.
    Best,
    /// Ordered by `total_score` desc, `id` asc.
    Total,
    Custom(i64),
}

impl Board {
    pub const BUILTIN: [Board; 2] = [Board::Best, Board::Total];

    /// The built-in board with this id, if it is one.
    pub fn builtin(id: &str) -> Option<Self> {
        match id {
            "best" => Some(Self::Best),
            "total" => Some(Self::Total),
            _ => None,
        }
    }

    pub fn is_builtin(self) -> bool {
        !matches!(self, Self::Custom(_))
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Best => f.write_str("best"),
            Self::Total => f.write_str("total"),
            Self::Custom(number) => write!(f, "#{number}"),
        }
    }
}

/// A board as the rank engine sees it: which board, which period, and
/// which way its scores run. Built-in boards have only period 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardPeriod {
    pub board: Board,
    pub order: Order,
    pub period: i64,
}

impl BoardPeriod {
    pub fn builtin(board: Board) -> Self {
        Self { board, order: Order::Desc, period: 0 }
    }
}

/// A board id as a client writes it: 1..=64 characters of `[a-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoardId(String);

impl BoardId {
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        let id = raw.and_then(Value::as_str).ok_or(ErrorCode::InvalidId)?;
        Self::parse_str(id).ok_or_else(|| ErrorCode::InvalidId.into())
    }

    /// An id from a path, if it could be one.
    pub fn parse_str(id: &str) -> Option<Self> {
        let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
        ((1..=64).contains(&id.len()) && id.chars().all(allowed)).then(|| Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A board's display name: 1..=128 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardName(String);

impl BoardName {
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        let name = raw.and_then(Value::as_str).ok_or(ErrorCode::InvalidName)?;
        let length = name.chars().count();
        if (1..=128).contains(&length) && !name.chars().any(char::is_control) {
            Ok(Self(name.to_owned()))
        } else {
            Err(ErrorCode::InvalidName.into())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which period of a board: the one in force, or one by its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeriodSelector {
    Current,
    Index(i64),
}

impl PeriodSelector {
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        match raw {
            None | Some("current") => Ok(Self::Current),
            Some(text) => match text.parse::<i64>() {
                Ok(index) if index >= 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(Self::Index(index)),
                _ => Err(ErrorCode::InvalidPeriod.into()),
            },
        }
    }
}

/// The metadata of a post: a JSON object of at most 1 KiB serialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata(String);

impl Metadata {
    pub const MAX_BYTES: usize = 1024;

    /// `None` when absent or null.
    pub fn parse(raw: Option<&Value>) -> Result<Option<Self>, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(None),
            Some(value @ Value::Object(_)) => {
                let text = value.to_string();
                if text.len() <= Self::MAX_BYTES {
                    Ok(Some(Self(text)))
                } else {
                    Err(ApiError::with_message(ErrorCode::InvalidMetadata, "metadata must be at most 1 KiB as JSON"))
                }
            }
            Some(_) => Err(ErrorCode::InvalidMetadata.into()),
        }
    }

    /// The serialized object as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn board_ids_follow_the_rules() {
        for ok in ["a", "level-3", "speed_run_2", &"x".repeat(64)] {
            assert!(BoardId::parse(Some(&json!(ok))).is_ok(), "{ok}");
        }
        for bad in [json!(""), json!("Level"), json!("a b"), json!("é"), json!("x".repeat(65)), json!(3)] {
            assert_eq!(BoardId::parse(Some(&bad)).unwrap_err().code(), ErrorCode::InvalidId, "{bad}");
        }
    }

    #[test]
    fn orders_operators_and_periods() {
        assert_eq!(Order::parse(None).unwrap(), Order::Desc);
        assert_eq!(Order::parse(Some(&json!("asc"))).unwrap(), Order::Asc);
        assert_eq!(Order::parse(Some(&json!("up"))).unwrap_err().code(), ErrorCode::InvalidOrder);
        assert!(Order::Asc.better(1, 2) && Order::Desc.better(2, 1) && !Order::Desc.better(2, 2));
        assert_eq!(Operator::parse(Some(&json!("latest"))).unwrap(), Operator::Latest);
        assert_eq!(Operator::parse(Some(&json!(1))).unwrap_err().code(), ErrorCode::InvalidOperator);
        assert_eq!(PeriodSelector::parse(Some("7")).unwrap(), PeriodSelector::Index(7));
        assert_eq!(PeriodSelector::parse(Some("current")).unwrap(), PeriodSelector::Current);
        for bad in ["-1", "+1", "x", "", "1.5"] {
            assert_eq!(PeriodSelector::parse(Some(bad)).unwrap_err().code(), ErrorCode::InvalidPeriod, "{bad}");
        }
    }

    #[test]
    fn metadata_is_a_small_object() {
        assert_eq!(Metadata::parse(None).unwrap(), None);
        let parsed = Metadata::parse(Some(&json!({"character": "fox", "replay": 12}))).unwrap().unwrap();
        assert_eq!(parsed.as_str(), r#"{"character":"fox","replay":12}"#);
        for bad in [json!([1]), json!("x"), json!(5), json!({"big": "y".repeat(1100)})] {
            assert_eq!(Metadata::parse(Some(&bad)).unwrap_err().code(), ErrorCode::InvalidMetadata);
        }
    }
}
