//! Who is calling: password hashing and session tokens (the HTTP
//! extractors that use them are `routes/extractors.rs`). Never logs a
//! password or a token.

mod password;
mod session;

pub use password::{HashPolicy, PasswordHasher, Verification};
pub use session::{expired_session_cookie, session_cookie, SessionToken, COOKIE_NAME};
