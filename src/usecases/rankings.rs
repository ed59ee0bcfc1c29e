//! Ranking pages and "around me", rendered as the contract's JSON.
//!
//! A single instance keeps rendered pages, tagged with the rank engine's
//! version (any recorded post makes them stale), and concurrent misses of
//! one page share a single build. With Redis nothing is cached: other
//! instances' posts do not bump the local version (see `cache::pages`).

use std::sync::Arc;

use actix_web::web::Bytes;

use crate::cache::{PageKey, PageStart};
use crate::domain::{Board, Cursor};
use crate::error::{ApiError, ErrorCode};
use crate::rank::Page;
use crate::state::AppState;
use crate::views::RankingPage;

/// A page of `board`: `limit` entries from an offset or after a cursor.
pub async fn page(state: &AppState, board: Board, limit: i64, start: PageStart) -> Result<Bytes, ApiError> {
    let key = PageKey { board, limit, start };
    if let Some(body) = state.caches.pages.get(&key, state.ranks.version()) {
        return Ok(body);
    }
    let build = || async {
        let page = match start {
            PageStart::Offset(offset) => state.ranks.page_at_offset(board, offset, limit).await?,
            PageStart::After(after) => state.ranks.page_after(Cursor { board, after }, limit).await?,
        };
        let version = page.version;
        render(state, page).await.map(|body| (version, body))
    };
    if state.redis.is_some() {
        // Shared boards are never cached: every request reads its own
        // snapshot, so a joined build could only be older.
        return Ok(build().await?.1);
    }
    // A shared result that predates the latest post (the build began before
    // it) or a failed build is redone for this request, which then reports
    // its own error.
    let shared = state.caches.page_builds.run(key.clone(), || async { build().await.ok() }).await;
    let (version, body) = match shared {
        Some((version, body)) if version == state.ranks.version() => (version, body),
        _ => build().await?,
    };
    state.caches.pages.put(key, version, body.clone());
    Ok(body)
}

/// Up to `radius` entries either side of a player: 404 `user_not_on_board`
/// for a player without scores, `user_not_found` for no player at all.
pub async fn around(state: &AppState, board: Board, user_id: i64, radius: i64) -> Result<Bytes, ApiError> {
    if let Some(page) = state.ranks.around(board, user_id, radius).await? {
        return render(state, page).await;
    }
    let mut conn = state.store.conn().await?;
    match state.store.user(&mut conn, user_id).await? {
        Some(_) => Err(ErrorCode::UserNotOnBoard.into()),
        None => Err(ErrorCode::UserNotFound.into()),
    }
}

/// A page as JSON, with its players' display names (cached, else one query).
async fn render(state: &AppState, page: Page) -> Result<Bytes, ApiError> {
    let (mut names, missing) = state.caches.names.lookup(&page.user_ids());
    if !missing.is_empty() {
        let loaded = state.store.display_names(&missing).await?;
        let loaded: Vec<(i64, Arc<str>)> = loaded.into_iter().map(|(id, name)| (id, Arc::from(name))).collect();
        state.caches.names.insert_many(loaded.iter().cloned());
        names.extend(loaded);
    }
    let json = serde_json::to_vec(&RankingPage::new(page, &names)).map_err(ApiError::internal)?;
    Ok(Bytes::from(json))
}
