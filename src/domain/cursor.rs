//! The keyset cursor of ranking pages and the board key it carries.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{Board, BoardPeriod, Order};
use crate::error::{ApiError, ErrorCode};

/// A player's position in a board's order: the sort key of the board.
///
/// On the best board `at` is `best_at` (ms); on the total board it is unused
/// and always 0, so that one key type serves both boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardKey {
    pub score: i64,
    pub at: i64,
    pub id: i64,
}

/// Where a walk of a `latest` board began: the board period's change count
/// then (`board_periods.changes`, the numbering every source keeps). Later
/// pages leave out the entries changed since, which are the only ones that
/// can have moved down past the cursor (and shown twice); the numbers are
/// the database's, so a walk goes on unchanged on whichever source answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Walk {
    pub changes: u64,
}

/// An opaque keyset cursor: "continue after this key on this board, in
/// this period" (a walk that began before a reset goes on in its period),
/// and on `latest` boards where the walk began.
///
/// Encoded as URL-safe base64 of a version byte, the board (and on custom
/// boards its number and the period), the key and a 4-byte checksum. The
/// checksum is not a secret (a cursor grants nothing); it only makes
/// garbage and typos a clean 400 `invalid_cursor` instead of a silently
/// wrong page. Built-in boards keep the first version's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub board: BoardPeriod,
    pub after: BoardKey,
    pub walk: Option<Walk>,
}

/// Built-in boards: version, board letter, key.
const BUILTIN: u8 = 1;
/// Custom boards: version, 'c', number, period, key.
const CUSTOM: u8 = 2;
/// Custom boards walked with a [`Walk`]: as [`CUSTOM`], then the change
/// count. (Version 3 carried a source's own numbering and is refused.)
const CUSTOM_WALK: u8 = 4;
const KEY_LEN: usize = 3 * 8;
const CHECKSUM_LEN: usize = 4;

impl Cursor {
    pub fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(2 + 16 + KEY_LEN + CHECKSUM_LEN);
        match self.board.board {
            Board::Best => bytes.extend_from_slice(&[BUILTIN, b'b']),
            Board::Total => bytes.extend_from_slice(&[BUILTIN, b't']),
            Board::Custom(number) => {
                bytes.extend_from_slice(&[if self.walk.is_some() { CUSTOM_WALK } else { CUSTOM }, b'c']);
                bytes.extend_from_slice(&number.to_be_bytes());
                bytes.extend_from_slice(&self.board.period.to_be_bytes());
            }
        }
        for field in [self.after.score, self.after.at, self.after.id] {
            bytes.extend_from_slice(&field.to_be_bytes());
        }
        if let (Some(walk), Board::Custom(_)) = (self.walk, self.board.board) {
            bytes.extend_from_slice(&walk.changes.to_be_bytes());
        }
        let checksum = checksum(&bytes);
        bytes.extend_from_slice(&checksum);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a cursor for `board` (whose scores run `order`); a cursor
    /// minted for another board is invalid too.
    pub fn parse(raw: &str, board: Board, order: Order) -> Result<Self, ApiError> {
        let invalid = || ApiError::new(ErrorCode::InvalidCursor);
        let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| invalid())?;
        let payload_len = bytes.len().checked_sub(CHECKSUM_LEN).ok_or_else(invalid)?;
        let (payload, sum) = bytes.split_at(payload_len);
        if checksum(payload) != sum || payload.len() < 2 {
            return Err(invalid());
        }
        let field = |at: usize| -> Option<i64> {
            let bytes: [u8; 8] = payload.get(at..at + 8)?.try_into().ok()?;
            Some(i64::from_be_bytes(bytes))
        };
        let (cursor_board, period, key_at) = match (payload[0], payload[1], payload.len()) {
            (BUILTIN, b'b', 26) => (Board::Best, 0, 2),
            (BUILTIN, b't', 26) => (Board::Total, 0, 2),
            (CUSTOM, b'c', 42) | (CUSTOM_WALK, b'c', 50) => {
                (Board::Custom(field(2).ok_or_else(invalid)?), field(10).ok_or_else(invalid)?, 18)
            }
            _ => return Err(invalid()),
        };
        if cursor_board != board || period < 0 {
            return Err(invalid());
        }
        let key = |i: usize| field(key_at + i * 8).ok_or_else(invalid);
        let walk = match payload[0] {
            CUSTOM_WALK => Some(Walk { changes: u64::try_from(key(3)?).map_err(|_| invalid())? }),
            _ => None,
        };
        Ok(Self {
            board: BoardPeriod { board, order, period },
            after: BoardKey { score: key(0)?, at: key(1)?, id: key(2)? },
            walk,
        })
    }
}

fn checksum(payload: &[u8]) -> [u8; CHECKSUM_LEN] {
    let digest = Sha256::digest(payload);
    let mut out = [0u8; CHECKSUM_LEN];
    out.copy_from_slice(&digest[..CHECKSUM_LEN]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Cursor {
        Cursor {
            board: BoardPeriod::builtin(Board::Best),
            after: BoardKey { score: 1200, at: 1_790_000_000_123, id: 42 },
            walk: None,
        }
    }

    #[test]
    fn round_trips() {
        let cursor = sample();
        let encoded = cursor.encode();
        assert!(encoded.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(encoded.len(), 40, "built-in cursors keep the first release's format");
        assert_eq!(Cursor::parse(&encoded, Board::Best, Order::Desc).unwrap(), cursor);
        let custom = Cursor {
            board: BoardPeriod { board: Board::Custom(7), order: Order::Asc, period: 12 },
            after: BoardKey { score: -5, at: 3, id: 9 },
            walk: None,
        };
        assert_eq!(Cursor::parse(&custom.encode(), Board::Custom(7), Order::Asc).unwrap(), custom);
        let walked = Cursor { walk: Some(Walk { changes: 1 << 40 }), ..custom };
        assert_eq!(Cursor::parse(&walked.encode(), Board::Custom(7), Order::Asc).unwrap(), walked);
        assert!(Cursor::parse(&custom.encode(), Board::Custom(8), Order::Asc).is_err());
    }

    #[test]
    fn rejects_garbage_tampering_and_the_other_board() {
        let encoded = sample().encode();
        assert!(Cursor::parse(&encoded, Board::Total, Order::Desc).is_err());
        for bad in ["", "abc", "!!!!", &encoded[1..], &format!("{encoded}A")] {
            let error = Cursor::parse(bad, Board::Best, Order::Desc).unwrap_err();
            assert_eq!(error.code(), ErrorCode::InvalidCursor, "{bad}");
        }
        // Flip one character in the middle: the checksum catches it.
        let mut tampered: Vec<char> = encoded.chars().collect();
        let i = tampered.len() / 2;
        tampered[i] = if tampered[i] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert!(Cursor::parse(&tampered, Board::Best, Order::Desc).is_err());
    }
}
