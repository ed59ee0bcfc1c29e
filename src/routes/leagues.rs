//! `/api/leagues` and `/api/admin/leagues`: leagues, their cohorts and
//! members, and posts to them.

use actix_web::{web, HttpRequest, HttpResponse};

use super::boards::posted;
use super::paths;
use super::schemas::{CohortPath, LeagueMemberPath, LeaguePath};
use super::{parse_id, JsonObject};
use crate::domain::IdempotencyKey;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::leagues;
use crate::usecases::moderation::Actor;
use crate::usecases::scores::Author;

#[utoipa::path(post, path = paths::ADMIN_LEAGUES, operation_id = "createLeague", summary = "Create a league", tag = "leagues",
    security(("admin_token" = [])),
    request_body = crate::routes::schemas::LeagueRequest,
    responses((status = 201, body = crate::views::LeagueView)))]
pub async fn create(state: web::Data<AppState>, actor: Actor, body: JsonObject) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(leagues::create(&state, &actor, &body).await?))
}

#[utoipa::path(get, path = paths::LEAGUES, operation_id = "listLeagues", summary = "List the leagues", tag = "leagues",
    responses((status = 200, description = "By id", body = crate::views::LeagueList)))]
pub async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(leagues::list(&state).await?))
}

#[utoipa::path(get, path = paths::LEAGUE, operation_id = "getLeague", summary = "One league, with its tiers' cohorts and players this period", tag = "leagues",
    params(LeaguePath),
    responses((status = 200, body = crate::views::LeagueView)))]
pub async fn get(state: web::Data<AppState>, path: web::Path<LeaguePath>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(leagues::get(&state, &path.id).await?))
}

#[utoipa::path(patch, path = paths::ADMIN_LEAGUE, operation_id = "updateLeague", summary = "Rename a league", tag = "leagues",
    security(("admin_token" = [])),
    params(LeaguePath),
    request_body = crate::routes::schemas::UpdateLeagueRequest,
    responses((status = 200, description = "The league as it is now", body = crate::views::LeagueView)))]
pub async fn update(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<LeaguePath>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(leagues::update(&state, &actor, &path.id, &body).await?))
}

#[utoipa::path(delete, path = paths::ADMIN_LEAGUE, operation_id = "deleteLeague", summary = "Delete a league with everything in it", tag = "leagues",
    security(("admin_token" = [])),
    params(LeaguePath),
    responses((status = 204, description = "Deleted")))]
pub async fn delete(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<LeaguePath>,
) -> Result<HttpResponse, ApiError> {
    leagues::delete(&state, &actor, &path.id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = paths::LEAGUE_SCORES, operation_id = "postLeagueScore", summary = "Post a score to a league (the first post of a period places the player)", tag = "leagues",
    security(("bearer" = []), ("session_cookie" = []), ("server_key" = [])),
    params(LeaguePath, ("Idempotency-Key" = Option<String>, Header, pattern = "^[!-~]{1,64}$", description = "As for board posts")),
    request_body = crate::routes::schemas::BoardScoreRequest,
    responses(
        (status = 201, description = "Posted; `entry` ranked in the cohort; `tier` and `cohort` the player's place this period", body = crate::views::LeaguePostResult),
        (status = 200, description = "A repeated Idempotency-Key: the first answer again", body = crate::views::LeaguePostResult),
    ))]
pub async fn post_score(
    state: web::Data<AppState>,
    author: Author,
    request: HttpRequest,
    path: web::Path<LeaguePath>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let key =
        IdempotencyKey::from_header_values(request.headers().get_all(IdempotencyKey::HEADER).map(|v| v.as_bytes()))?;
    // The post and the placement it makes run on a task of their own: a
    // client gone after the post's commit must not leave a score in the
    // league without a cohort (the placement follows the commit).
    let (league, body) = (path.into_inner().id, body.into_inner());
    let answer = actix_web::rt::spawn(async move { leagues::post(&state, &league, author, &body, key).await });
    Ok(posted(answer.await.map_err(ApiError::internal)??))
}

#[utoipa::path(get, path = paths::LEAGUE_COHORT, operation_id = "getCohort", summary = "A cohort: all its players ranked, with their zones", tag = "leagues",
    params(CohortPath),
    responses((status = 200, body = crate::views::CohortPage)))]
pub async fn cohort(state: web::Data<AppState>, path: web::Path<CohortPath>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(leagues::cohort(&state, &path.id, &path.cohort).await?))
}

#[utoipa::path(get, path = paths::LEAGUE_MEMBER, operation_id = "getLeagueMember", summary = "A player in a league: tier, cohort, entry and history", tag = "leagues",
    params(LeagueMemberPath),
    responses((status = 200, body = crate::views::LeagueMember)))]
pub async fn member(state: web::Data<AppState>, path: web::Path<LeagueMemberPath>) -> Result<HttpResponse, ApiError> {
    let user_id = parse_id(&path.user_id, ErrorCode::UserNotFound)?;
    Ok(HttpResponse::Ok().json(leagues::member(&state, &path.id, user_id).await?))
}
