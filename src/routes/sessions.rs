//! `/api/sessions`: log in and log out.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;

use super::users::load_profile;
use super::{client_address, JsonObject};
use crate::auth::{expired_session_cookie, session_cache_key, session_cookie, AuthUser, SessionToken, Verification};
use crate::domain::{LoginName, Password, Timestamp};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::state::AppState;
use crate::views::{Me, SessionCreated};

fn invalid_credentials() -> ApiError {
    ApiError::unauthorized("invalid_credentials", "wrong login name or password")
}

#[utoipa::path(post, path = "/api/sessions", tag = "accounts",
    request_body = crate::routes::openapi::LoginRequest,
    responses(
        (status = 200, description = "Logged in; also sets the `session` cookie", body = crate::views::SessionCreated),
        (status = 400, description = "`invalid_json`, `invalid_body`", body = crate::routes::openapi::ErrorBody),
        (status = 401, description = "`invalid_credentials` (unknown name and wrong password alike)", body = crate::routes::openapi::ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = crate::routes::openapi::ErrorBody),
        (status = 422, description = "`invalid_login_name`, `invalid_password` (not strings)", body = crate::routes::openapi::ErrorBody),
        (status = 429, description = "`too_many_requests` (attempts per account or per address), with `Retry-After`", body = crate::routes::openapi::ErrorBody),
        (status = 503, description = "`hashing_busy`, `database_unavailable`, with `Retry-After`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn login(
    state: web::Data<AppState>,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let address = client_address(&request, state.settings.trust_forwarded_for);
    state.limits.check(Limit::LoginPerAddress, &address).await?;
    // A missing or non-string field is a malformed request; a string that
    // breaks the rules simply names no account.
    let require_string = |field: &str, code: &'static str| match body.get(field) {
        Some(Value::String(_)) => Ok(()),
        _ => Err(ApiError::validation(code, format!("{field} must be a string"))),
    };
    require_string("login_name", "invalid_login_name")?;
    require_string("password", "invalid_password")?;
    let (Ok(login_name), Ok(password)) =
        (LoginName::parse(body.get("login_name")), Password::parse(body.get("password")))
    else {
        return Err(invalid_credentials());
    };

    state.limits.check(Limit::LoginPerAccount, &login_name.key()).await?;
    let mut conn = state.store.conn().await?;
    let credentials = state.store.credentials(&mut conn, &login_name.key()).await?;
    drop(conn); // not held across the (slow) hash
    let (user_id, stored_hash) = match credentials {
        Some((id, hash)) => (Some(id), Some(hash)),
        None => (None, None),
    };
    // Unknown names are verified against a dummy hash: same time as a wrong password.
    let verification = state.passwords.verify(&password, stored_hash).await?;
    let (Some(user_id), Verification::Valid { rehash }) = (user_id, verification) else {
        return Err(invalid_credentials());
    };
    if let Some(new_hash) = rehash {
        let mut conn = state.store.conn().await?;
        state.store.set_password_hash(&mut conn, user_id, &new_hash).await?;
    }
    start_session(&state, user_id, StatusCode::OK).await
}

/// Creates a session and answers with `{user: Me, token}` and the cookie.
pub(super) async fn start_session(
    state: &AppState,
    user_id: i64,
    status: StatusCode,
) -> Result<HttpResponse, ApiError> {
    let token = SessionToken::generate();
    let now = Timestamp::now();
    let ttl = state.settings.session_ttl_secs;
    let mut conn = state.store.conn().await?;
    state.store.insert_session(&mut conn, &token.hash(), user_id, now, now.plus_millis(ttl * 1_000)).await?;
    drop(conn);
    let (user, ranks) = load_profile(state, user_id)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("user {user_id} vanished while logging in")))?;
    Ok(HttpResponse::build(status)
        .cookie(session_cookie(&token, ttl))
        .json(SessionCreated { user: Me::new(&user, ranks), token: token.as_str().to_owned() }))
}

#[utoipa::path(delete, path = "/api/sessions", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses(
        (status = 204, description = "The token is dead at once; the cookie is cleared"),
        (status = 401, description = "`session_required`, `invalid_session`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn logout(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = state.store.conn().await?;
    state.store.delete_session(&mut conn, &auth.token_hash).await?;
    if let Some(redis) = &state.redis {
        if let Err(error) = redis.cache_delete(&session_cache_key(&auth.token_hash)).await {
            // The database row is gone; a cached entry would outlive it
            // by at most SESSION_CACHE_TTL, so say so loudly.
            tracing::error!(%error, "logout: could not delete the cached session in Redis");
        }
    }
    Ok(HttpResponse::NoContent().cookie(expired_session_cookie()).finish())
}
