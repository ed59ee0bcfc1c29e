//! `/api/sessions`: log in and log out.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use super::users::load_profile;
use crate::auth::{expired_session_cookie, session_cookie, AuthUser, SessionToken, Verification};
use crate::domain::{LoginName, Password, Timestamp};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::{Me, SessionCreated};

#[derive(Deserialize)]
pub struct LoginBody {
    login_name: Option<Value>,
    password: Option<Value>,
}

fn invalid_credentials() -> ApiError {
    ApiError::unauthorized("invalid_credentials", "wrong login name or password")
}

pub async fn login(state: web::Data<AppState>, body: web::Json<LoginBody>) -> Result<HttpResponse, ApiError> {
    // A missing or non-string field is a malformed request; a string that
    // breaks the rules simply names no account.
    let require_string = |raw: &Option<Value>, code: &'static str, field: &str| match raw {
        Some(Value::String(_)) => Ok(()),
        _ => Err(ApiError::validation(code, format!("{field} must be a string"))),
    };
    require_string(&body.login_name, "invalid_login_name", "login_name")?;
    require_string(&body.password, "invalid_password", "password")?;
    let (Ok(login_name), Ok(password)) = (LoginName::parse(body.login_name.as_ref()), Password::parse(body.password.as_ref())) else {
        return Err(invalid_credentials());
    };

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
pub(super) async fn start_session(state: &AppState, user_id: i64, status: StatusCode) -> Result<HttpResponse, ApiError> {
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

pub async fn logout(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = state.store.conn().await?;
    state.store.delete_session(&mut conn, &auth.token_hash).await?;
    Ok(HttpResponse::NoContent().cookie(expired_session_cookie()).finish())
}
