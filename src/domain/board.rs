use std::fmt;

use crate::error::ApiError;

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
            _ => Err(ApiError::not_found("board_not_found", "board must be 'best' or 'total'")),
        }
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
            assert_eq!(Board::parse(bad).unwrap_err().code(), "board_not_found");
        }
    }
}
