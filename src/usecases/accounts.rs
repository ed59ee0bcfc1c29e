//! Accounts: registration, login, logout, which player a session is, and
//! the player's own changes (name, password, erasure).

use crate::auth::{SessionToken, Verification};
use crate::domain::{DisplayName, LoginName, Password, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::limits::Limit;
use crate::rank::UserRanks;
use crate::state::AppState;
use crate::store::{EntryRow, NewUser, UserRow};
use crate::usecases::account_changes::{in_transaction, lock_self, publish, Changed, Failure};
use crate::usecases::players;
use crate::usecases::sessions::forget_sessions;

/// Live sessions per player at most: a new login ends the oldest beyond.
pub const MAX_SESSIONS_PER_PLAYER: i64 = 20;

/// A new session: the player as they are now, and the token to send back.
pub struct SessionStarted {
    pub user: UserRow,
    pub ranks: UserRanks,
    pub token: SessionToken,
}

/// Registers a player and logs them in. `address` is the client's, for the
/// per-address limit.
pub async fn register(
    state: &AppState,
    address: &str,
    login_name: LoginName,
    password: Password,
    display_name: Option<DisplayName>,
) -> Result<SessionStarted, ApiError> {
    state.limits.check(Limit::RegistrationPerAddress, address).await?;
    let display_name = display_name.unwrap_or_else(|| DisplayName::from_login_name(&login_name));
    let password_hash = state.passwords.hash(&password).await?;
    let new_user = NewUser {
        login_name: login_name.as_str(),
        login_key: &login_name.key(),
        display_name: display_name.as_str(),
        password_hash: &password_hash,
        created_at: Timestamp::now(),
    };
    let mut conn = state.store.conn().await?;
    let user_id = state.store.insert_user(&mut conn, &new_user).await?;
    drop(conn);
    start_session(state, user_id).await
}

/// What a login presents: a name and password that follow the rules, or
/// strings that do not (which simply name no account).
pub enum LoginAttempt {
    Credentials(LoginName, Password),
    NoSuchAccount,
}

/// Checks a login and starts a session. Unknown names are verified against
/// a dummy hash, so they take as long as a wrong password and fail alike.
///
/// Guesses are limited per (account, address), and per account from
/// addresses the account never logged in from: strangers who use up an
/// account's allowance cannot lock its owner out, who logs in from a known
/// address, and get no more guesses from new addresses. Each attempt is
/// counted before the password is checked (concurrent guesses cannot slip
/// under a limit) and given back when it was right.
pub async fn login(state: &AppState, address: &str, attempt: LoginAttempt) -> Result<SessionStarted, ApiError> {
    state.limits.check(Limit::LoginPerAddress, address).await?;
    let LoginAttempt::Credentials(login_name, password) = attempt else {
        return Err(ErrorCode::InvalidCredentials.into());
    };
    let account = login_name.key();
    let pair = state.limits.account_address_key(&account, address).await;
    let counted = if state.limits.is_known(&account, address).await {
        vec![(Limit::LoginPerAccountAddress, pair)]
    } else {
        vec![(Limit::LoginPerAccountAddress, pair), (Limit::LoginPerAccount, account.clone())]
    };
    for (checked, (limit, key)) in counted.iter().enumerate() {
        if let Err(refused) = state.limits.check(*limit, key).await {
            // A refused attempt is no guess: the limits counted before it give it back.
            refund(state, &counted[..checked]).await;
            return Err(refused);
        }
    }
    match verify_login(state, &account, &password).await {
        Ok(user_id) => {
            refund(state, &counted).await;
            state.limits.remember(&account, address).await;
            start_session(state, user_id).await
        }
        Err(error) => {
            if error.code() != ErrorCode::InvalidCredentials {
                // Not a guess that was checked (the database was away, say).
                refund(state, &counted).await;
            }
            Err(error)
        }
    }
}

async fn refund(state: &AppState, counted: &[(Limit, String)]) {
    for (limit, key) in counted {
        state.limits.refund(*limit, key).await;
    }
}

/// The account's id if `password` is its password and it may log in.
async fn verify_login(state: &AppState, account: &str, password: &Password) -> Result<i64, ApiError> {
    let mut conn = state.store.conn().await?;
    let credentials = state.store.credentials(&mut conn, account).await?;
    drop(conn); // not held across the (slow) hash
    let (user_id, stored_hash, banned) = match credentials {
        Some(found) => (Some(found.id), Some(found.password_hash), found.banned_at.is_some()),
        None => (None, None, false),
    };
    let verification = state.passwords.verify(password, stored_hash).await?;
    let (Some(user_id), Verification::Valid { rehash }) = (user_id, verification) else {
        return Err(ErrorCode::InvalidCredentials.into());
    };
    // Only the right password learns of the ban.
    if banned {
        return Err(ErrorCode::Banned.into());
    }
    if let Some(new_hash) = rehash {
        let mut conn = state.store.conn().await?;
        state.store.set_password_hash(&mut conn, user_id, &new_hash).await?;
    }
    Ok(user_id)
}

async fn start_session(state: &AppState, user_id: i64) -> Result<SessionStarted, ApiError> {
    let token = SessionToken::generate();
    let now = Timestamp::now();
    let expires_at = now.plus_millis(state.settings.session_ttl_secs.saturating_mul(1_000));
    let mut conn = state.store.conn().await?;
    if !state.store.insert_session(&mut conn, &token.hash(), user_id, now, expires_at).await? {
        // Banned or erased since the password was checked.
        return Err(ErrorCode::Banned.into());
    }
    let ended = state.store.end_sessions_beyond(&mut conn, user_id, MAX_SESSIONS_PER_PLAYER).await?;
    drop(conn);
    forget_sessions(state, &ended).await;
    let (user, ranks) = players::profile(state, user_id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("user {user_id} vanished while logging in")))?;
    Ok(SessionStarted { user, ranks, token })
}

/// Checks a logged-in player's password (a change of password or an
/// erasure asks for it): 401 `invalid_credentials` when wrong. Counted
/// like logins of the account, so a stolen session cannot guess it.
async fn check_password(state: &AppState, user_id: i64, password: &Password) -> Result<(), ApiError> {
    let mut conn = state.store.conn().await?;
    let credentials = state.store.credentials_of(&mut conn, user_id).await?.ok_or(ErrorCode::InvalidSession)?;
    drop(conn); // not held across the (slow) hash
    let key = format!("#{user_id}");
    state.limits.check(Limit::LoginPerAccount, &key).await?;
    match state.passwords.verify(password, Some(credentials.password_hash)).await {
        Ok(Verification::Valid { .. }) => {
            state.limits.refund(Limit::LoginPerAccount, &key).await;
            Ok(())
        }
        Ok(Verification::Invalid) => Err(ErrorCode::InvalidCredentials.into()),
        Err(error) => {
            state.limits.refund(Limit::LoginPerAccount, &key).await;
            Err(error)
        }
    }
}

/// What `PATCH /api/me` asks for.
pub struct OwnChange {
    pub display_name: Option<DisplayName>,
    pub password: Option<Password>,
    pub current_password: Option<Password>,
}

/// A player changes their display name and/or password; a new password
/// needs the current one and ends every other session of theirs.
pub async fn change_own_account(
    state: &AppState,
    user_id: i64,
    session: &str,
    change: OwnChange,
) -> Result<(UserRow, UserRanks), ApiError> {
    if change.display_name.is_none() && change.password.is_none() {
        return Err(ErrorCode::InvalidChange.into());
    }
    let password_hash = match (&change.password, &change.current_password) {
        (None, _) => None,
        (Some(_), None) => return Err(ErrorCode::InvalidCurrentPassword.into()),
        (Some(new), Some(current)) => {
            check_password(state, user_id, current).await?;
            Some(state.passwords.hash(new).await?)
        }
    };
    if change.display_name.is_some() {
        state.limits.check(Limit::RenamesPerPlayer, &user_id.to_string()).await?;
    }
    let changed = in_transaction(state, async |conn| {
        let mut row = lock_self(state, conn, user_id).await?;
        let mut changed = Changed::default();
        if let Some(name) = &change.display_name {
            state.store.set_display_name(conn, user_id, name.as_str()).await?;
            row.display_name = name.as_str().to_owned();
            row.version += 1;
            changed.renamed.push(user_id);
        }
        if let Some(hash) = &password_hash {
            state.store.set_password_hash(conn, user_id, hash).await?;
            changed.sessions = state.store.end_sessions(conn, user_id, Some(session)).await?;
        }
        changed.users.push(row);
        Ok::<_, Failure>(changed)
    })
    .await?;
    publish(state, changed).await;
    players::profile(state, user_id).await?.ok_or_else(|| ErrorCode::InvalidSession.into())
}

/// `DELETE /api/me`: a player erases their account, after giving their
/// password, in one transaction: the row, every post, entries on every
/// board and period, league places and history, tournament places, held
/// posts, sessions, idempotency keys, and the queued webhook events that
/// name them.
pub async fn erase_own_account(state: &AppState, user_id: i64, password: &Password) -> Result<(), ApiError> {
    check_password(state, user_id, password).await?;
    let changed = in_transaction(state, async |conn| {
        let row = lock_self(state, conn, user_id).await?;
        let sessions = state.store.end_sessions(conn, user_id, None).await?;
        let entries = state.store.erase_user(conn, user_id, row.is_listed()).await?;
        crate::usecases::webhooks::forget_player(state, conn, user_id).await?;
        let gone = UserRow { version: row.version + 1, banned_at: Some(Timestamp::now()), ..row.clone() };
        let entries =
            entries.into_iter().map(|entry| (EntryRow { version: entry.version + 1, ..entry }, false)).collect();
        Ok::<_, Failure>(Changed {
            users: vec![gone],
            entries,
            sessions,
            renamed: vec![user_id],
            erased: Some(row),
            ..Changed::default()
        })
    })
    .await?;
    publish(state, changed).await;
    Ok(())
}
