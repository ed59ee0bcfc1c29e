//! Server keys: what a game's servers post scores with (v3 score
//! integrity). Like session tokens, 256 random bits stored only as a
//! SHA-256 hash; the prefix tells them apart in an `Authorization` header
//! without a lookup, and lets secret scanners find a leaked one.

use super::session::{random_secret, sha256_hex};

/// What every server key starts with.
pub const SERVER_KEY_PREFIX: &str = "hsk_";

/// A server key as its holder presents it. Not `Debug`: never logged.
pub struct ServerKey(String);

impl ServerKey {
    pub fn generate() -> Self {
        Self(format!("{SERVER_KEY_PREFIX}{}", random_secret()))
    }

    /// The bearer token, when it is a server key (by its prefix).
    pub fn from_bearer(token: &str) -> Option<Self> {
        token.starts_with(SERVER_KEY_PREFIX).then(|| Self(token.to_owned()))
    }

    /// Shown once, when the key is made.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> String {
        sha256_hex(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_prefix_and_only_those_are_taken_as_keys() {
        let key = ServerKey::generate();
        assert!(key.as_str().starts_with(SERVER_KEY_PREFIX));
        assert_eq!(key.as_str().len(), SERVER_KEY_PREFIX.len() + 43);
        assert!(ServerKey::from_bearer(key.as_str()).is_some());
        assert!(ServerKey::from_bearer("a-session-token").is_none());
        assert_ne!(key.hash(), ServerKey::generate().hash());
    }
}
