//! `/api/rankings/{board}`: pages of a board and the window around a player.

use std::sync::Arc;

use actix_web::http::header::ContentType;
use actix_web::web::Bytes;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::parse_id;
use crate::cache::PageKey;
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

#[utoipa::path(get, path = "/api/rankings/{board}", tag = "rankings",
    params(
        ("board" = String, Path, pattern = "^(best|total)$", description = "`best` or `total`"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 10"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "Position to start at, default 0 (not with `cursor`)"),
        ("cursor" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{40}$", description = "A `next_cursor` (opaque, checksummed: any other value is 400 `invalid_cursor`): keyset paging that never shows a player twice"),
    ),
    responses(
        (status = 200, body = crate::views::RankingPage),
        (status = 400, description = "`invalid_limit`, `invalid_offset`, `invalid_cursor`, `invalid_query`", body = crate::routes::openapi::ErrorBody),
        (status = 404, description = "`board_not_found`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn page(
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let board = Board::parse(&path)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 10)?.value();
    let key = PageKey {
        board,
        limit,
        start: match (&query.cursor, &query.offset) {
            (Some(cursor), _) => format!("c{cursor}"),
            (None, offset) => format!("o{}", offset.as_deref().unwrap_or("0")),
        },
    };
    let cursor = match (&query.cursor, &query.offset) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("invalid_query", "give either offset or cursor, not both"))
        }
        (Some(raw), None) => Some(Cursor::parse(raw, board)?),
        (None, _) => None,
    };
    let offset = parse_offset(query.offset.as_deref())?;
    if let Some(body) = state.pages.get(&key, state.ranks.version()) {
        return Ok(json_response(body));
    }
    let build = || async {
        let page = match cursor {
            Some(cursor) => state.ranks.page_after(cursor, limit).await?,
            None => state.ranks.page_at_offset(board, offset, limit).await?,
        };
        let version = page.version;
        render(&state, page).await.map(|body| (version, body))
    };
    if state.redis.is_some() {
        // Shared boards are never cached (see cache::pages): every request
        // reads its own snapshot, so a joined build could only be older.
        let (_, body) = build().await?;
        return Ok(json_response(body));
    }
    // Concurrent misses of one page share a single build. A shared result
    // that predates the latest post (the build began before it) or a failed
    // build is redone for this request, which then reports its own error.
    let shared = state.page_builds.run(key.clone(), || async { build().await.ok() }).await;
    let (version, body) = match shared {
        Some((version, body)) if version == state.ranks.version() => (version, body),
        _ => build().await?,
    };
    state.pages.put(key, version, body.clone());
    Ok(json_response(body))
}

fn json_response(body: Bytes) -> HttpResponse {
    HttpResponse::Ok().content_type(ContentType::json()).body(body)
}

/// A page as JSON, with its players' display names (cached, else one query).
async fn render(state: &AppState, page: Page) -> Result<Bytes, ApiError> {
    let (mut names, missing) = state.names.lookup(&page.user_ids());
    if !missing.is_empty() {
        let mut conn = state.store.conn().await?;
        let loaded = state.store.display_names(&mut conn, &missing).await?;
        let loaded: Vec<(i64, Arc<str>)> = loaded.into_iter().map(|(id, name)| (id, Arc::from(name))).collect();
        state.names.insert_many(loaded.iter().cloned());
        names.extend(loaded);
    }
    let json = serde_json::to_vec(&RankingPage::new(page, &names)).map_err(anyhow::Error::from)?;
    Ok(Bytes::from(json))
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
    responses(
        (status = 200, body = crate::views::RankingPage),
        (status = 400, description = "`invalid_radius`", body = crate::routes::openapi::ErrorBody),
        (status = 404, description = "`board_not_found`, `user_not_found`, `user_not_on_board`", body = crate::routes::openapi::ErrorBody),
    ))]
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
    if let Some(page) = state.ranks.around(board, user_id, radius).await? {
        return Ok(json_response(render(&state, page).await?));
    }
    let mut conn = state.store.conn().await?;
    match state.store.user(&mut conn, user_id).await? {
        Some(_) => Err(ApiError::not_found("user_not_on_board", "the player has not posted a score yet")),
        None => Err(user_not_found()),
    }
}
