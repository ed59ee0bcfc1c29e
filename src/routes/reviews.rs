//! `/api/admin/held`: the posts held for review, and the decisions on
//! them. Exist only when `ADMIN_TOKEN` is configured.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::paths;
use super::{parse_id, JsonObject};
use crate::domain::PageLimit;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::moderation::Actor;
use crate::usecases::reviews;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldQuery {
    board: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

#[utoipa::path(get, path = paths::ADMIN_HELD, operation_id = "listHeldPosts", summary = "The posts held for review, oldest first", tag = "integrity",
    security(("admin_token" = [])),
    params(
        ("board" = Option<String>, Query, description = "Only this board's held posts (`best` or `total`: those of `/api/scores`)"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Held posts per page (default 20)"),
        ("after" = Option<i64>, Query, minimum = 0, description = "A `next_after` from the previous page"),
    ),
    responses((status = 200, description = "Undecided held posts, oldest first", body = crate::views::HeldList)))]
pub async fn list(
    state: web::Data<AppState>,
    _admin: Actor,
    query: web::Query<HeldQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let after = match query.after.as_deref() {
        None => 0,
        Some(raw) => raw.parse::<i64>().ok().filter(|after| *after >= 0).ok_or(ErrorCode::InvalidQuery)?,
    };
    Ok(HttpResponse::Ok().json(reviews::list(&state, query.board.as_deref(), after, limit.value()).await?))
}

#[utoipa::path(post, path = paths::ADMIN_HELD_POST, operation_id = "decideHeldPost", summary = "Accept or reject a held post", tag = "integrity",
    security(("admin_token" = [])),
    params(("score_id" = i64, Path, minimum = 1, description = "The held post's id (as `score.id` in the list)")),
    request_body = crate::routes::schemas::DecisionRequest,
    responses((status = 200, description = "Decided. Accepted: counted in its own period as if accepted when it was \\
        made (best, `achieved_at`, totals, ranks, the period's player count); rejected: counts for nothing, ever", body = crate::views::Decided)))]
pub async fn decide(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::ScoreNotFound)?;
    Ok(HttpResponse::Ok().json(reviews::decide(&state, &actor, id, &body).await?))
}
