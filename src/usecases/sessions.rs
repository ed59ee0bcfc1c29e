//! Sessions as every instance sees them: a session's row is the truth,
//! and Redis keeps a copy of its owner (or a mark that it ended or that its
//! player is banned) so that most requests never ask the database.

use std::time::Duration;

use crate::domain::Timestamp;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// How long Redis may answer for a session without asking the database.
const SESSION_CACHE_TTL: Duration = Duration::from_secs(600);
/// What an ended session's key holds in Redis for `SESSION_CACHE_TTL`: a
/// tombstone, so that a request which read the session from the database
/// just before it ended cannot cache it again afterwards (caching only
/// fills an absent key).
const ENDED_SESSION: &str = "-";
/// What a banned player's session key holds in Redis: every request with
/// the session is 403 `banned` until the unban ends it.
const BANNED_SESSION: &str = "!";

/// Ends a session at once on every instance: the database row and the
/// cached copy in Redis go together.
pub async fn logout(state: &AppState, token_hash: &str) -> Result<(), ApiError> {
    let mut conn = state.store.conn().await?;
    state.store.delete_session(&mut conn, token_hash).await?;
    drop(conn);
    forget_sessions(state, &[token_hash.to_owned()]).await;
    Ok(())
}

/// Replaces the cached copies of ended sessions with tombstones (see
/// `ENDED_SESSION`), on every instance at once.
pub async fn forget_sessions(state: &AppState, token_hashes: &[String]) {
    mark_sessions(state, token_hashes, ENDED_SESSION).await;
}

/// Marks the cached copies of a banned player's sessions (see
/// `BANNED_SESSION`), on every instance at once.
pub async fn ban_sessions(state: &AppState, token_hashes: &[String]) {
    mark_sessions(state, token_hashes, BANNED_SESSION).await;
}

async fn mark_sessions(state: &AppState, token_hashes: &[String], mark: &str) {
    let Some(redis) = &state.redis else { return };
    let keys: Vec<String> = token_hashes.iter().map(|hash| redis.keys().session(hash)).collect();
    if let Err(error) = redis.set_many(&keys, mark, SESSION_CACHE_TTL).await {
        // The database knows better; no cached session is believed until
        // the recovery has dropped them all (the rank engine's check sees it).
        tracing::error!(%error, "ended or banned sessions could not be marked in Redis");
        redis.distrust();
    }
}

/// The player behind a live session, and the data generation the session
/// belongs to: a post carries it, and the writer refuses it once an
/// initialize has replaced that data (the player's id may then name a
/// generated player).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionOwner {
    pub user_id: i64,
    pub generation: i64,
}

/// The player of a live session: from Redis when it knows, else from the
/// database (then remembered in Redis). Redis trouble only costs the
/// database lookup. A banned player's session is 403 `banned`. A cached
/// copy names its data generation and counts only while the shared
/// generation (raised by initialize before it wipes) is the same: it is
/// read in the same round trip.
pub async fn session_user(state: &AppState, token_hash: &str) -> Result<Option<SessionOwner>, ApiError> {
    if let Some(redis) = state.redis.as_ref().filter(|redis| redis.is_trusted()) {
        let keys = [redis.keys().data_generation(), redis.keys().session(token_hash)];
        if let Ok([generation, Some(cached)]) = redis.get_many(&keys).await.as_deref() {
            let current = generation.as_deref().and_then(|g| g.parse::<i64>().ok()).unwrap_or(0);
            match cached.as_str() {
                ENDED_SESSION => return Ok(None),
                BANNED_SESSION => return Err(ErrorCode::Banned.into()),
                live => {
                    if let Some(owner) = parse_cached_session(live).filter(|owner| owner.generation == current) {
                        return Ok(Some(owner));
                    }
                }
            }
        }
    }
    let mut conn = state.store.conn().await?;
    let Some(session) = state.store.session(&mut conn, token_hash, Timestamp::now()).await? else {
        return Ok(None);
    };
    drop(conn);
    if let Some(redis) = &state.redis {
        let remaining = u64::try_from(session.expires_at.millis() - Timestamp::now().millis()).unwrap_or(0);
        let ttl = Duration::from_millis(remaining).min(SESSION_CACHE_TTL);
        let value = if session.banned_at.is_some() {
            BANNED_SESSION.to_owned()
        } else {
            format!("{} {}", session.user_id, session.generation)
        };
        let key = redis.keys().session(token_hash);
        if let Err(error) = redis.set_if_absent(&key, &value, ttl).await {
            tracing::debug!(%error, "session not cached in Redis");
        }
    }
    if session.banned_at.is_some() {
        return Err(ErrorCode::Banned.into());
    }
    Ok(Some(SessionOwner { user_id: session.user_id, generation: session.generation }))
}

/// A cached live session: `user_id generation`.
fn parse_cached_session(value: &str) -> Option<SessionOwner> {
    let (user_id, generation) = value.split_once(' ')?;
    Some(SessionOwner { user_id: user_id.parse().ok()?, generation: generation.parse().ok()? })
}
