//! `/api/me`: the logged-in player.

use actix_web::{web, HttpResponse};

use super::users::load_profile;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::Me;

#[utoipa::path(get, path = "/api/me", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses(
        (status = 200, body = crate::views::Me),
        (status = 401, description = "`session_required`, `invalid_session`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn me(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    let (user, ranks) = load_profile(&state, auth.user_id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("invalid_session", "the session's user no longer exists"))?;
    Ok(HttpResponse::Ok().json(Me::new(&user, ranks)))
}
