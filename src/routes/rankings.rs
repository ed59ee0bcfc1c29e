//! `/api/rankings/{board}`: pages of a board and the window around a player.

use actix_web::http::header::ContentType;
use actix_web::web::Bytes;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::parse_id;
use crate::cache::PageStart;
use crate::domain::{parse_offset, Board, Cursor, PageLimit, Radius};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::rankings;

#[derive(Deserialize)]
pub struct PageQuery {
    limit: Option<String>,
    offset: Option<String>,
    cursor: Option<String>,
}

#[utoipa::path(get, path = "/api/rankings/{board}", tag = "rankings",
    params(
        ("board" = String, Path, pattern = "^(best|total)$", description = "`best` or `total`"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 10"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "Position to start at, default 0 (not with `cursor`)"),
        ("cursor" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{40}$", description = "A `next_cursor` (opaque, checksummed: any other value is 400 `invalid_cursor`): keyset paging that never shows a player twice"),
    ),
    responses((status = 200, body = crate::views::RankingPage)))]
pub async fn page(
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = Board::parse(&path)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 10)?.value();
    let start = match (&query.cursor, &query.offset) {
        (Some(_), Some(_)) => {
            return Err(ApiError::with_message(ErrorCode::InvalidQuery, "give either offset or cursor, not both"))
        }
        (Some(raw), None) => PageStart::After(Cursor::parse(raw, board)?.after),
        (None, offset) => PageStart::Offset(parse_offset(offset.as_deref())?),
    };
    Ok(json_response(rankings::page(&state, board, limit, start).await?))
}

#[derive(Deserialize)]
pub struct AroundQuery {
    radius: Option<String>,
}

#[utoipa::path(get, path = "/api/rankings/{board}/around/{user_id}", tag = "rankings",
    params(
        ("board" = String, Path, pattern = "^(best|total)$", description = "`best` or `total`"),
        ("user_id" = i64, Path, minimum = 1, description = "The player in the middle"),
        ("radius" = Option<i64>, Query, minimum = 0, maximum = 50, description = "0..50 entries on each side, default 5"),
    ),
    responses((status = 200, body = crate::views::RankingPage)))]
pub async fn around(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<AroundQuery>,
) -> Result<HttpResponse, ApiError> {
    let (board, user_id) = path.into_inner();
    let board = Board::parse(&board)?;
    let user_id = parse_id(&user_id, ErrorCode::UserNotFound)?;
    let radius = Radius::parse(query.radius.as_deref())?.value();
    Ok(json_response(rankings::around(&state, board, user_id, radius).await?))
}

fn json_response(body: Bytes) -> HttpResponse {
    HttpResponse::Ok().content_type(ContentType::json()).body(body)
}
