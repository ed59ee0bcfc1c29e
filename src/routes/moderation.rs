//! `/api/admin/scores`, `/api/admin/users` and `/api/admin/audit`:
//! removing posts, bans, renames, and the audit log. Exist only when
//! `ADMIN_TOKEN` is configured.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::paths;
use super::{parse_id, JsonObject};
use crate::domain::{parse_before, DisplayName, PageLimit};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::moderation::Actor;
use crate::usecases::{boards, moderation, players};
use crate::views::{AuditEntry, AuditLog, PublicUser};

#[utoipa::path(delete, path = paths::ADMIN_SCORE, operation_id = "deleteScore", summary = "Remove a post from the built-in boards (recounted)", tag = "moderation",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "A post's id in the `/api/scores` log")),
    responses((status = 204, description = "Removed; the player's best, total and play count are recounted from \
        what remains, on every board and instance at once")))]
pub async fn delete_score(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::ScoreNotFound)?;
    moderation::delete_score(&state, &actor, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(delete, path = paths::ADMIN_BOARD_SCORE, operation_id = "deleteBoardScore", summary = "Remove a post from a custom board (recounted)", tag = "moderation",
    security(("admin_token" = [])),
    params(
        crate::routes::schemas::CustomBoardPath,
        ("id" = i64, Path, minimum = 1, description = "A post's id on that board"),
    ),
    responses((status = 204, description = "Removed; the entry of its period is recounted from the period's \
        remaining posts (and leaves the board if none remain)")))]
pub async fn delete_board_score(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (board, id) = path.into_inner();
    let board = boards::resolve_custom(&state, &board).await?;
    let id = parse_id(&id, ErrorCode::ScoreNotFound)?;
    moderation::delete_board_score(&state, &actor, &board, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = paths::ADMIN_USER_BAN, operation_id = "banPlayer", summary = "Ban a player", tag = "moderation",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    request_body = crate::routes::schemas::BanRequest,
    responses((status = 200, description = "Banned: off every board and period, sessions ended; nothing deleted. \
        The player as others saw them before the ban", body = crate::views::PublicUser)))]
pub async fn ban(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    let reason = moderation::parse_reason(body.get("reason"))?;
    let row = moderation::set_ban(&state, &actor, id, Some(reason)).await?;
    Ok(HttpResponse::Ok().json(PublicUser::new(&row, Default::default())))
}

#[utoipa::path(delete, path = paths::ADMIN_USER_BAN, operation_id = "unbanPlayer", summary = "Lift a ban", tag = "moderation",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    responses((status = 200, description = "Unbanned: back on every board where their scores put them",
        body = crate::views::PublicUser)))]
pub async fn unban(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    moderation::set_ban(&state, &actor, id, None).await?;
    let (user, ranks) = players::profile(&state, id).await?.ok_or(ErrorCode::UserNotFound)?;
    Ok(HttpResponse::Ok().json(PublicUser::new(&user, ranks)))
}

#[utoipa::path(patch, path = paths::ADMIN_USER, operation_id = "renamePlayer", summary = "Rename a player", tag = "moderation",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    request_body = crate::routes::schemas::RenameUserRequest,
    responses((status = 200, description = "Renamed, on every page of every instance at the next read",
        body = crate::views::PublicUser)))]
pub async fn rename(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    let name = DisplayName::parse(body.get("display_name").unwrap_or(&serde_json::Value::Null))?;
    let row = moderation::rename(&state, &actor, id, name).await?;
    let ranks = match players::profile(&state, id).await? {
        Some((_, ranks)) => ranks,
        None => Default::default(), // banned: no ranks to show
    };
    Ok(HttpResponse::Ok().json(PublicUser::new(&row, ranks)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSearchQuery {
    q: Option<String>,
    limit: Option<String>,
}

/// The longest search text (a login or display name is at most 32 characters).
const MAX_SEARCH_CHARS: usize = 64;

#[utoipa::path(get, path = paths::ADMIN_USERS, operation_id = "searchPlayers", summary = "Find players by id or name prefix", tag = "moderation",
    security(("admin_token" = [])),
    params(
        ("q" = String, Query, min_length = 1, max_length = 64, description = "An id, or the start of a login \
            (any case) or display name"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Players at most (default 20)"),
    ),
    responses((status = 200, description = "The players found, by id, banned ones included (with `banned_at`)",
        body = crate::views::FoundPlayers)))]
pub async fn search_users(
    state: web::Data<AppState>,
    _viewer: Actor,
    query: web::Query<UserSearchQuery>,
) -> Result<HttpResponse, ApiError> {
    let q = query.q.as_deref().map(str::trim).unwrap_or_default();
    if q.is_empty() || q.chars().count() > MAX_SEARCH_CHARS {
        return Err(ApiError::with_message(
            ErrorCode::InvalidQuery,
            "q must be 1 to 64 characters: an id or a name's start",
        ));
    }
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    Ok(HttpResponse::Ok().json(players::search(&state, q, limit.value()).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    limit: Option<String>,
    before: Option<String>,
}

#[utoipa::path(get, path = paths::ADMIN_AUDIT, operation_id = "listAuditLog", summary = "The audit log of admin actions, newest first", tag = "moderation",
    security(("admin_token" = [])),
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Records per page (default 20)"),
        ("before" = Option<i64>, Query, minimum = 1, description = "A `next_before` from the previous page"),
    ),
    responses((status = 200, description = "Every admin action, newest first", body = crate::views::AuditLog)))]
pub async fn audit(
    state: web::Data<AppState>,
    _admin: Actor,
    query: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let before = parse_before(query.before.as_deref())?;
    let (rows, next_before) = moderation::audit_log(&state, before, limit.value()).await?;
    let entries = rows
        .into_iter()
        .map(|row| AuditEntry {
            id: row.id,
            at: row.at,
            actor: row.actor,
            action: row.action,
            target: row.target,
            detail: serde_json::from_str(&row.detail.0).unwrap_or(serde_json::Value::Null),
        })
        .collect();
    Ok(HttpResponse::Ok().json(AuditLog { entries, next_before }))
}
