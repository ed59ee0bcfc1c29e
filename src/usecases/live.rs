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

use super::boards::{resolve, BoardRef};
use super::rankings::{self, PageRequest};
use crate::cache::PageVersion;
use crate::domain::{BoardPeriod, PeriodSelector, Timestamp};
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
        LiveQuery::Page { board, period, limit, offset } => {
            let board = resolve(state, board).await?;
            rankings::page(state, &board, *period, *limit, PageRequest::Offset(*offset)).await?
        }
        LiveQuery::Around { board, period, user_id, radius } => {
            let board = resolve(state, board).await?;
            rankings::around(state, &board, *period, *user_id, *radius).await?
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

/// What the answers depend on besides the query: the board's state (on
/// one instance the rank engine's version, which any change to its boards
/// moves, names included; with Redis the board's stamp there, one round
/// trip) and the period in force. While both hold, every answer is the one
/// already published, exactly as a kept page is served (`cache::pages`).
/// `None` where nothing names the state: an ended period with Redis, Redis
/// degraded, a board gone.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unchanged {
    state: PageVersion,
    period: i64,
}

async fn unchanged_since(state: &AppState, (board, selector): &BoardWatch) -> Option<Unchanged> {
    let board = resolve(state, board).await.ok()?;
    let period = match (&board, selector) {
        (BoardRef::Builtin(builtin), _) => BoardPeriod::builtin(*builtin),
        (BoardRef::Custom(custom), PeriodSelector::Current) => {
            custom.spec.period(custom.period_at(Timestamp::now()).index)
        }
        (BoardRef::Custom(custom), PeriodSelector::Index(index)) => custom.spec.period(*index),
    };
    let board_state = match &state.redis {
        None => PageVersion::Local(state.ranks.version()),
        Some(_) => {
            state.live.count_stamp_read();
            PageVersion::Shared(state.ranks.shared_stamp(period).await?)
        }
    };
    Some(Unchanged { state: board_state, period: period.period })
}
