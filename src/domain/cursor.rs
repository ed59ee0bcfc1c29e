//! The keyset cursor of ranking pages and the board key it carries.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::{Board, BoardPeriod, Ranking, MAX_SUBSCORES};
use crate::error::{ApiError, ErrorCode};

/// A player's position in a board's order: the sort key of the board.
///
/// On the best board `at` is `best_at` (ms); on the total board it is unused
/// and always 0, so that one key type serves both boards. `subscores` are
/// those of a board ranked by them (see [`Ranking`]), else 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardKey {
    pub score: i64,
    pub subscores: [i64; MAX_SUBSCORES],
    pub at: i64,
    pub id: i64,
}

impl BoardKey {
    /// The key of a board ranked by its score alone.
    pub const fn of(score: i64, at: i64, id: i64) -> Self {
        Self { score, subscores: [0; MAX_SUBSCORES], at, id }
    }

    /// Whether two keys share a rank: the same score and subscores.
    pub fn ties(&self, other: &Self) -> bool {
        self.score == other.score && self.subscores == other.subscores
    }
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
/// boards its number and the period), the key, and an 8-byte signature
/// (HMAC-SHA256 under the deployment's cursor secret, see [`CursorKeys`]).
/// A cursor grants nothing, but what it carries steers the read (where a
/// walk starts, which period): a forged or garbled one is a clean 400
/// `invalid_cursor` before any work, never a page read at a made-up place.
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
/// On a board with subscores, the key carries them after the id.
const CUSTOM_WALK: u8 = 4;
const KEY_LEN: usize = 3 * 8;
const SIGNATURE_LEN: usize = 8;

/// The secrets cursors are signed with: the current one signs and
/// verifies; the previous one, while an operator rotates the secret,
/// still verifies (cursors in the hands of clients keep working for the
/// grace time the operator keeps it configured).
#[derive(Clone)]
pub struct CursorKeys {
    current: Vec<u8>,
    previous: Option<Vec<u8>>,
}

impl std::fmt::Debug for CursorKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKeys(..)")
    }
}

impl CursorKeys {
    pub fn new(current: &str, previous: Option<&str>) -> Self {
        Self { current: current.as_bytes().to_vec(), previous: previous.map(|p| p.as_bytes().to_vec()) }
    }

    fn sign(key: &[u8], payload: &[u8]) -> [u8; SIGNATURE_LEN] {
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
        mac.update(payload);
        let mut out = [0u8; SIGNATURE_LEN];
        out.copy_from_slice(&mac.finalize().into_bytes()[..SIGNATURE_LEN]);
        out
    }

    /// Whether `signature` signs `payload` under the current or the previous secret.
    fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        let matches = |key: &[u8]| {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
            mac.update(payload);
            // Constant time: a forger learns nothing from how long a refusal took.
            mac.verify_truncated_left(signature).is_ok()
        };
        matches(&self.current) || self.previous.as_deref().is_some_and(matches)
    }
}

impl Cursor {
    pub fn encode(&self, keys: &CursorKeys) -> String {
        let mut bytes = Vec::with_capacity(2 + 16 + KEY_LEN + 8 + SIGNATURE_LEN);
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
        for subscore in &self.after.subscores[..self.board.ranking.subscores().len()] {
            bytes.extend_from_slice(&subscore.to_be_bytes());
        }
        if let (Some(walk), Board::Custom(_)) = (self.walk, self.board.board) {
            bytes.extend_from_slice(&walk.changes.to_be_bytes());
        }
        let signature = CursorKeys::sign(&keys.current, &bytes);
        bytes.extend_from_slice(&signature);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a cursor for `board` (ordered by `ranking`) signed under
    /// `keys`; a cursor minted for another board is invalid too.
    pub fn parse(raw: &str, board: Board, ranking: Ranking, keys: &CursorKeys) -> Result<Self, ApiError> {
        let invalid = || ApiError::new(ErrorCode::InvalidCursor);
        // The longest cursor is 99 characters (a walk on a board with two
        // subscores): nothing longer is decoded.
        if raw.len() > 100 {
            return Err(invalid());
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| invalid())?;
        let payload_len = bytes.len().checked_sub(SIGNATURE_LEN).ok_or_else(invalid)?;
        let (payload, signature) = bytes.split_at(payload_len);
        if payload.len() < 2 || !keys.verifies(payload, signature) {
            return Err(invalid());
        }
        let field = |at: usize| -> Option<i64> {
            let bytes: [u8; 8] = payload.get(at..at + 8)?.try_into().ok()?;
            Some(i64::from_be_bytes(bytes))
        };
        let subscores = ranking.subscores().len();
        let custom = 42 + 8 * subscores;
        let (cursor_board, period, key_at) = match (payload[0], payload[1], payload.len()) {
            (BUILTIN, b'b', 26) => (Board::Best, 0, 2),
            (BUILTIN, b't', 26) => (Board::Total, 0, 2),
            (CUSTOM, b'c', len) | (CUSTOM_WALK, b'c', len)
                if len == custom + 8 * usize::from(payload[0] == CUSTOM_WALK) =>
            {
                (Board::Custom(field(2).ok_or_else(invalid)?), field(10).ok_or_else(invalid)?, 18)
            }
            _ => return Err(invalid()),
        };
        if cursor_board != board || period < 0 {
            return Err(invalid());
        }
        let key = |i: usize| field(key_at + i * 8).ok_or_else(invalid);
        let mut after = BoardKey::of(key(0)?, key(1)?, key(2)?);
        for (index, subscore) in after.subscores[..subscores].iter_mut().enumerate() {
            *subscore = key(3 + index)?;
        }
        let walk = match payload[0] {
            CUSTOM_WALK => Some(Walk { changes: u64::try_from(key(3 + subscores)?).map_err(|_| invalid())? }),
            _ => None,
        };
        Ok(Self { board: BoardPeriod { board, ranking, period }, after, walk })
    }
}

/// A secret for cursors made from another one (the database's stored one,
/// or a configured one): a fixed-size key whatever was configured.
pub fn derive_secret(seed: &str) -> String {
    Sha256::digest(seed.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Order;

    const DESC: Ranking = Ranking::by_score(Order::Desc);
    const ASC: Ranking = Ranking::by_score(Order::Asc);

    fn sample() -> Cursor {
        Cursor {
            board: BoardPeriod::builtin(Board::Best),
            after: BoardKey::of(1200, 1_790_000_000_123, 42),
            walk: None,
        }
    }

    fn keys() -> CursorKeys {
        CursorKeys::new("a secret of the deployment", None)
    }

    #[test]
    fn round_trips() {
        let keys = &keys();
        let cursor = sample();
        let encoded = cursor.encode(keys);
        assert!(encoded.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(encoded.len(), 46);
        assert_eq!(Cursor::parse(&encoded, Board::Best, DESC, keys).unwrap(), cursor);
        let custom = Cursor {
            board: BoardPeriod { board: Board::Custom(7), ranking: ASC, period: 12 },
            after: BoardKey::of(-5, 3, 9),
            walk: None,
        };
        assert_eq!(Cursor::parse(&custom.encode(keys), Board::Custom(7), ASC, keys).unwrap(), custom);
        let walked = Cursor { walk: Some(Walk { changes: 1 << 40 }), ..custom };
        assert_eq!(walked.encode(keys).len(), 78, "the longest cursor (see the OpenAPI pattern)");
        assert_eq!(Cursor::parse(&walked.encode(keys), Board::Custom(7), ASC, keys).unwrap(), walked);
        assert!(Cursor::parse(&custom.encode(keys), Board::Custom(8), ASC, keys).is_err());
    }

    /// On a board with subscores the key carries them; a cursor of the
    /// board before it had them (or of another shape) is refused.
    #[test]
    fn a_cursor_carries_the_subscores_of_its_board() {
        let keys = &keys();
        let ranking = Ranking::with_subscores(Order::Desc, &[Order::Asc, Order::Desc]);
        let after = BoardKey { subscores: [(1 << 53) - 1, 0], ..BoardKey::of(7, 3, 9) };
        let cursor = Cursor { board: BoardPeriod { board: Board::Custom(7), ranking, period: 2 }, after, walk: None };
        assert_eq!(Cursor::parse(&cursor.encode(keys), Board::Custom(7), ranking, keys).unwrap(), cursor);
        let walked = Cursor { walk: Some(Walk { changes: u64::MAX >> 1 }), ..cursor };
        assert_eq!(walked.encode(keys).len(), 99, "the longest cursor (see the OpenAPI pattern)");
        assert_eq!(Cursor::parse(&walked.encode(keys), Board::Custom(7), ranking, keys).unwrap(), walked);
        let one = Ranking::with_subscores(Order::Desc, &[Order::Asc]);
        assert!(Cursor::parse(&cursor.encode(keys), Board::Custom(7), one, keys).is_err());
        assert!(Cursor::parse(&cursor.encode(keys), Board::Custom(7), DESC, keys).is_err());
        let plain = Cursor { board: BoardPeriod { ranking: DESC, ..cursor.board }, ..cursor };
        assert!(Cursor::parse(&plain.encode(keys), Board::Custom(7), ranking, keys).is_err());
    }

    /// A cursor signed under another secret, or forged from a real one
    /// with another key or walk, is refused; after a rotation the previous
    /// secret's cursors still verify while it is configured.
    #[test]
    fn forged_cursors_are_refused_and_a_rotation_keeps_the_previous_secret() {
        let old = CursorKeys::new("old secret", None);
        let cursor = sample();
        let issued = cursor.encode(&old);
        let stranger = CursorKeys::new("somebody else's secret", None);
        assert!(Cursor::parse(&issued, Board::Best, DESC, &stranger).is_err());
        // Re-signed with a guessed key after moving the key: refused.
        let moved = Cursor { after: BoardKey { score: 5, ..cursor.after }, ..cursor };
        assert!(Cursor::parse(&moved.encode(&stranger), Board::Best, DESC, &old).is_err());
        let rotated = CursorKeys::new("new secret", Some("old secret"));
        assert_eq!(Cursor::parse(&issued, Board::Best, DESC, &rotated).unwrap(), cursor);
        assert_eq!(Cursor::parse(&cursor.encode(&rotated), Board::Best, DESC, &rotated).unwrap(), cursor);
        let after_grace = CursorKeys::new("new secret", None);
        assert!(Cursor::parse(&issued, Board::Best, DESC, &after_grace).is_err());
        assert!(Cursor::parse(&"A".repeat(10_000), Board::Best, DESC, &old).is_err());
    }

    #[test]
    fn rejects_garbage_tampering_and_the_other_board() {
        let keys = &keys();
        let encoded = sample().encode(keys);
        assert!(Cursor::parse(&encoded, Board::Total, DESC, keys).is_err());
        for bad in ["", "abc", "!!!!", &encoded[1..], &format!("{encoded}A")] {
            let error = Cursor::parse(bad, Board::Best, DESC, keys).unwrap_err();
            assert_eq!(error.code(), ErrorCode::InvalidCursor, "{bad}");
        }
        // Flip one character in the middle: the signature catches it.
        let mut tampered: Vec<char> = encoded.chars().collect();
        let i = tampered.len() / 2;
        tampered[i] = if tampered[i] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert!(Cursor::parse(&tampered, Board::Best, DESC, keys).is_err());
    }
}
