//! `/api/sessions`: log in and log out.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;

use super::extractors::AuthUser;
use super::paths;
use super::{client_address, JsonObject};
use crate::auth::{expired_session_cookie, session_cookie};
use crate::domain::{LoginName, Password};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::accounts::{self, LoginAttempt, SessionStarted};
use crate::usecases::sessions;
use crate::views::{Me, SessionCreated};

#[utoipa::path(post, path = paths::SESSIONS, operation_id = "login", summary = "Log in: a session token", tag = "accounts",
    request_body = crate::routes::schemas::LoginRequest,
    responses(
        (status = 200, description = "Logged in; also sets the `session` cookie", body = crate::views::SessionCreated),
    ))]
pub async fn login(
    state: web::Data<AppState>,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    // A missing or non-string field is a malformed request; a string that
    // breaks the rules simply names no account.
    let require_string = |field: &str, code: ErrorCode| match body.get(field) {
        Some(Value::String(_)) => Ok(()),
        _ => Err(ApiError::with_message(code, format!("{field} must be a string"))),
    };
    require_string("login_name", ErrorCode::InvalidLoginName)?;
    require_string("password", ErrorCode::InvalidPassword)?;
    let attempt = match (LoginName::parse(body.get("login_name")), Password::parse(body.get("password"))) {
        (Ok(login_name), Ok(password)) => LoginAttempt::Credentials(login_name, password),
        _ => LoginAttempt::NoSuchAccount,
    };
    let address = client_address(&request, state.settings.trust_forwarded_for);
    let started = accounts::login(&state, &address, attempt).await?;
    Ok(session_started(&state, started, StatusCode::OK))
}

/// A new session's answer: `{user: Me, token}` and the cookie.
pub(super) fn session_started(state: &AppState, started: SessionStarted, status: StatusCode) -> HttpResponse {
    HttpResponse::build(status)
        // A token and private data: never kept by a cache.
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .cookie(session_cookie(&started.token, state.settings.session_ttl_secs, state.settings.cookie_secure))
        .json(SessionCreated { user: Me::new(&started.user, started.ranks), token: started.token.as_str().to_owned() })
}

#[utoipa::path(delete, path = paths::SESSIONS, operation_id = "logout", summary = "Log out: end this session", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses((status = 204, description = "The token is dead at once; the cookie is cleared")))]
pub async fn logout(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    sessions::logout(&state, &auth.token_hash).await?;
    Ok(HttpResponse::NoContent().cookie(expired_session_cookie()).finish())
}
