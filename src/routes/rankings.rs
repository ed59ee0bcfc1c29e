//! `/api/rankings/{board}`: pages of a board, the window around a player,
//! and a friends board, for every board and period.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::paths;
use super::schemas::BoardPath;
use super::{address_of, json_response, parse_id};
use crate::cache::Rendered;
use crate::domain::{parse_offset, PageLimit, Percents, PeriodSelector, Radius, UserIds};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::boards::{resolve, resolve_partition};
use crate::usecases::rankings::{self, Asker, PageRequest};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    limit: Option<String>,
    offset: Option<String>,
    cursor: Option<String>,
    period: Option<String>,
    partition: Option<String>,
}

#[utoipa::path(get, path = paths::RANKING, operation_id = "getRankingPage", summary = "A page of a board, by offset or cursor", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 10"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "Position to start at, default 0 (not with `cursor`)"),
        ("cursor" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{46,99}$", description = "A `next_cursor` (opaque, signed by the server: any other value is 400 `invalid_cursor`): keyset paging that never shows a player twice (on `latest` boards it leaves out players whose entry changed since the walk began); it goes on in the period it began in"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
        ("If-None-Match" = Option<String>, Header, description = "The `ETag` of a copy the client holds: 304 while it is current"),
    ),
    responses(
        (status = 200, body = crate::views::RankingPage,
            headers(("ETag" = String, description = "Changes whenever the page or its board changes"))),
        (status = 304, description = "The copy named by `If-None-Match` is current; no body",
            headers(("ETag" = String, description = "The current tag"))),
    ))]
pub async fn page(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<BoardPath>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = resolve_partition(&state, resolve(&state, &path.board).await?, query.partition.as_deref()).await?;
    let limit = PageLimit::parse(query.limit.as_deref(), 10)?.value();
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let start = match (&query.cursor, &query.offset) {
        (Some(_), Some(_)) => {
            return Err(ApiError::with_message(ErrorCode::InvalidQuery, "give either offset or cursor, not both"))
        }
        (Some(raw), None) => PageRequest::Cursor(raw),
        (None, offset) => PageRequest::Offset(parse_offset(offset.as_deref())?),
    };
    let address = address_of(&request);
    Ok(conditional(&request, rankings::page(&state, &board, period, limit, start, Asker::Request(address)).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AroundQuery {
    pub(super) radius: Option<String>,
    pub(super) period: Option<String>,
    pub(super) partition: Option<String>,
}

#[utoipa::path(get, path = paths::RANKING_AROUND, operation_id = "getRankingAround", summary = "The entries around a player", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("user_id" = i64, Path, minimum = 1, description = "The player in the middle"),
        ("radius" = Option<i64>, Query, minimum = 0, maximum = 50, description = "0..50 entries on each side, default 5"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
        ("If-None-Match" = Option<String>, Header, description = "The `ETag` of a copy the client holds: 304 while it is current"),
    ),
    responses(
        (status = 200, body = crate::views::RankingPage,
            headers(("ETag" = String, description = "Changes whenever the window or its board changes"))),
        (status = 304, description = "The copy named by `If-None-Match` is current; no body",
            headers(("ETag" = String, description = "The current tag"))),
    ))]
pub async fn around(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<(String, String)>,
    query: web::Query<AroundQuery>,
) -> Result<HttpResponse, ApiError> {
    let (board, user_id) = path.into_inner();
    let board = resolve_partition(&state, resolve(&state, &board).await?, query.partition.as_deref()).await?;
    let user_id = parse_id(&user_id, ErrorCode::UserNotFound)?;
    let radius = Radius::parse(query.radius.as_deref())?.value();
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let address = address_of(&request);
    Ok(conditional(&request, rankings::around(&state, &board, period, user_id, radius, address).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FriendsQuery {
    ids: Option<String>,
    period: Option<String>,
    partition: Option<String>,
}

#[utoipa::path(get, path = paths::RANKING_USERS, operation_id = "getFriendsRanking", summary = "Some players' entries with their board-wide ranks (friends board)", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("ids" = String, Query, pattern = r"^[1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){0,99}$", description = "1..100 comma-separated user ids (a friends list)"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
    ),
    responses((status = 200, description = "Those of the ids on the board, in board order, with board-wide ranks; `next_*` null", body = crate::views::RankingPage)))]
pub async fn friends(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<BoardPath>,
    query: web::Query<FriendsQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = resolve_partition(&state, resolve(&state, &path.board).await?, query.partition.as_deref()).await?;
    let ids = UserIds::parse(query.ids.as_deref())?;
    let period = PeriodSelector::parse(query.period.as_deref())?;
    let address = address_of(&request);
    Ok(json_response(rankings::friends(&state, &board, period, ids.as_slice(), address).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutoffsQuery {
    percents: Option<String>,
    period: Option<String>,
    partition: Option<String>,
}

#[utoipa::path(get, path = paths::RANKING_CUTOFFS, operation_id = "getCutoffs", summary = "Where the top x% of a board ends", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("percents" = String, Query, pattern = r"^(100(\.0{1,2})?|[1-9][0-9]?(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))(,(100(\.0{1,2})?|[1-9][0-9]?(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))){0,9}$", description = "1..10 comma-separated percents above 0 and at most 100, each with at most two decimals"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
    ),
    responses((status = 200, description = "For each percent, in the order asked, the entry where it ends", body = crate::views::CutoffList)))]
pub async fn cutoffs(
    state: web::Data<AppState>,
    path: web::Path<BoardPath>,
    query: web::Query<CutoffsQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = resolve_partition(&state, resolve(&state, &path.board).await?, query.partition.as_deref()).await?;
    let percents = Percents::parse(query.percents.as_deref())?;
    let period = PeriodSelector::parse(query.period.as_deref())?;
    Ok(json_response(rankings::cutoffs(&state, &board, period, &percents).await?))
}

/// 304 when the client already holds this page (`If-None-Match` names its
/// tag, or `*`), else the page with its `ETag`. `no-cache`: clients and
/// caches may keep it, but ask again (cheaply, with the tag) before use.
pub(super) fn conditional(request: &HttpRequest, page: Rendered) -> HttpResponse {
    let held = request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim())
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag).as_bytes() == page.etag.as_bytes());
    let mut response = if held { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    response
        .insert_header((header::ETAG, page.etag))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")));
    if held {
        response.finish()
    } else {
        response.insert_header((header::CONTENT_TYPE, HeaderValue::from_static("application/json"))).body(page.body)
    }
}
