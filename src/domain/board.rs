//! Which board a request is about, and which way its scores run.

use std::fmt;

use crate::error::{ApiError, ErrorCode};

/// Which way a board's scores run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// Higher is better.
    Desc,
    /// Lower is better (e.g. a time).
    Asc,
}

/// One of the two leaderboards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Board {
    /// Ordered by `best_score` desc, `best_at` asc, `id` asc.
    Best,
    /// Ordered by `total_score` desc, `id` asc.
    Total,
}

impl Board {
    pub const ALL: [Board; 2] = [Board::Best, Board::Total];

    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        match raw {
            "best" => Ok(Self::Best),
            "total" => Ok(Self::Total),
            _ => Err(ApiError::new(ErrorCode::BoardNotFound)),
        }
    }

    /// Both built-in boards rank higher scores first.
    pub fn order(self) -> Order {
        Order::Desc
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Total => "total",
        }
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_boards_only() {
        assert_eq!(Board::parse("best").unwrap(), Board::Best);
        assert_eq!(Board::parse("total").unwrap(), Board::Total);
        for bad in ["", "Best", "worst", "best "] {
            assert_eq!(Board::parse(bad).unwrap_err().code(), ErrorCode::BoardNotFound);
        }
    }
}
