use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use super::session::{SessionToken, COOKIE_NAME};
use crate::domain::Timestamp;
use crate::error::ApiError;
use crate::state::AppState;

/// A caller with a live session. Put it in a handler's arguments to require one.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub user_id: i64,
    /// The stored hash of the presented token (what logout deletes).
    pub token_hash: String,
}

impl FromRequest for AuthUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let token = presented_token(req);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::Internal(anyhow::anyhow!("AppState missing")))?;
            let token = token.ok_or_else(|| {
                ApiError::unauthorized(
                    "session_required",
                    "log in first: send Authorization: Bearer <token> or the session cookie",
                )
            })?;
            let token_hash = token.hash();
            match session_user(&state, &token_hash).await? {
                Some(user_id) => Ok(Self { user_id, token_hash }),
                None => Err(ApiError::unauthorized(
                    "invalid_session",
                    "the session token is unknown, expired or logged out",
                )),
            }
        })
    }
}

/// How long Redis may answer for a session without asking the database.
const SESSION_CACHE_TTL: Duration = Duration::from_secs(600);

/// The Redis key of a session (by token hash, never the token).
pub fn session_cache_key(token_hash: &str) -> String {
    format!("session:{token_hash}")
}

/// The user of a live session: from Redis when it knows, else from the
/// database (then remembered in Redis). Logout deletes both, so a logout on
/// one instance holds on all of them at once. Redis trouble only costs the
/// database lookup.
async fn session_user(state: &AppState, token_hash: &str) -> Result<Option<i64>, ApiError> {
    let cache_key = session_cache_key(token_hash);
    if let Some(redis) = &state.redis {
        if let Ok(Some(user_id)) = redis.cache_get(&cache_key).await {
            if let Ok(user_id) = user_id.parse() {
                return Ok(Some(user_id));
            }
        }
    }
    let mut conn = state.store.conn().await?;
    let Some((user_id, expires_at)) = state.store.session_user(&mut conn, token_hash, Timestamp::now()).await? else {
        return Ok(None);
    };
    if let Some(redis) = &state.redis {
        let remaining =
            Duration::from_millis(u64::try_from(expires_at.millis() - Timestamp::now().millis()).unwrap_or(0));
        if let Err(error) = redis.cache_set(&cache_key, &user_id.to_string(), remaining.min(SESSION_CACHE_TTL)).await {
            tracing::debug!(%error, "session not cached in Redis");
        }
    }
    Ok(Some(user_id))
}

/// The bearer token if there is one, else the session cookie.
fn presented_token(req: &HttpRequest) -> Option<SessionToken> {
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|token| !token.is_empty());
    match bearer {
        Some(token) => Some(SessionToken::from_client(token)),
        None => req.cookie(COOKIE_NAME).filter(|c| !c.value().is_empty()).map(|c| SessionToken::from_client(c.value())),
    }
}
