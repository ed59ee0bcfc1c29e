//! Rewards (v4): a player's own (`/api/me/rewards`), a player's for the
//! game's servers (`/api/users/{id}/rewards`), and a period's grants for
//! operators (`/api/admin/boards/{board}/rewards`, the league's alike).

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::extractors::{AuthUser, GameServer};
use super::{parse_id, paths};
use crate::domain::{PageLimit, PeriodSelector};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::moderation::Actor;
use crate::usecases::rewards;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardsQuery {
    status: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsQuery {
    period: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

/// `after` as a list takes it: a `next_after` (absent: from the start).
fn parse_after(raw: Option<&str>) -> Result<i64, ApiError> {
    match raw {
        None => Ok(0),
        Some(raw) => raw.parse::<i64>().ok().filter(|after| *after >= 0).ok_or_else(|| {
            ApiError::with_message(ErrorCode::InvalidQuery, "after must be a `next_after` (a non-negative integer)")
        }),
    }
}

/// A player's list as both routes answer it (never kept by a cache).
async fn player_list(state: &AppState, user_id: i64, query: &RewardsQuery) -> Result<HttpResponse, ApiError> {
    let claimed = rewards::claim_state(query.status.as_deref())?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let after = parse_after(query.after.as_deref())?;
    let list = rewards::player_list(state, user_id, claimed, after, limit.value()).await?;
    Ok(HttpResponse::Ok().insert_header(("Cache-Control", "no-store")).json(list))
}

#[utoipa::path(get, path = paths::ME_REWARDS, operation_id = "listMyRewards", summary = "The player's rewards, oldest grant first", tag = "rewards",
    security(("bearer" = []), ("session_cookie" = [])),
    params(
        ("status" = Option<String>, Query, description = "`unclaimed` (default), `claimed` or `all`"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Rewards per page (default 20)"),
        ("after" = Option<i64>, Query, minimum = 0, description = "A `next_after` from the previous page"),
    ),
    responses((status = 200, body = crate::views::RewardList)))]
pub async fn mine(
    state: web::Data<AppState>,
    auth: AuthUser,
    query: web::Query<RewardsQuery>,
) -> Result<HttpResponse, ApiError> {
    player_list(&state, auth.user_id, &query).await
}

#[utoipa::path(post, path = paths::ME_REWARD_CLAIM, operation_id = "claimMyReward", summary = "Claim one of the player's rewards", tag = "rewards",
    security(("bearer" = []), ("session_cookie" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The reward's id")),
    responses((status = 200, description = "Claimed (claiming again answers the same `claimed_at`)", body = crate::views::RewardView)))]
pub async fn claim_mine(
    state: web::Data<AppState>,
    auth: AuthUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::RewardNotFound)?;
    Ok(HttpResponse::Ok().json(rewards::claim(&state, auth.user_id, id).await?))
}

#[utoipa::path(get, path = paths::USER_REWARDS, operation_id = "listPlayerRewards", summary = "A player's rewards, for game servers", tag = "rewards",
    security(("server_key" = []), ("admin_token" = [])),
    params(
        ("id" = i64, Path, minimum = 1, description = "The player's id"),
        ("status" = Option<String>, Query, description = "`unclaimed` (default), `claimed` or `all`"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Rewards per page (default 20)"),
        ("after" = Option<i64>, Query, minimum = 0, description = "A `next_after` from the previous page"),
    ),
    responses((status = 200, description = "As `GET /api/me/rewards` for that player (an unknown player has none)", body = crate::views::RewardList)))]
pub async fn players(
    state: web::Data<AppState>,
    _server: GameServer,
    path: web::Path<String>,
    query: web::Query<RewardsQuery>,
) -> Result<HttpResponse, ApiError> {
    let user_id = parse_id(&path, ErrorCode::UserNotFound)?;
    player_list(&state, user_id, &query).await
}

#[utoipa::path(post, path = paths::USER_REWARD_CLAIM, operation_id = "claimPlayerReward", summary = "Claim a player's reward, for game servers", tag = "rewards",
    security(("server_key" = []), ("admin_token" = [])),
    params(
        ("id" = i64, Path, minimum = 1, description = "The player's id"),
        ("reward" = i64, Path, minimum = 1, description = "The reward's id"),
    ),
    responses((status = 200, description = "Claimed (claiming again answers the same `claimed_at`)", body = crate::views::RewardView)))]
pub async fn claim_players(
    state: web::Data<AppState>,
    _server: GameServer,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let user_id = parse_id(&path.0, ErrorCode::RewardNotFound)?;
    let id = parse_id(&path.1, ErrorCode::RewardNotFound)?;
    Ok(HttpResponse::Ok().json(rewards::claim(&state, user_id, id).await?))
}

/// A period's grants as both admin routes answer them.
async fn grants(state: &AppState, id: &str, league: bool, query: &GrantsQuery) -> Result<HttpResponse, ApiError> {
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let after = parse_after(query.after.as_deref())?;
    Ok(HttpResponse::Ok().json(rewards::period_list(state, id, league, period, after, limit.value()).await?))
}

#[utoipa::path(get, path = paths::ADMIN_BOARD_REWARDS, operation_id = "listBoardGrants", summary = "The rewards a board's period granted", tag = "rewards",
    security(("admin_token" = [])),
    params(
        ("board" = String, Path, description = "A custom board's id"),
        ("period" = Option<String>, Query, description = "`current` (default: nothing granted yet) or a period's index"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Grants per page (default 20)"),
        ("after" = Option<i64>, Query, minimum = 0, description = "A `next_after` from the previous page"),
    ),
    responses((status = 200, description = "The period's grants, bands in order, each in board order", body = crate::views::RewardList)))]
pub async fn board_grants(
    state: web::Data<AppState>,
    _viewer: Actor,
    path: web::Path<String>,
    query: web::Query<GrantsQuery>,
) -> Result<HttpResponse, ApiError> {
    grants(&state, &path, false, &query).await
}

#[utoipa::path(get, path = paths::ADMIN_LEAGUE_REWARDS, operation_id = "listLeagueGrants", summary = "The rewards a league's period granted", tag = "rewards",
    security(("admin_token" = [])),
    params(
        ("id" = String, Path, description = "The league's id"),
        ("period" = Option<String>, Query, description = "`current` (default: nothing granted yet) or a period's index"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Grants per page (default 20)"),
        ("after" = Option<i64>, Query, minimum = 0, description = "A `next_after` from the previous page"),
    ),
    responses((status = 200, description = "The period's grants, with each player's tier and cohort", body = crate::views::RewardList)))]
pub async fn league_grants(
    state: web::Data<AppState>,
    _viewer: Actor,
    path: web::Path<String>,
    query: web::Query<GrantsQuery>,
) -> Result<HttpResponse, ApiError> {
    grants(&state, &path, true, &query).await
}
