//! `/api/me`: the logged-in player, who can change their display name and
//! password or erase their account.

use actix_web::{web, HttpResponse};

use super::extractors::AuthUser;
use super::paths;
use super::JsonObject;
use crate::auth::expired_session_cookie;
use crate::domain::{DisplayName, Password};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::accounts::{self, OwnChange};
use crate::usecases::{exports, players};
use crate::views::Me;

#[utoipa::path(get, path = paths::ME, operation_id = "getMe", summary = "The logged-in player's own profile", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses((status = 200, body = crate::views::Me)))]
pub async fn me(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    // A session whose user is gone is no session.
    let (user, ranks) = players::profile(&state, auth.user_id).await?.ok_or(ErrorCode::InvalidSession)?;
    Ok(private(Me::new(&user, ranks)))
}

#[utoipa::path(patch, path = paths::ME, operation_id = "updateMe", summary = "Change the own display name or password", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    request_body = crate::routes::schemas::ChangeMeRequest,
    responses((status = 200, description = "Changed. A new password ends every other session of the player; \
        this one stays", body = crate::views::Me)))]
pub async fn change(state: web::Data<AppState>, auth: AuthUser, body: JsonObject) -> Result<HttpResponse, ApiError> {
    let present = |field: &str| body.get(field).filter(|value| !value.is_null());
    let change = OwnChange {
        display_name: present("display_name").map(DisplayName::parse).transpose()?,
        password: present("password").map(|raw| Password::parse(Some(raw))).transpose()?,
        // Any string: a wrong one is simply wrong (401), like at login.
        current_password: match present("current_password") {
            None => None,
            Some(raw) => Some(Password::parse(Some(raw)).map_err(|_| ErrorCode::InvalidCredentials)?),
        },
    };
    let (user, ranks) = accounts::change_own_account(&state, auth.user_id, &auth.token_hash, change).await?;
    Ok(private(Me::new(&user, ranks)))
}

#[utoipa::path(delete, path = paths::ME, operation_id = "eraseMe", summary = "Erase the own account and everything of it", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    request_body = crate::routes::schemas::EraseMeRequest,
    responses((status = 204, description = "Erased: the player, every post and entry, sessions and idempotency \
        keys. Every board closes up; the login name is free again")))]
pub async fn erase(state: web::Data<AppState>, auth: AuthUser, body: JsonObject) -> Result<HttpResponse, ApiError> {
    let password = match body.get("password") {
        Some(serde_json::Value::String(_)) => {
            Password::parse(body.get("password")).map_err(|_| ErrorCode::InvalidCredentials)?
        }
        _ => return Err(ApiError::with_message(ErrorCode::InvalidPassword, "password must be a string")),
    };
    accounts::erase_own_account(&state, auth.user_id, &password).await?;
    Ok(HttpResponse::NoContent().cookie(expired_session_cookie()).finish())
}

/// The player's own data: never kept by a cache.
fn private(me: Me) -> HttpResponse {
    HttpResponse::Ok().insert_header((actix_web::http::header::CACHE_CONTROL, "no-store")).json(me)
}

#[utoipa::path(get, path = paths::ME_EXPORT, operation_id = "exportMe", summary = "Everything hiscore holds about the player", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses((status = 200, description = "One JSON document, streamed: `account` (no password material), `posts` \
        (every post on every board, with its status and `via`), `entries`, `leagues` (`memberships`, `history`), \
        `entrants`, `rewards` and `audit` (the admin actions about the player). No token, key or stored answer is in \
        it. One export at a time per player (then 429)", content_type = "application/json", body = Object,
        headers(("Content-Disposition" = String, description = "`attachment; filename=\"hiscore-<id>.json\"`")))))]
pub async fn export(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    let user_id = auth.user_id;
    let body = exports::player(state, user_id)?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("Content-Disposition", format!("attachment; filename=\"hiscore-{user_id}.json\"")))
        .streaming(body))
}
