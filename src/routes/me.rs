//! `/api/me`: the logged-in player.

use actix_web::{web, HttpResponse};

use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::players;
use crate::views::Me;

#[utoipa::path(get, path = "/api/me", tag = "accounts",
    security(("bearer" = []), ("session_cookie" = [])),
    responses((status = 200, body = crate::views::Me)))]
pub async fn me(state: web::Data<AppState>, auth: AuthUser) -> Result<HttpResponse, ApiError> {
    // A session whose user is gone is no session.
    let (user, ranks) = players::profile(&state, auth.user_id).await?.ok_or(ErrorCode::InvalidSession)?;
    Ok(HttpResponse::Ok().json(Me::new(&user, ranks)))
}
