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

/// The most subscores a board ranks by (the contract's limit).
pub const MAX_SUBSCORES: usize = 2;

/// The largest subscore (as the largest score: 2^53 − 1, exact in a JSON
/// number everywhere).
pub const MAX_SUBSCORE: i64 = (1 << 53) - 1;

/// A board's tie-breaker (v4 `subscores`): ranks entries with equal scores.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Subscore {
    /// 1..=32 characters of `[a-z0-9_]`, distinct on a board.
    pub name: String,
    #[serde(with = "order_text")]
    pub order: Order,
}

mod order_text {
    use super::Order;

    pub fn serialize<S: serde::Serializer>(order: &Order, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(order.as_str())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Order, D::Error> {
        let text: String = serde::Deserialize::deserialize(deserializer)?;
        Order::parse(Some(&serde_json::Value::String(text))).map_err(|_| serde::de::Error::custom("bad order"))
    }
}

impl Subscore {
    /// A board definition's `subscores`: absent, null or up to
    /// [`MAX_SUBSCORES`] of `{"name", "order"}` (no other field), names
    /// distinct; else 422 `invalid_subscores`.
    pub fn parse_list(raw: Option<&Value>) -> Result<Vec<Self>, ApiError> {
        let invalid = || ApiError::new(ErrorCode::InvalidSubscores);
        let items = match raw {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) if items.len() <= MAX_SUBSCORES => items,
            Some(_) => return Err(invalid()),
        };
        let mut subscores: Vec<Self> = Vec::with_capacity(items.len());
        for item in items {
            let Some(fields) = item.as_object() else { return Err(invalid()) };
            if fields.keys().any(|key| key != "name" && key != "order") {
                return Err(invalid());
            }
            let name = fields.get("name").and_then(Value::as_str).ok_or_else(invalid)?;
            let well_formed = (1..=32).contains(&name.len())
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !well_formed || subscores.iter().any(|other| other.name == name) {
                return Err(invalid());
            }
            let order = match fields.get("order") {
                Some(Value::String(text)) if text == "asc" => Order::Asc,
                Some(Value::String(text)) if text == "desc" => Order::Desc,
                _ => return Err(invalid()),
            };
            subscores.push(Self { name: name.to_owned(), order });
        }
        Ok(subscores)
    }

    /// A post's `subscores` on a board with `board` ones: exactly that
    /// many integers in 0..=[`MAX_SUBSCORE`]; on a board without them,
    /// absent (or null). Else 422 `invalid_subscores`.
    pub fn parse_values(raw: Option<&Value>, board: &[Self]) -> Result<Vec<i64>, ApiError> {
        let invalid = || ApiError::new(ErrorCode::InvalidSubscores);
        match raw {
            None | Some(Value::Null) if board.is_empty() => Ok(Vec::new()),
            Some(Value::Array(values)) if !board.is_empty() && values.len() == board.len() => values
                .iter()
                .map(|value| value.as_i64().filter(|v| (0..=MAX_SUBSCORE).contains(v)).ok_or_else(invalid))
                .collect(),
            _ => Err(invalid()),
        }
    }
}

/// How a board orders its entries (the contract's entry order): the score
/// in the board's order, then each subscore in its own, then `achieved_at`
/// ascending, then user id ascending. Entries equal on the score and every
/// subscore share a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ranking {
    pub score: Order,
    /// The subscores' orders: the first `subscores` of them are the board's.
    orders: [Order; MAX_SUBSCORES],
    subscores: u8,
}

impl Ranking {
    /// A board ranked by its score alone.
    pub const fn by_score(score: Order) -> Self {
        Self { score, orders: [Order::Desc; MAX_SUBSCORES], subscores: 0 }
    }

    /// A board ranked by its score, then by these subscores (at most
    /// [`MAX_SUBSCORES`]; more are a caller's bug, and left out).
    pub fn with_subscores(score: Order, subscores: &[Order]) -> Self {
        let mut ranking = Self::by_score(score);
        for (slot, order) in ranking.orders.iter_mut().zip(subscores) {
            *slot = *order;
            ranking.subscores += 1;
        }
        ranking
    }

    /// The orders of the board's subscores, in turn.
    pub fn subscores(&self) -> &[Order] {
        &self.orders[..usize::from(self.subscores)]
    }

    /// Whether (score, subscores) `a` ranks strictly above `b`.
    pub fn better(&self, a: (i64, [i64; MAX_SUBSCORES]), b: (i64, [i64; MAX_SUBSCORES])) -> bool {
        if a.0 != b.0 {
            return self.score.better(a.0, b.0);
        }
        let differing = self.subscores().iter().zip(a.1.into_iter().zip(b.1)).find(|(_, (a, b))| a != b);
        differing.is_some_and(|(order, (a, b))| order.better(a, b))
    }
}

/// A board as the rank engine sees it: which board, which period, and
/// how its entries are ordered. Built-in boards have only period 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardPeriod {
    pub board: Board,
    pub ranking: Ranking,
    pub period: i64,
}

impl BoardPeriod {
    pub fn builtin(board: Board) -> Self {
        Self { board, ranking: Ranking::by_score(Order::Desc), period: 0 }
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
