//! Ranking pages, "around me" and friends boards, rendered as the
//! contract's JSON, for every board and period.
//!
//! A single instance keeps rendered pages, tagged with the rank engine's
//! version (any recorded post makes them stale), and concurrent misses of
//! one page share a single build. With Redis a kept page is tagged with its
//! board's stamp there and the names version, and served only after Redis
//! said both still hold, in the round trip that would otherwise read the
//! page (see `cache::pages`).

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::web::Bytes;
use sha2::{Digest, Sha256};

use super::boards::{resolve_period, BoardRef, ResolvedPeriod};
use crate::cache::{PageKey, PageVersion};
use crate::domain::{Cursor, PeriodSelector};
use crate::error::{ApiError, ErrorCode};
use crate::rank::{Page, PageRead, PageStart};
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
    fn new(body: Bytes, version: u64, board_stamp: Option<&str>) -> Self {
        let mut digest = Sha256::new();
        digest.update(version.to_le_bytes());
        digest.update(board_stamp.unwrap_or("").as_bytes());
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
    if state.redis.is_some() {
        return shared_page(state, board, resolved.view, key).await;
    }
    let current = state.ranks.version();
    if let Some(body) = state.caches.pages.get(&key, &PageVersion::Local(current)) {
        state.caches.count_page(true);
        return Ok(Rendered::new(body, current, None));
    }
    state.caches.count_page(false);
    let build = || async {
        let page = state.ranks.page(resolved.board, start, limit).await?;
        let version = page.version;
        render(state, board, resolved.view, &page).await.map(|body| (version, body))
    };
    // A shared result that predates the latest post (the build began before
    // it) or a failed build is redone for this request, which then reports
    // its own error.
    let shared = state.caches.page_builds.run(key.clone(), || async { build().await.ok() }).await;
    let (version, body) = match shared {
        Some((version, body)) if version == state.ranks.version() => (version, body),
        _ => build().await?,
    };
    state.caches.pages.put(key, PageVersion::Local(version), body.clone());
    Ok(Rendered::new(body, version, None))
}

/// A page with Redis: the kept copy while Redis says its board and the
/// names are as they were when it was built (one round trip, which reads
/// the page instead when they are not), else the page read and kept. Each
/// request checks Redis, so a post or a rename on any instance shows at
/// the next read, and "load more" never contradicts the page before it.
async fn shared_page(state: &AppState, board: &BoardRef, view: PeriodView, key: PageKey) -> Result<Rendered, ApiError> {
    let kept = state.caches.pages.entry(&key);
    let known = match &kept {
        Some((PageVersion::Shared { board, .. }, _)) => Arc::clone(board),
        _ => Arc::from(""),
    };
    let (read, names_version) =
        tokio::join!(state.ranks.page_unless(key.board, key.start, key.limit, &known), names_version(state));
    let page = match read? {
        PageRead::Read(page) => page,
        PageRead::Unchanged => match kept {
            Some((PageVersion::Shared { board: stamp, names }, body)) if NamesVersion::Shared(names) == names_version => {
                state.caches.count_page(true);
                return Ok(Rendered::new(body, 0, Some(&stamp)));
            }
            // Only the names moved: the entries are read again to render them.
            _ => state.ranks.page(key.board, key.start, key.limit).await?,
        },
    };
    state.caches.count_page(false);
    let body = render_at(state, board, view, &page, names_version).await?;
    if let (Some(stamp), NamesVersion::Shared(names)) = (&page.board_stamp, names_version) {
        state.caches.pages.put(key, PageVersion::Shared { board: Arc::clone(stamp), names }, body.clone());
    }
    Ok(Rendered::new(body, page.version, page.board_stamp.as_deref()))
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
        let body = render(state, board, resolved.view, &page).await?;
        return Ok(Rendered::new(body, page.version, page.board_stamp.as_deref()));
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

/// Which names the in-process cache may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamesVersion {
    /// Any (a single instance: every rename happens here).
    Local,
    /// Those read under this shared names version (a rename on any
    /// instance moves it).
    Shared(i64),
    /// None: Redis cannot say, so names come from the database.
    Unknown,
}

async fn names_version(state: &AppState) -> NamesVersion {
    match &state.redis {
        None => NamesVersion::Local,
        Some(redis) => match redis.counter(&redis.keys().names_version()).await {
            Ok(version) => NamesVersion::Shared(version),
            Err(_) => NamesVersion::Unknown,
        },
    }
}

/// Display names of players: cached, else one query.
async fn names(state: &AppState, ids: &[i64]) -> Result<HashMap<i64, Arc<str>>, ApiError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    names_at(state, ids, names_version(state).await).await
}

async fn names_at(state: &AppState, ids: &[i64], version: NamesVersion) -> Result<HashMap<i64, Arc<str>>, ApiError> {
    match version {
        NamesVersion::Local => {}
        NamesVersion::Shared(version) => state.caches.names.follow(version),
        NamesVersion::Unknown => {
            let loaded = state.store.display_names(ids).await?;
            return Ok(loaded.into_iter().map(|(id, name)| (id, Arc::from(name))).collect());
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
async fn render(state: &AppState, board: &BoardRef, period: PeriodView, page: &Page) -> Result<Bytes, ApiError> {
    render_at(state, board, period, page, names_version(state).await).await
}

async fn render_at(
    state: &AppState,
    board: &BoardRef,
    period: PeriodView,
    page: &Page,
    names_version: NamesVersion,
) -> Result<Bytes, ApiError> {
    let names = if page.entries.is_empty() { HashMap::new() } else { names_at(state, &page.user_ids(), names_version).await? };
    let json = serde_json::to_vec(&RankingPage::new(board.id(), period, page, &names)).map_err(ApiError::internal)?;
    Ok(Bytes::from(json))
}
