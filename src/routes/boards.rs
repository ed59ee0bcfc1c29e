//! `/api/boards` and `/api/admin/boards`: the catalog of boards, their
//! periods, and posts to custom boards.

use actix_web::http::header::ContentType;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::extractors::AuthUser;
use super::paths;
use super::schemas::{BoardPath, CustomBoardPath};
use super::JsonObject;
use crate::domain::{parse_before, IdempotencyKey, PageLimit, PartitionValue, PeriodSelector};
use crate::error::ApiError;
use crate::scoring::Posted;
use crate::state::AppState;
use crate::usecases::moderation::Actor;
use crate::usecases::scores::Author;
use crate::usecases::{boards, exports, tournaments};

#[utoipa::path(get, path = paths::BOARDS, operation_id = "listBoards", summary = "List the boards (built-in and custom)", tag = "boards",
    responses((status = 200, description = "The built-in boards first, then the custom ones by id", body = crate::views::BoardList)))]
pub async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(boards::list(&state).await?))
}

#[utoipa::path(get, path = paths::BOARD, operation_id = "getBoard", summary = "Get one board and its current period", tag = "boards",
    params(crate::routes::schemas::BoardPath),
    responses((status = 200, body = crate::views::BoardView)))]
pub async fn get(state: web::Data<AppState>, path: web::Path<BoardPath>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(boards::get(&state, &path.board).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodsQuery {
    limit: Option<String>,
    before: Option<String>,
}

#[utoipa::path(get, path = paths::BOARD_PERIODS, operation_id = "listBoardPeriods", summary = "List a board's kept periods, newest first", tag = "boards",
    params(
        crate::routes::schemas::BoardPath,
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 20"),
        ("before" = Option<i64>, Query, minimum = 1, description = "Only periods with a smaller index (from `next_before`)"),
    ),
    responses((status = 200, description = "The kept periods, newest first, the current one included", body = crate::views::PeriodList)))]
pub async fn periods(
    state: web::Data<AppState>,
    path: web::Path<BoardPath>,
    query: web::Query<PeriodsQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?.value();
    let before = parse_before(query.before.as_deref())?;
    Ok(HttpResponse::Ok().json(boards::periods(&state, &path.board, before, limit).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionsQuery {
    period: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

#[utoipa::path(get, path = paths::BOARD_PARTITIONS, operation_id = "listBoardPartitions", summary = "List a board's partitions with entries in a period", tag = "boards",
    params(
        crate::routes::schemas::BoardPath,
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 20"),
        ("after" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "Only values after this one in byte order (from `next_after`)"),
    ),
    responses((status = 200, description = "The values with at least one entry in the period, in byte order; 404 `partition_not_found` on a board without `partition_by`", body = crate::views::PartitionList)))]
pub async fn partitions(
    state: web::Data<AppState>,
    path: web::Path<BoardPath>,
    query: web::Query<PartitionsQuery>,
) -> Result<HttpResponse, ApiError> {
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?.value();
    let after = PartitionValue::parse_query(query.after.as_deref())?;
    Ok(HttpResponse::Ok().json(boards::partitions(&state, &path.board, period, after, limit).await?))
}

#[utoipa::path(post, path = paths::BOARD_SCORES, operation_id = "postBoardScore", summary = "Post a score to a custom board", tag = "boards",
    security(("bearer" = []), ("session_cookie" = []), ("server_key" = [])),
    description = "With a player's session, for that player; with a server key (`Authorization: Bearer hsk_…`), for the body's `user_id` (404 `user_not_found` for an unknown or banned player). A `server` board refuses sessions (403 `server_only`); a post sooner than the board's `min_interval_ms` after the player's previous one is 429 with `Retry-After`.",
    params(
        crate::routes::schemas::CustomBoardPath,
        ("Idempotency-Key" = Option<String>, Header, pattern = "^[!-~]{1,64}$", description = "As on `/api/scores`: a repeat of the same request returns the first response (200); another request with the same key is 422"),
    ),
    request_body = crate::routes::schemas::BoardScoreRequest,
    responses(
        (status = 201, description = "Accepted; `entry` is the player's entry after this post", body = crate::views::BoardScoreResult),
        (status = 202, description = "Held for review by the board's `hold_beyond` or `hold_jump`: counts for nothing until accepted; `entry` as it was (null if none), `improved` false", body = crate::views::BoardScoreResult),
        (status = 200, description = "A replay of an `Idempotency-Key`: the first body again", body = crate::views::BoardScoreResult),
    ))]
pub async fn post_score(
    state: web::Data<AppState>,
    author: Author,
    request: HttpRequest,
    path: web::Path<CustomBoardPath>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let key =
        IdempotencyKey::from_header_values(request.headers().get_all(IdempotencyKey::HEADER).map(|v| v.as_bytes()))?;
    Ok(posted(boards::post(&state, &path.board, author, &body, key).await?))
}

#[utoipa::path(post, path = paths::BOARD_ENTRANTS, operation_id = "joinBoard", summary = "Join the current period of a tournament board", tag = "boards",
    security(("bearer" = []), ("session_cookie" = [])),
    params(crate::routes::schemas::CustomBoardPath),
    responses(
        (status = 201, description = "Joined; `entrants` counts this player", body = crate::views::Joined),
        (status = 200, description = "Joined already: nothing changed", body = crate::views::Joined),
    ))]
pub async fn join(
    state: web::Data<AppState>,
    user: AuthUser,
    path: web::Path<CustomBoardPath>,
) -> Result<HttpResponse, ApiError> {
    let (joined_now, answer) = tournaments::join(&state, &path.board, user.owner()).await?;
    Ok(if joined_now { HttpResponse::Created() } else { HttpResponse::Ok() }.json(answer))
}

#[utoipa::path(get, path = paths::BOARD_ME, operation_id = "getMyBoardStanding", summary = "The player on a board now: joined, attempts, entry", tag = "boards",
    security(("bearer" = []), ("session_cookie" = [])),
    params(
        crate::routes::schemas::CustomBoardPath,
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): `entry` is the player's entry there"),
    ),
    responses((status = 200, description = "In the period in force", body = crate::views::BoardStanding)))]
pub async fn standing(
    state: web::Data<AppState>,
    user: AuthUser,
    path: web::Path<CustomBoardPath>,
    query: web::Query<StandingQuery>,
) -> Result<HttpResponse, ApiError> {
    let partition = query.partition.as_deref();
    Ok(HttpResponse::Ok().json(tournaments::standing(&state, &path.board, partition, user.owner()).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandingQuery {
    partition: Option<String>,
}

/// A post's answer: 201 with the new body, 202 when it was held for
/// review, or 200 with the first answer again.
pub(super) fn posted(posted: Posted) -> HttpResponse {
    match posted {
        Posted::Created(body) => HttpResponse::Created().content_type(ContentType::json()).body(body),
        Posted::Held(body) => HttpResponse::Accepted().content_type(ContentType::json()).body(body),
        Posted::Replayed(body) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .insert_header(("Idempotent-Replayed", "true"))
            .body(body),
    }
}

#[utoipa::path(post, path = paths::ADMIN_BOARDS, operation_id = "createBoard", summary = "Create a custom board", tag = "boards",
    security(("admin_token" = [])),
    request_body = crate::routes::schemas::BoardRequest,
    responses((status = 201, body = crate::views::BoardView)))]
pub async fn create(state: web::Data<AppState>, actor: Actor, body: JsonObject) -> Result<HttpResponse, ApiError> {
    let board = boards::create(&state, &actor, &body).await?;
    Ok(HttpResponse::Created().json(board))
}

#[utoipa::path(patch, path = paths::ADMIN_BOARD, operation_id = "updateBoard", summary = "Rename a custom board, change a board's rules or a tournament's fields", tag = "boards",
    security(("admin_token" = [])),
    params(crate::routes::schemas::BoardPath),
    request_body = crate::routes::schemas::UpdateBoardRequest,
    responses((status = 200, body = crate::views::BoardView)))]
pub async fn update(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<BoardPath>,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let board = boards::update(&state, &actor, &path.board, &body).await?;
    Ok(HttpResponse::Ok().json(board))
}

#[utoipa::path(delete, path = paths::ADMIN_BOARD, operation_id = "deleteBoard", summary = "Delete a custom board and everything on it", tag = "boards",
    security(("admin_token" = [])),
    params(crate::routes::schemas::CustomBoardPath),
    responses((status = 204, description = "Deleted with its entries and posts")))]
pub async fn delete(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<CustomBoardPath>,
) -> Result<HttpResponse, ApiError> {
    boards::delete(&state, &actor, &path.board).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    period: Option<String>,
    partition: Option<String>,
    format: Option<String>,
}

#[utoipa::path(get, path = paths::ADMIN_BOARD_EXPORT, operation_id = "exportBoard", summary = "A board's period as CSV or NDJSON, streamed", tag = "boards",
    security(("admin_token" = [])),
    params(
        BoardPath,
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("format" = Option<String>, Query, pattern = "^(csv|ndjson)$", description = "`csv` (default, RFC 4180 with a header row and CRLF line ends) or `ndjson`"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its entries, ranked among them"),
    ),
    responses((status = 200, description = "The period in board order, one line per entry (`rank`, `user_id`, \
        `display_name`, `score`, `subscores`, `achieved_at`, `metadata`), streamed a page at a time; a cell a \
        spreadsheet would run as a formula starts with `'`. At most 2 exports at once per instance (then 429)",
        content((String = "text/csv"), (String = "application/x-ndjson")),
        headers(("Content-Disposition" = String, description = "`attachment; filename=\"<board>-period-<index>.<format>\"`")))))]
pub async fn export(
    state: web::Data<AppState>,
    _viewer: Actor,
    path: web::Path<BoardPath>,
    query: web::Query<ExportQuery>,
) -> Result<HttpResponse, ApiError> {
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let format = exports::Format::parse(query.format.as_deref())?;
    let export = exports::board(state, &path.board, query.partition.as_deref(), period, format).await?;
    Ok(HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{}\"", export.filename)))
        .streaming(export.body))
}
