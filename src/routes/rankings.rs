//! `/api/rankings/{board}`: pages of a board and the window around a player.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::parse_id;
use crate::domain::{parse_offset, Board, Cursor, PageLimit, Radius};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::RankingPage;

#[derive(Deserialize)]
pub struct PageQuery {
    limit: Option<String>,
    offset: Option<String>,
    cursor: Option<String>,
}

pub async fn page(
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = Board::parse(&path)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 10)?.value();
    let cursor = match (&query.cursor, &query.offset) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("invalid_query", "give either offset or cursor, not both"))
        }
        (Some(raw), None) => Some(Cursor::parse(raw, board)?),
        (None, _) => None,
    };
    let offset = parse_offset(query.offset.as_deref())?;
    // One snapshot: the rows and the counts their ranks come from agree.
    let mut tx = state.store.begin_read().await?;
    let page = match cursor {
        Some(cursor) => state.ranks.page_after(&mut tx, cursor, limit).await?,
        None => state.ranks.page_at_offset(&mut tx, board, offset, limit).await?,
    };
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(RankingPage::from(page)))
}

#[derive(Deserialize)]
pub struct AroundQuery {
    radius: Option<String>,
}

pub async fn around(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<AroundQuery>,
) -> Result<HttpResponse, ApiError> {
    let (board, user_id) = path.into_inner();
    let board = Board::parse(&board)?;
    let user_not_found = || ApiError::not_found("user_not_found", "no user with that id");
    let user_id = parse_id(&user_id, user_not_found)?;
    let radius = Radius::parse(query.radius.as_deref())?.value();
    let mut tx = state.store.begin_read().await?;
    let page = state.ranks.around(&mut tx, board, user_id, radius).await?;
    let user_exists = match page {
        Some(_) => true,
        None => state.store.user(&mut tx, user_id).await?.is_some(),
    };
    tx.commit().await?;
    match page {
        Some(page) => Ok(HttpResponse::Ok().json(RankingPage::from(page))),
        None if user_exists => Err(ApiError::not_found("user_not_on_board", "the player has not posted a score yet")),
        None => Err(user_not_found()),
    }
}
