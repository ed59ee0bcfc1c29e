//! Live pages: a ranking page or an around-me window pushed again whenever
//! its answer changes, whichever instance the change was made on.
//!
//! One watcher per distinct question (board, period, page or window) looks
//! every [`WATCH_EVERY`] while anyone listens whether its board changed (a
//! version check on one instance; with Redis the board's stamp, read once
//! per board for all its watchers), asks again through the same use case
//! as the plain GET when it did, and publishes the answer when its bytes
//! differ. However many viewers watch a page, it is read and
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
use crate::live::{LivePage, LiveQuery, Published, Updates};
use crate::state::AppState;

/// How often a watcher asks again: a change shows within this (plus one
/// read), and no viewer gets pages more often.
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

/// Asks `query` again every [`WATCH_EVERY`] and publishes a changed answer,
/// until nobody listens or the answer is gone. A failure that may pass (the
/// database or Redis briefly away) is asked again at the next tick.
async fn run_watcher(state: Data<AppState>, query: LiveQuery, sender: watch::Sender<Option<Published>>) {
    let mut last_id = None::<String>;
    let mut asked_at = None::<Unchanged>;
    loop {
        tokio::select! {
            _ = sender.closed() => {
                if state.live.forget_unwatched(&query, &sender) {
                    return;
                }
                continue; // someone subscribed while the last one left
            }
            _ = tokio::time::sleep(WATCH_EVERY) => {}
        }
        let now = unchanged_since(&state, &query).await;
        if now.is_some() && now == asked_at {
            continue;
        }
        state.live.count_page_read();
        let answered = answer(&state, &query).await;
        asked_at = now.filter(|_| answered.is_ok());
        match answered {
            Ok(page) if last_id.as_deref() != Some(&page.id) => {
                last_id = Some(page.id.clone());
                sender.send_replace(Some(Published::Page(Arc::new(page))));
            }
            Ok(_) => {}
            Err(error) if error.code().status() >= 500 => {
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

/// What the answer depends on besides the query: the board's state
/// (on one instance the rank engine's version, which any change to its
/// boards moves, names included; with Redis the board's stamp there) and
/// the period in force. While both hold, the answer is the one already
/// published, exactly as a kept page is served (`cache::pages`), so an
/// idle watcher costs an atomic read, or its share of one Redis round trip
/// per board. `None` (ask) where nothing names the state: an ended period
/// with Redis, Redis degraded, a board gone.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unchanged {
    state: PageVersion,
    period: i64,
}

/// How recent a board's stamp in Redis must be to stand for a watcher's
/// tick (shorter than [`WATCH_EVERY`], see `LiveHub::stamp`).
const STAMP_FRESH: Duration = Duration::from_millis(125);

async fn unchanged_since(state: &AppState, query: &LiveQuery) -> Option<Unchanged> {
    let (board, selector) = match query {
        LiveQuery::Page { board, period, .. } | LiveQuery::Around { board, period, .. } => (board, *period),
    };
    let board = resolve(state, board).await.ok()?;
    let period = match (&board, selector) {
        (BoardRef::Builtin(builtin), _) => BoardPeriod::builtin(*builtin),
        (BoardRef::Custom(custom), PeriodSelector::Current) => {
            custom.spec.period(custom.period_at(Timestamp::now()).index)
        }
        (BoardRef::Custom(custom), PeriodSelector::Index(index)) => custom.spec.period(index),
    };
    let board_state = match &state.redis {
        None => PageVersion::Local(state.ranks.version()),
        Some(_) => PageVersion::Shared(state.live.stamp(period, STAMP_FRESH, state.ranks.shared_stamp(period)).await?),
    };
    Some(Unchanged { state: board_state, period: period.period })
}
