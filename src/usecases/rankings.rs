//! Ranking pages, "around me" and friends boards, rendered as the
//! contract's JSON, for every board and period.
//!
//! A single instance keeps rendered pages, tagged with the rank engine's
//! version (any recorded post makes them stale). With Redis a kept page is
//! tagged with its board's stamp there, and served only after Redis said
//! it still holds, in the round trip that would otherwise read the page,
//! or under the lease that answer gives (see `cache::pages` and
//! `redis::PageLease`). Either way, concurrent requests for one page that
//! arrived before a read of it began share that read.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix_web::web::Bytes;

use super::boards::{resolve_period, BoardRef, ResolvedPeriod};
use crate::cache::{AddressTerm, CutoffKey, Leased, PageKey, PageOutcome, PageVersion, Rendered, Renewal, WindowKey};
use crate::domain::{BoardKey, BoardPeriod, Cursor, Percents, PeriodSelector, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::rank::{Page, PageRead, PageStart};
use crate::state::AppState;
use crate::views::{subscores_of, Cutoff, CutoffList, PeriodView, RankingEntry, RankingPage};

/// Where a page request starts.
pub enum PageRequest<'a> {
    Offset(i64),
    /// A `next_cursor`, as sent.
    Cursor(&'a str),
}

/// Who asks for a page, which decides what a kept copy must have been
/// checked against with Redis.
pub enum Asker<'a> {
    /// A request, with its path and query if it has one (see
    /// [`address_term`]): a copy under its page lease will do, since every
    /// write waits the leases out before it is answered.
    Request(Option<&'a str>),
    /// The server itself, such as a live page's watcher told that its board
    /// moved: Redis is asked, because a lease taken just before the move
    /// may still hold, and the watcher would publish the old page and wait
    /// for the next move.
    Server,
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
    asker: Asker<'_>,
) -> Result<Rendered, ApiError> {
    let (address, leased) = match asker {
        Asker::Request(address) => (address, true),
        Asker::Server => (None, false),
    };
    // Before the period is resolved: a change after this ends the term.
    let remembered = address
        .filter(|_| matches!(start, PageRequest::Offset(_)))
        .and_then(|address| Some((address, address_term(state, board)?)));
    let (resolved, start) = match start {
        PageRequest::Offset(offset) => (resolve_period(state, board, selector).await?, PageStart::Offset(offset)),
        PageRequest::Cursor(raw) => {
            let cursor = Cursor::parse(raw, board.board(), board.ranking(), &state.cursor_keys)?;
            if let PeriodSelector::Index(index) = selector {
                if index != cursor.board.period {
                    return Err(ApiError::with_message(ErrorCode::InvalidCursor, "the cursor is of another period"));
                }
            }
            let resolved = resolve_period(state, board, PeriodSelector::Index(cursor.board.period)).await?;
            (resolved, PageStart::After { key: cursor.after, walk: cursor.walk })
        }
    };
    let key = PageKey { board: resolved.board, limit, start };
    let view = resolved.view;
    if let Some((address, term)) = remembered {
        state.caches.pages.remember_address(address, &key, term);
    }
    let kept = match &state.redis {
        None => state.caches.pages.get(&key, &PageVersion::Local(state.ranks.version())),
        Some(redis) if leased => {
            state.caches.pages.leased(&key, redis.page_lease()).map(|leased| served_under_lease(state, leased))
        }
        Some(_) => None,
    };
    if let Some(rendered) = kept {
        state.caches.count_page(PageOutcome::Hit);
        return Ok(rendered);
    }
    // Requests that arrived before a read of this page began share it. The
    // arrival is taken here, not when the request came in: later is only
    // stricter (fewer reads began after it), and a page served from the
    // kept copies above takes none (a counter both threads would write).
    let arrived = state.caches.page_reads.arrive();
    let read = || async { read_page(state, board, view, &key).await.ok() };
    match state.caches.page_reads.run(key.clone(), arrived, read).await {
        (Some(rendered), loaded) => {
            if !loaded {
                state.caches.count_page(PageOutcome::Shared);
            }
            Ok(rendered)
        }
        // A failed read is redone for this request, which then reports its own error.
        (None, _) => read_page(state, board, view, &key).await,
    }
}

/// The page of a lease that holds, renewed beside the answer when it is
/// due (see `cache::Leased`).
pub fn served_under_lease(state: &AppState, leased: Leased) -> Rendered {
    if let Some(renewal) = leased.renewal {
        renew_lease(state, renewal);
    }
    leased.page
}

/// Asks Redis whether a leased page's board is still at the page's stamp,
/// in a task of its own: the lease runs on from when this asked. A
/// renewal that finds the board moved, or cannot ask, lets the lease run
/// out, and the first request after it reads the page anew (`read_page`),
/// as one that finds a lease over always does.
fn renew_lease(state: &AppState, Renewal { key, stamp }: Renewal) {
    let ranks = state.ranks.clone();
    let caches = Arc::clone(&state.caches);
    actix_web::rt::spawn(async move {
        let asked = Instant::now();
        if let Ok(PageRead::Unchanged) = ranks.page_unless(key.board, key.start, key.limit, &stamp).await {
            caches.pages.checked(&key, &PageVersion::Shared(stamp), asked);
        }
    });
}

/// For how long the address of a request about `board` names the key it
/// names now, so that `front` can answer the next request for it from the
/// kept copy before routing (`routes::kept_answer`), or `None` when it is
/// not to be remembered. A built-in board's address names the same answer
/// whatever the time and the board catalog. A custom board's (or
/// partition's) names its period in force, or one counted back from it,
/// so it holds while the catalog has had no change since the board was
/// looked up (checked here, after the count of changes is read: a later
/// change ends the term) and until that period ends. A partition no post
/// opened is not remembered: a post on any instance may open it. (A page
/// by cursor is not remembered either: its cursor is checked on every
/// request.)
fn address_term(state: &AppState, board: &BoardRef) -> Option<AddressTerm> {
    match board {
        BoardRef::Builtin(_) => Some(AddressTerm::Always),
        BoardRef::Custom(custom) => {
            let catalog = state.boards.changes();
            let ends_at = custom.period_at(Timestamp::now()).end;
            state.boards.still_holds(custom).then_some(AddressTerm::While { catalog, ends_at })
        }
    }
}

/// Reads a page and keeps it. A single instance reads its rank engine.
/// With Redis, a kept copy is served while Redis says its board is as it
/// was when the copy was built (one round trip, which reads the page
/// instead when it is not), and for a page lease after that answer
/// without asking (`redis::PageLease`: writes wait out the leases before
/// they are answered), so a post on any instance shows at the next read
/// and "load more" never contradicts the page before it; a rename moves
/// the stamps of every board (see `RankEngine::names_changed`).
async fn read_page(state: &AppState, board: &BoardRef, view: PeriodView, key: &PageKey) -> Result<Rendered, ApiError> {
    if state.redis.is_none() {
        state.caches.count_page(PageOutcome::Miss);
        let page = state.ranks.page(key.board, key.start, key.limit).await?;
        let version = PageVersion::Local(page.version);
        let rendered = Rendered::new(render(state, board, view, &page).await?, &version);
        state.caches.pages.put(key.clone(), version, rendered.clone());
        return Ok(rendered);
    }
    let kept = match state.caches.pages.entry(key) {
        Some((PageVersion::Shared(stamp), body)) => Some((stamp, body)),
        _ => None,
    };
    let known = kept.as_ref().map_or("", |(stamp, _)| stamp);
    let asked = Instant::now();
    let read = state.ranks.page_unless(key.board, key.start, key.limit, known).await?;
    let page = match (read, kept) {
        (PageRead::Read(page), _) => page,
        (PageRead::Unchanged, Some((stamp, rendered))) => {
            state.caches.pages.checked(key, &PageVersion::Shared(stamp), asked);
            state.caches.count_page(PageOutcome::Hit);
            return Ok(rendered);
        }
        (PageRead::Unchanged, None) => {
            return Err(ApiError::internal(anyhow::anyhow!("a page nobody kept was answered unchanged")));
        }
    };
    state.caches.count_page(PageOutcome::Miss);
    let version = built_at(&page);
    let rendered = Rendered::new(render(state, board, view, &page).await?, &version);
    if matches!(version, PageVersion::Shared(_)) {
        state.caches.pages.put(key.clone(), version.clone(), rendered.clone());
        state.caches.pages.checked(key, &version, asked);
    }
    Ok(rendered)
}

/// What a page read was read at: its board's stamp where the source names
/// one (Redis), else the local engine's version.
fn built_at(page: &Page) -> PageVersion {
    match &page.board_stamp {
        Some(stamp) => PageVersion::Shared(Arc::clone(stamp)),
        None => PageVersion::Local(page.version),
    }
}

/// Up to `radius` entries either side of a player: 404 `user_not_on_board`
/// for a player without an entry, `user_not_found` for no player at all.
pub async fn around(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    user_id: i64,
    radius: i64,
    address: Option<&str>,
) -> Result<Rendered, ApiError> {
    // Only a single instance keeps windows.
    let term = address.filter(|_| state.redis.is_none()).and_then(|_| address_term(state, board));
    let resolved = resolve_period(state, board, selector).await?;
    // A single instance keeps the window at the rank engine's version.
    let key = WindowKey::Around { board: resolved.board, user_id, radius };
    if state.redis.is_none() {
        if let Some((address, term)) = address.zip(term) {
            state.caches.windows.remember_address(address, &key, term);
        }
        if let Some(kept) = state.caches.windows.get(&key, &PageVersion::Local(state.ranks.version())) {
            return Ok(kept);
        }
    }
    if let Some(page) = state.ranks.around(resolved.board, user_id, radius).await? {
        let body = render(state, board, resolved.view, &page).await?;
        let version = built_at(&page);
        let rendered = Rendered::new(body, &version);
        if state.redis.is_none() {
            state.caches.windows.put(key, version, rendered.clone());
        }
        return Ok(rendered);
    }
    let mut conn = state.store.conn().await?;
    match state.store.user(&mut conn, user_id).await? {
        Some(user) if user.banned_at.is_none() => Err(ErrorCode::UserNotOnBoard.into()),
        // A banned player is as unknown to others as an erased one.
        _ => Err(ErrorCode::UserNotFound.into()),
    }
}

/// A player's entry with its rank, as a page shows it (the around-me
/// window of radius 0), or `None` when they have none there.
pub async fn entry_of(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    user_id: i64,
) -> Result<Option<serde_json::Value>, ApiError> {
    match around(state, board, selector, user_id, 0, None).await {
        Ok(rendered) => {
            let page: serde_json::Value = serde_json::from_slice(&rendered.body).map_err(ApiError::internal)?;
            Ok(page["entries"].get(0).cloned())
        }
        Err(error)
            if matches!(
                error.code(),
                ErrorCode::UserNotOnBoard | ErrorCode::UserNotFound | ErrorCode::PeriodNotFound
            ) =>
        {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Those of `ids` who are on the board, in board order, each with its
/// board-wide rank (a friends board); no `next_*`.
pub async fn friends(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    ids: &[i64],
    address: Option<&str>,
) -> Result<Bytes, ApiError> {
    // Only a single instance keeps windows.
    let term = address.filter(|_| state.redis.is_none()).and_then(|_| address_term(state, board));
    let ResolvedPeriod { board: period, view } = resolve_period(state, board, selector).await?;
    // A single instance keeps the answer at the rank engine's version, read
    // before the entries (a post during the read leaves the copy stale).
    let key = WindowKey::Friends { board: period, ids: ids.to_vec() };
    let version = state.redis.is_none().then(|| PageVersion::Local(state.ranks.version()));
    if let Some((address, term)) = version.as_ref().and(address.zip(term)) {
        state.caches.windows.remember_address(address, &key, term);
    }
    if let Some(kept) = version.as_ref().and_then(|version| state.caches.windows.get(&key, version)) {
        return Ok(kept.body);
    }
    let ranked = state.ranks.ranked(period, ids).await?;
    let players = ranked.total as i64;
    let names = names(state, &ranked.entries.iter().map(|(_, entry)| entry.key.id).collect::<Vec<_>>()).await?;
    let entries = ranked
        .entries
        .into_iter()
        .map(|(rank, entry)| {
            let name = names.get(&entry.key.id).map_or("", |name| name);
            RankingEntry::new(period, (rank, players), entry.key, name, entry.metadata)
        })
        .collect();
    let page = RankingPage {
        board: board.id().to_owned(),
        period: view,
        partition: board.partition().map(str::to_owned),
        entries,
        total_players: players,
        next_offset: None,
        next_cursor: None,
    };
    let body = Bytes::from(serde_json::to_vec(&page).map_err(ApiError::internal)?);
    if let Some(version) = version {
        state.caches.windows.put(key, version, Rendered::untagged(body.clone()));
    }
    Ok(body)
}

/// Reads of a cut-off list begun again, at most, when the board's size
/// moved between its reads; the last is answered as it stands.
const CUTOFF_READS: usize = 3;

/// Where each of `percents` of the board's entries ends, as JSON. A single
/// instance keeps the answer at the rank engine's version (read before the
/// list, so a post during the read leaves the kept copy stale at once);
/// with Redis, every request reads the list.
pub async fn cutoffs(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
    percents: &Percents,
) -> Result<Bytes, ApiError> {
    let ResolvedPeriod { board: period, view } = resolve_period(state, board, selector).await?;
    let key = CutoffKey { board: period, percents: percents.as_slice().to_vec() };
    let version = state.redis.is_none().then(|| PageVersion::Local(state.ranks.version()));
    if let Some(kept) = version.as_ref().and_then(|version| state.caches.cutoffs.get(&key, version)) {
        return Ok(kept.body);
    }
    let list = read_cutoffs(state, board, period, view, percents).await?;
    let body = Bytes::from(serde_json::to_vec(&list).map_err(ApiError::internal)?);
    if let Some(version) = version {
        state.caches.cutoffs.put(key, version, Rendered::untagged(body.clone()));
    }
    Ok(body)
}

/// The entry at `floor(players × percent ÷ 100)` for each percent, read at
/// its offset. The positions are taken from the board's size, and each
/// entry's read must see that size too, else the list is read again: on a
/// quiet board, one snapshot.
async fn read_cutoffs(
    state: &AppState,
    board: &BoardRef,
    period: BoardPeriod,
    view: PeriodView,
    percents: &Percents,
) -> Result<CutoffList, ApiError> {
    let mut players = state.ranks.page(period, PageStart::Offset(0), 1).await?.total_players;
    let mut reads = 1;
    loop {
        let mut at: HashMap<i64, Option<(i64, BoardKey)>> = HashMap::new();
        let mut moved = None;
        for percent in percents.as_slice() {
            let position = percent.position_in(players);
            if position == 0 || at.contains_key(&position) {
                continue;
            }
            let page = state.ranks.page(period, PageStart::Offset(position - 1), 1).await?;
            at.insert(position, page.entries.first().map(|entry| (entry.rank, entry.key)));
            if page.total_players != players {
                moved = Some(page.total_players);
            }
        }
        if let Some(now) = moved.filter(|_| reads < CUTOFF_READS) {
            players = now;
            reads += 1;
            continue;
        }
        let cutoffs = percents
            .as_slice()
            .iter()
            .map(|percent| {
                let position = percent.position_in(players);
                let entry = at.get(&position).copied().flatten();
                Cutoff {
                    percent: *percent,
                    position,
                    rank: entry.map(|(rank, _)| rank),
                    score: entry.map(|(_, key)| key.score),
                    subscores: entry.and_then(|(_, key)| subscores_of(period.ranking, &key.subscores)),
                }
            })
            .collect();
        let partition = board.partition().map(str::to_owned);
        return Ok(CutoffList { board: board.id().to_owned(), period: view, partition, players, cutoffs });
    }
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
pub(super) async fn names(state: &AppState, ids: &[i64]) -> Result<HashMap<i64, Arc<str>>, ApiError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    match names_version(state).await {
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
    let names = names(state, &page.user_ids()).await?;
    let view = RankingPage::new((board.id(), board.partition()), period, page, &names, &state.cursor_keys);
    let json = serde_json::to_vec(&view).map_err(ApiError::internal)?;
    Ok(Bytes::from(json))
}
