//! Ranking pages, "around me" and friends boards, rendered as the
//! contract's JSON, for every board and period.
//!
//! A single instance keeps rendered pages, tagged with the rank engine's
//! version (any recorded post makes them stale), and concurrent misses of
//! one page share a single build. With Redis nothing is cached: other
//! instances' posts do not bump the local version (see `cache::pages`).

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::web::Bytes;
use sha2::{Digest, Sha256};

use super::boards::{resolve_period, BoardRef, ResolvedPeriod};
use crate::cache::{PageKey, PageStart};
use crate::domain::{Cursor, PeriodSelector};
use crate::error::{ApiError, ErrorCode};
use crate::rank::Page;
use crate::state::AppState;
use crate::views::{PeriodView, RankingEntry, RankingPage};

/// A rendered page and its entity tag: a digest of the body and of the
/// board's version when it was read, so it changes whenever the page or
/// its board changes (a change anywhere on the board, even below the
/// page), and a client polling with `If-None-Match` gets 304 until then.
pub struct Rendered {
    pub body: Bytes,
    pub etag: String,
}

impl Rendered {
    fn new(body: Bytes, version: u64, board_version: u64) -> Self {
        let mut digest = Sha256::new();
        digest.update(version.to_le_bytes());
        digest.update(board_version.to_le_bytes());
        digest.update(&body);
        let hex: String = digest.finalize()[..10].iter().map(|byte| format!("{byte:02x}")).collect();
        Self { body, etag: format!("\"{hex}\"") }
    }
}

/// Where a page request starts.
pub enum PageRequest<'a> {
    Offset(i64),
    /// A `next_cursor`, as sent.
    Cursor(&'a str),
}

/// A page of a board: `limit` entries from an offset or after a cursor. A
/// cursor goes on in its own period (a walk begun before a reset finishes
/// in the period it began in); naming another period is 400.
pub async fn page(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    limit: i64,
    start: PageRequest<'_>,
) -> Result<Rendered, ApiError> {
    let (resolved, start) = match start {
        PageRequest::Offset(offset) => (resolve_period(state, board, selector).await?, PageStart::Offset(offset)),
        PageRequest::Cursor(raw) => {
            let cursor = Cursor::parse(raw, board.board(), board.order())?;
            if let PeriodSelector::Index(index) = selector {
                if index != cursor.board.period {
                    return Err(ApiError::with_message(ErrorCode::InvalidCursor, "the cursor is of another period"));
                }
            }
            let resolved = resolve_period(state, board, PeriodSelector::Index(cursor.board.period)).await?;
            (resolved, PageStart::After(cursor.after))
        }
    };
    let key = PageKey { board: resolved.board, limit, start };
    let current = state.ranks.version();
    if let Some(body) = state.caches.pages.get(&key, current) {
        // Cached pages are the local index's, which has no board version of its own.
        return Ok(Rendered::new(body, current, 0));
    }
    let build = || async {
        let page = match start {
            PageStart::Offset(offset) => state.ranks.page_at_offset(resolved.board, offset, limit).await?,
            PageStart::After(after) => state.ranks.page_after(Cursor { board: resolved.board, after }, limit).await?,
        };
        let (version, board_version) = (page.version, page.board_version);
        render(state, board, resolved.view, page).await.map(|body| (version, board_version, body))
    };
    if state.redis.is_some() {
        // Shared boards are never cached: every request reads its own
        // snapshot, so a joined build could only be older.
        let (version, board_version, body) = build().await?;
        return Ok(Rendered::new(body, version, board_version));
    }
    // A shared result that predates the latest post (the build began before
    // it) or a failed build is redone for this request, which then reports
    // its own error.
    let shared =
        state.caches.page_builds.run(key.clone(), || async { build().await.ok().map(|(v, _, b)| (v, b)) }).await;
    let (version, body) = match shared {
        Some((version, body)) if version == state.ranks.version() => (version, body),
        _ => build().await.map(|(version, _, body)| (version, body))?,
    };
    state.caches.pages.put(key, version, body.clone());
    Ok(Rendered::new(body, version, 0))
}

/// Up to `radius` entries either side of a player: 404 `user_not_on_board`
/// for a player without an entry, `user_not_found` for no player at all.
pub async fn around(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    user_id: i64,
    radius: i64,
) -> Result<Rendered, ApiError> {
    let resolved = resolve_period(state, board, selector).await?;
    if let Some(page) = state.ranks.around(resolved.board, user_id, radius).await? {
        let (version, board_version) = (page.version, page.board_version);
        return Ok(Rendered::new(render(state, board, resolved.view, page).await?, version, board_version));
    }
    let mut conn = state.store.conn().await?;
    match state.store.user(&mut conn, user_id).await? {
        Some(user) if user.banned_at.is_none() => Err(ErrorCode::UserNotOnBoard.into()),
        // A banned player is as unknown to others as an erased one.
        _ => Err(ErrorCode::UserNotFound.into()),
    }
}

/// Those of `ids` who are on the board, in board order, each with its
/// board-wide rank (a friends board); no `next_*`.
pub async fn friends(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    ids: &[i64],
) -> Result<Bytes, ApiError> {
    let ResolvedPeriod { board: period, view } = resolve_period(state, board, selector).await?;
    let ranked = state.ranks.ranked(period, ids).await?;
    let names = names(state, &ranked.entries.iter().map(|(_, entry)| entry.key.id).collect::<Vec<_>>()).await?;
    let entries = ranked
        .entries
        .into_iter()
        .map(|(rank, entry)| {
            let name = names.get(&entry.key.id).map_or("", |name| name);
            RankingEntry::new(period.board, rank, entry.key, name, entry.metadata)
        })
        .collect();
    let page = RankingPage {
        board: board.id().to_owned(),
        period: view,
        entries,
        total_players: ranked.total as i64,
        next_offset: None,
        next_cursor: None,
    };
    Ok(Bytes::from(serde_json::to_vec(&page).map_err(ApiError::internal)?))
}

/// Display names of players: cached, else one query. With Redis, the cache
/// first follows the shared names version (a rename on any instance moves
/// it); if Redis cannot say, the names come from the database.
async fn names(state: &AppState, ids: &[i64]) -> Result<HashMap<i64, Arc<str>>, ApiError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    if let Some(redis) = &state.redis {
        match redis.counter(&redis.keys().names_version()).await {
            Ok(version) => state.caches.names.follow(version),
            Err(_) => {
                let loaded = state.store.display_names(ids).await?;
                return Ok(loaded.into_iter().map(|(id, name)| (id, Arc::from(name))).collect());
            }
        }
    }
    let (mut names, missing) = state.caches.names.lookup(ids);
    if !missing.is_empty() {
        let loaded = state.store.display_names(&missing).await?;
        let loaded: Vec<(i64, Arc<str>)> = loaded.into_iter().map(|(id, name)| (id, Arc::from(name))).collect();
        state.caches.names.insert_many(loaded.iter().cloned());
        names.extend(loaded);
    }
    Ok(names)
}

/// A page as JSON, with its players' display names.
async fn render(state: &AppState, board: &BoardRef, period: PeriodView, page: Page) -> Result<Bytes, ApiError> {
    let names = names(state, &page.user_ids()).await?;
    let json = serde_json::to_vec(&RankingPage::new(board.id(), period, page, &names)).map_err(ApiError::internal)?;
    Ok(Bytes::from(json))
}
