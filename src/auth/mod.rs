//! Who is calling: password hashing, session tokens and the `AuthUser`
//! extractor. Never logs a password or a token.

mod extractor;
mod password;
mod session;

pub(crate) use extractor::bearer_token;
pub use extractor::AuthUser;
pub use password::{HashPolicy, HashingBusy, PasswordHasher, Verification};
pub use session::{expired_session_cookie, session_cookie, SessionToken, COOKIE_NAME};
