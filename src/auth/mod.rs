//! Who is calling: password hashing, session tokens and server keys (the HTTP
//! extractors that use them are `routes/extractors.rs`). Never logs a
//! password or a token.

mod password;
mod server_key;
mod session;

pub use password::{HashPolicy, PasswordHasher, Verification};
pub use server_key::ServerKey;
pub use session::{expired_session_cookie, random_secret, session_cookie, SessionToken, COOKIE_NAME};
