//! Session tokens: 256 random bits, URL-safe, stored server-side only as a
//! SHA-256 hash so that a leaked database does not leak live sessions.

use actix_web::cookie::{time::Duration, Cookie, SameSite};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore;
use sha2::{Digest, Sha256};

pub const COOKIE_NAME: &str = "session";

/// A session token as the client holds it. Not `Debug`, so it cannot end up
/// in a log line by accident.
pub struct SessionToken(String);

impl SessionToken {
    pub fn generate() -> Self {
        Self(random_secret())
    }

    pub fn from_client(raw: &str) -> Self {
        Self(raw.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What the database stores and looks up: hex SHA-256 of the token.
    pub fn hash(&self) -> String {
        sha256_hex(&self.0)
    }
}

/// 256 random bits, URL-safe base64 without padding (43 characters).
pub fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Hex SHA-256: how tokens and keys are stored. A plain hash suffices for
/// 256 random bits (no guessing to slow down, unlike a password).
pub(super) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The `session` cookie that login and registration set; `secure`: sent
/// over HTTPS only (`COOKIE_SECURE`).
pub fn session_cookie(token: &SessionToken, ttl_secs: i64, secure: bool) -> Cookie<'static> {
    Cookie::build(COOKIE_NAME, token.as_str().to_owned())
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(Duration::seconds(ttl_secs))
        .finish()
}

/// Clears the cookie on logout.
pub fn expired_session_cookie() -> Cookie<'static> {
    Cookie::build(COOKIE_NAME, "").path("/").http_only(true).same_site(SameSite::Lax).max_age(Duration::ZERO).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_url_safe_and_distinct() {
        let a = SessionToken::generate();
        let b = SessionToken::generate();
        assert_ne!(a.as_str(), b.as_str());
        assert_eq!(a.as_str().len(), 43); // 256 bits in unpadded base64
        assert!(a.as_str().chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }

    #[test]
    fn hash_is_stable_and_not_the_token() {
        let token = SessionToken::from_client("abc");
        assert_eq!(token.hash(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(token.hash(), token.as_str());
    }

    #[test]
    fn cookie_flags() {
        let cookie = session_cookie(&SessionToken::from_client("t"), 60, false).to_string();
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Lax"), "{cookie}");
        assert!(cookie.contains("Path=/"), "{cookie}");
        assert!(!cookie.contains("Secure"), "{cookie}");
        let secure = session_cookie(&SessionToken::from_client("t"), 60, true).to_string();
        assert!(secure.contains("Secure"), "{secure}");
    }
}
