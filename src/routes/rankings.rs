//! `/api/rankings/{board}`: pages of a board and the window around a player.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::parse_id;
use crate::domain::{parse_offset, Board, Cursor, PageLimit, Radius};
use crate::error::ApiError;
use crate::rank::Page;
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
    let page = match cursor {
        Some(cursor) => state.ranks.page_after(cursor, limit).await,
        None => state.ranks.page_at_offset(board, offset, limit).await,
    };
    named(&state, page).await
}

/// Answers with a page, its players' display names read in one query.
async fn named(state: &AppState, page: Page) -> Result<HttpResponse, ApiError> {
    let mut conn = state.store.conn().await?;
    let names = state.store.display_names(&mut conn, &page.user_ids()).await?;
    Ok(HttpResponse::Ok().json(RankingPage::new(page, &names)))
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
    if let Some(page) = state.ranks.around(board, user_id, radius).await {
        return named(&state, page).await;
    }
    let mut conn = state.store.conn().await?;
    match state.store.user(&mut conn, user_id).await? {
        Some(_) => Err(ApiError::not_found("user_not_on_board", "the player has not posted a score yet")),
        None => Err(user_not_found()),
    }
}
