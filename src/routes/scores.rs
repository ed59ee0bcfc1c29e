//! `/api/scores`: posting a score.

use actix_web::http::header::ContentType;
use actix_web::{web, HttpRequest, HttpResponse};

use super::JsonObject;
use crate::auth::AuthUser;
use crate::domain::{IdempotencyKey, Score};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::scoring::Posted;
use crate::state::AppState;

#[utoipa::path(post, path = "/api/scores", tag = "scores",
    security(("bearer" = []), ("session_cookie" = [])),
    params(("Idempotency-Key" = Option<String>, Header, pattern = "^[!-~]{1,64}$", description = "1..64 visible ASCII characters; a repeat returns the first response (200) and changes nothing; kept 48 h")),
    request_body = crate::routes::openapi::ScoreRequest,
    responses(
        (status = 201, description = "Accepted; `user` already reflects this post", body = crate::views::ScoreResult),
        (status = 200, description = "A replay of an `Idempotency-Key`: the first body again", body = crate::views::ScoreResult),
        (status = 400, description = "`invalid_json`, `invalid_body`, `invalid_idempotency_key`", body = crate::routes::openapi::ErrorBody),
        (status = 401, description = "`session_required`, `invalid_session`", body = crate::routes::openapi::ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = crate::routes::openapi::ErrorBody),
        (status = 422, description = "`invalid_score` (also above the configured MAX_SCORE)", body = crate::routes::openapi::ErrorBody),
        (status = 429, description = "`too_many_requests` (per-player post rate), with `Retry-After`", body = crate::routes::openapi::ErrorBody),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn post_score(
    state: web::Data<AppState>,
    auth: AuthUser,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let score = Score::parse(body.get("score"), state.settings.max_score)?;
    let player = auth.user_id.to_string();
    state.limits.check(Limit::PostsPerPlayer, &player).await?;
    state.limits.check(Limit::PostInterval, &player).await?;
    let key = IdempotencyKey::from_headers(request.headers())?;
    Ok(match state.writer.post(auth.user_id, score, key).await? {
        Posted::Created(body) => HttpResponse::Created().content_type(ContentType::json()).body(body),
        Posted::Replayed(body) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .insert_header(("Idempotent-Replayed", "true"))
            .body(body),
    })
}
