//! The `Idempotency-Key` header of a score post.

use crate::error::{ApiError, ErrorCode};

/// The `Idempotency-Key` header: 1..=64 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const HEADER: &'static str = "idempotency-key";

    /// From the values of every `Idempotency-Key` header of a request:
    /// `None` when there is none; an error when there are several or the
    /// one is malformed.
    pub fn from_header_values<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Result<Option<Self>, ApiError> {
        let mut values = values.into_iter();
        let Some(value) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(ErrorCode::InvalidIdempotencyKey.into());
        }
        Self::parse(value).map(Some).ok_or_else(|| ErrorCode::InvalidIdempotencyKey.into())
    }

    fn parse(raw: &[u8]) -> Option<Self> {
        let visible = |b: &u8| (0x21..=0x7e).contains(b);
        if (1..=64).contains(&raw.len()) && raw.iter().all(visible) {
            // All bytes are ASCII, so this cannot fail.
            String::from_utf8(raw.to_vec()).ok().map(Self)
        } else {
            None
        }
    }

    /// The key as a server key's post for a player stores it: apart from
    /// the player's own keys (a space, which no sent key has), so that a
    /// player cannot claim beforehand the key a game server will use.
    pub fn of_server(self) -> Self {
        Self(format!("{} server", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_visible_ascii_up_to_64() {
        assert!(IdempotencyKey::parse(b"a").is_some());
        assert!(IdempotencyKey::parse(b"550e8400-e29b-41d4-a716-446655440000").is_some());
        assert!(IdempotencyKey::parse("~".repeat(64).as_bytes()).is_some());
    }

    #[test]
    fn a_server_key_never_shares_a_key_with_a_player() {
        let sent = IdempotencyKey::parse(b"game-1").unwrap();
        assert_eq!(sent.clone().of_server().as_str(), "game-1 server");
        let spelled_alike = IdempotencyKey::parse(b"game-1_server").unwrap();
        assert_ne!(spelled_alike, sent.clone().of_server());
        assert!(IdempotencyKey::parse(sent.of_server().as_str().as_bytes()).is_none(), "no sent key has a space");
    }

    #[test]
    fn rejects_empty_long_spaces_and_non_ascii() {
        for bad in [&b""[..], "x".repeat(65).as_bytes(), b"a b", b"tab\t", "é".as_bytes(), b"\x7f"] {
            assert!(IdempotencyKey::parse(bad).is_none(), "{bad:?}");
        }
    }
}
