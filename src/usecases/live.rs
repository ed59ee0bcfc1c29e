//! Live pages: a ranking page or an around-me window pushed again whenever
//! its answer changes, whichever instance the change was made on.
//!
//! One ticker per watched board looks every [`WATCH_EVERY`] whether the
//! board changed (a version check on one instance; with Redis the board's
//! stamp, one round trip) and signals its watchers when it did. One
//! watcher per distinct question (board, period, page or window) then asks
//! again through the same use case as the plain GET, and publishes the
//! answer when its bytes differ. However many viewers watch a page, it is read and
//! rendered once per change, not once per viewer; a viewer's stream only
//! forwards what its watcher published. The watcher ends with its last
//! viewer.
//!
//! A `current` page follows its board into the next period at a reset (the
//! page's `period` says which); an ended period never changes but by
//! moderation, so its page stays open and quiet.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::web::Data;
use tokio::sync::watch;

use super::boards::{resolve, resolve_partition, BoardRef};
use super::rankings::{self, Asker, PageRequest};
use crate::cache::PageVersion;
use crate::domain::{Board, BoardPeriod, PeriodSelector, Timestamp};
use crate::error::ApiError;
use crate::live::{BoardWatch, LivePage, LiveQuery, Published, Updates};
use crate::state::AppState;

/// How often a board's ticker looks for a change: a change shows within
/// this (plus one read), and no viewer gets pages more often.
pub const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The answer to `query` now, as the plain GET would give it.
pub async fn answer(state: &AppState, query: &LiveQuery) -> Result<LivePage, ApiError> {
    let read_at = Instant::now();
    let rendered = match query {
        LiveQuery::Page { board, partition, period, limit, offset } => {
            let board = resolve_partition(state, resolve(state, board).await?, partition.as_deref()).await?;
            rankings::page(state, &board, *period, *limit, PageRequest::Offset(*offset), Asker::Server).await?
        }
        LiveQuery::Around { board, partition, period, user_id, radius } => {
            let board = resolve_partition(state, resolve(state, board).await?, partition.as_deref()).await?;
            rankings::around(state, &board, *period, *user_id, *radius, None).await?
        }
    };
    Ok(LivePage::new(rendered.body, read_at))
}

/// The updates to `query`'s answer, from its watcher (started here when
/// nobody watched it yet).
pub fn watch(state: &Data<AppState>, query: LiveQuery) -> Updates {
    match state.live.subscribe(&query) {
        Some((updates, None)) => updates,
        Some((updates, Some(sender))) => {
            actix_web::rt::spawn(run_watcher(state.clone(), query, sender));
            updates
        }
        // A poisoned map: a receiver of nothing, so the stream only pings.
        None => watch::Sender::new(None).subscribe(),
    }
}

/// Asks `query` again whenever its board changed (its ticker's signal,
/// at most every [`WATCH_EVERY`]) and publishes a changed answer, until
/// nobody listens or the answer is gone. A failure that may pass (the
/// database or Redis briefly away) is asked again after [`WATCH_EVERY`].
async fn run_watcher(state: Data<AppState>, query: LiveQuery, sender: watch::Sender<Option<Published>>) {
    let board = query.board_watch();
    let Some((mut changes, ticker)) = state.live.board_changes(&board) else { return };
    if let Some(ticker) = ticker {
        actix_web::rt::spawn(run_ticker(state.clone(), board, ticker));
    }
    // The first look reads: the board may have changed since the viewer's
    // first page and before this watcher subscribed.
    changes.mark_changed();
    let mut last_id = None::<String>;
    let mut retry = false;
    loop {
        tokio::select! {
            _ = sender.closed() => {
                if state.live.forget_unwatched(&query, &sender) {
                    return;
                }
                continue; // someone subscribed while the last one left
            }
            changed = changes.changed() => if changed.is_err() {
                return; // the ticker is gone: the instance stops
            },
            _ = tokio::time::sleep(WATCH_EVERY), if retry => {}
        }
        state.live.count_page_read();
        // Boxed: an idle watcher holds no read's state (10,000 of them would
        // hold tens of KB each).
        let answered = Box::pin(answer(&state, &query)).await;
        retry = matches!(&answered, Err(error) if error.code().status() >= 500);
        match answered {
            Ok(page) if last_id.as_deref() != Some(&page.id) => {
                last_id = Some(page.id.clone());
                sender.send_replace(Some(Published::Page(Arc::new(page))));
            }
            Ok(_) => {}
            Err(error) if retry => {
                tracing::debug!(%error, "a live page's read failed; asking again");
            }
            Err(error) => {
                sender.send_replace(Some(Published::Ended(error.envelope())));
                state.live.forget_unwatched(&query, &sender);
                return;
            }
        }
    }
}

/// One per watched board on an instance: every [`WATCH_EVERY`] looks
/// whether the board changed and, if it did, signals its watchers, which
/// then read their answers. An idle board's watchers never wake: 10,000
/// players each watching their own around-me window cost one look a tick.
/// Where nothing names the board's state, every tick signals (they ask).
async fn run_ticker(state: Data<AppState>, board: BoardWatch, changes: watch::Sender<u64>) {
    let mut seen = None::<Unchanged>;
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if state.live.forget_unwatched_board(&board, &changes) {
            return;
        }
        let now = Box::pin(unchanged_since(&state, &board)).await;
        if now.is_none() || now != seen {
            changes.send_modify(|signal| *signal = signal.wrapping_add(1));
        }
        seen = now;
    }
}

/// What the answers depend on besides the query, so that while it holds
/// every answer is the one already published, exactly as a kept page is
/// served (`cache::pages`), and the period in force. `None` where nothing
/// names the state (a board gone): then every tick signals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unchanged {
    state: BoardState,
    period: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum BoardState {
    /// The built-in boards, and a current period with Redis: the rank
    /// engine's version on one instance (any change to its boards moves
    /// it, names included), or the board's stamp in Redis (one round trip).
    Engine(PageVersion),
    /// A custom board's period otherwise (ended, or without Redis, or Redis
    /// degraded): its change count in the database (every entry changed,
    /// hidden or deleted moves it; one primary-key lookup) and the names
    /// version (renames change the pages, not the entries). A watched
    /// ended period costs one such look a tick, however many watch it,
    /// and no page read until it changes.
    Period { changes: Option<i64>, names: i64 },
}

async fn unchanged_since(state: &AppState, (board, partition, selector): &BoardWatch) -> Option<Unchanged> {
    let board = resolve_partition(state, resolve(state, board).await.ok()?, partition.as_deref()).await.ok()?;
    let (period, current) = match (&board, selector) {
        (BoardRef::Builtin(builtin), _) => (BoardPeriod::builtin(*builtin), true),
        (BoardRef::Custom(custom), PeriodSelector::Current) => {
            (custom.spec.period(custom.period_at(Timestamp::now()).index), true)
        }
        (BoardRef::Custom(custom), PeriodSelector::Index(index)) => {
            (custom.spec.period(*index), *index == custom.period_at(Timestamp::now()).index)
        }
    };
    let board_state = match (&board, &state.redis) {
        (BoardRef::Builtin(_), None) => BoardState::Engine(PageVersion::Local(state.ranks.version())),
        (BoardRef::Builtin(_), Some(_)) => BoardState::Engine(PageVersion::Shared(shared_stamp(state, period).await?)),
        (BoardRef::Custom(_), Some(_)) if current => match shared_stamp(state, period).await {
            Some(stamp) => BoardState::Engine(PageVersion::Shared(stamp)),
            None => period_state(state, period).await?,
        },
        (BoardRef::Custom(_), _) => period_state(state, period).await?,
    };
    Some(Unchanged { state: board_state, period: period.period })
}

async fn shared_stamp(state: &AppState, period: BoardPeriod) -> Option<Arc<str>> {
    state.live.count_stamp_read();
    state.ranks.shared_stamp(period).await
}

async fn period_state(state: &AppState, period: BoardPeriod) -> Option<BoardState> {
    let Board::Custom(number) = period.board else { return None };
    state.live.count_stamp_read();
    let changes = state.store.period_stamp(number, period.period).await.ok()?;
    let names = match &state.redis {
        None => i64::try_from(state.ranks.renames()).ok()?,
        Some(redis) => redis.counter(&redis.keys().names_version()).await.ok()?,
    };
    Some(BoardState::Period { changes, names })
}
