//! The keyset cursor of ranking pages and the board key it carries.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::Board;
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

/// An opaque keyset cursor: "continue after this key on this board".
///
/// Encoded as URL-safe base64 of a version byte, the board, the key and a
/// 4-byte checksum. The checksum is not a secret (a cursor grants nothing);
/// it only makes garbage and typos a clean 400 `invalid_cursor` instead of a
/// silently wrong page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub board: Board,
    pub after: BoardKey,
}

const VERSION: u8 = 1;
const PAYLOAD_LEN: usize = 2 + 3 * 8;
const CHECKSUM_LEN: usize = 4;

impl Cursor {
    pub fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(PAYLOAD_LEN + CHECKSUM_LEN);
        bytes.push(VERSION);
        bytes.push(match self.board {
            Board::Best => b'b',
            Board::Total => b't',
        });
        for field in [self.after.score, self.after.at, self.after.id] {
            bytes.extend_from_slice(&field.to_be_bytes());
        }
        let checksum = checksum(&bytes);
        bytes.extend_from_slice(&checksum);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a cursor for `board`; a cursor minted for the other board is
    /// invalid too.
    pub fn parse(raw: &str, board: Board) -> Result<Self, ApiError> {
        let invalid = || ApiError::with_message(ErrorCode::InvalidCursor, "cursor is not one this board returned");
        let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| invalid())?;
        if bytes.len() != PAYLOAD_LEN + CHECKSUM_LEN {
            return Err(invalid());
        }
        let (payload, sum) = bytes.split_at(PAYLOAD_LEN);
        if checksum(payload) != sum || payload[0] != VERSION {
            return Err(invalid());
        }
        let cursor_board = match payload[1] {
            b'b' => Board::Best,
            b't' => Board::Total,
            _ => return Err(invalid()),
        };
        if cursor_board != board {
            return Err(invalid());
        }
        let field = |i: usize| {
            let start = 2 + i * 8;
            let mut buf = [0u8; 8];
            buf.copy_from_slice(&payload[start..start + 8]);
            i64::from_be_bytes(buf)
        };
        Ok(Self { board, after: BoardKey { score: field(0), at: field(1), id: field(2) } })
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
        Cursor { board: Board::Best, after: BoardKey { score: 1200, at: 1_790_000_000_123, id: 42 } }
    }

    #[test]
    fn round_trips() {
        let cursor = sample();
        let encoded = cursor.encode();
        assert!(encoded.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(Cursor::parse(&encoded, Board::Best).unwrap(), cursor);
    }

    #[test]
    fn rejects_garbage_tampering_and_the_other_board() {
        let encoded = sample().encode();
        assert!(Cursor::parse(&encoded, Board::Total).is_err());
        for bad in ["", "abc", "!!!!", &encoded[1..], &format!("{encoded}A")] {
            assert_eq!(Cursor::parse(bad, Board::Best).unwrap_err().code(), ErrorCode::InvalidCursor, "{bad}");
        }
        // Flip one character in the middle: the checksum catches it.
        let mut tampered: Vec<char> = encoded.chars().collect();
        let i = tampered.len() / 2;
        tampered[i] = if tampered[i] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert!(Cursor::parse(&tampered, Board::Best).is_err());
    }
}
