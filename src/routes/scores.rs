//! `/api/scores`: posting a score.

use actix_web::{web, HttpRequest, HttpResponse};

use super::paths;
use super::JsonObject;
use crate::domain::IdempotencyKey;
use crate::error::ApiError;
use crate::state::AppState;
use crate::usecases::scores::{self, Author};

#[utoipa::path(post, path = paths::SCORES, operation_id = "postScore", summary = "Post a score to the built-in boards", tag = "scores",
    security(("bearer" = []), ("session_cookie" = []), ("server_key" = [])),
    description = "With a player's session, for that player; with a server key (`Authorization: Bearer hsk_…`), for the body's `user_id`. When either built-in board is server-only (`writers`), a session gets 403 `server_only`; their `min_interval_ms` (the longer one) holds per player.",
    params(("Idempotency-Key" = Option<String>, Header, pattern = "^[!-~]{1,64}$", description = "1..64 visible ASCII characters; a repeat of the same request returns the first response (200) and changes nothing; the same key with another body is 422 `idempotency_key_reused`; kept 48 h")),
    request_body = crate::routes::schemas::ScoreRequest,
    responses(
        (status = 201, description = "Accepted; `user` already reflects this post", body = crate::views::ScoreResult),
        (status = 202, description = "Held for review by a built-in board's `hold_beyond` or `hold_jump`: counts for nothing until accepted; `user` as it was, `new_best` false", body = crate::views::ScoreResult),
        (status = 200, description = "A replay of an `Idempotency-Key`: the first body again", body = crate::views::ScoreResult),
    ))]
pub async fn post_score(
    state: web::Data<AppState>,
    author: Author,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let key =
        IdempotencyKey::from_header_values(request.headers().get_all(IdempotencyKey::HEADER).map(|v| v.as_bytes()))?;
    Ok(super::boards::posted(scores::post(&state, author, &body, key).await?))
}
