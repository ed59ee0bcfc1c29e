//! Closing ended periods: each custom board's period, once it has ended
//! (by its reset or its `ends_at`), is marked closed exactly once, by
//! whichever instance gets there first, and its `period.closed` event is
//! written in the same transaction. Every instance runs it every second,
//! so an idle service still closes a period within a few seconds.

use serde_json::{json, Value};

use crate::domain::{PeriodSelector, Timestamp};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store::{EndedPeriod, StoreError};
use crate::usecases::boards::BoardRef;
use crate::usecases::rankings::{self, PageRequest};
use crate::views::PeriodView;
use crate::webhooks::Event;

/// A period is closed this long after its end: a post accepted just
/// before the end commits a moment after it.
const CLOSE_AFTER_END_MS: i64 = 1_500;
/// The periods closed per round (the next round takes the rest).
const PER_ROUND: i64 = 100;
/// The entries a `period.closed` event carries.
const TOP: i64 = 10;

/// Closes the periods that ended before `now` (less the margin); how many
/// this instance closed.
pub async fn close_ended_periods(state: &AppState, now: Timestamp) -> Result<usize, ApiError> {
    let ended = state.store.unclosed_periods(now.plus_millis(-CLOSE_AFTER_END_MS), PER_ROUND).await?;
    let mut closed = 0;
    for period in ended {
        if close(state, period, now).await? {
            closed += 1;
        }
    }
    Ok(closed)
}

async fn close(state: &AppState, ended: EndedPeriod, now: Timestamp) -> Result<bool, ApiError> {
    // Read before the transaction (a page read takes its own connection);
    // a change after it is what `period.amended` reports.
    let data = match state.boards.by_number(ended.board) {
        Some(board) => Some(closed_data(state, BoardRef::Custom(board), ended).await?),
        // A deleted board's periods close without an event.
        None => None,
    };
    let mut tx = state.store.begin_write().await?;
    if !state.store.close_period(&mut tx, ended.board, ended.period, now).await? {
        return Ok(false);
    }
    if let Some(data) = data {
        state.store.enqueue_event(&mut tx, Event::PeriodClosed.as_str(), &data.to_string(), now).await?;
    }
    tx.commit().await.map_err(StoreError::from)?;
    Ok(true)
}

/// `period.closed`'s data: the board, the period, its player count and
/// its top entries. A board that keeps no ended periods may have dropped
/// the period already: then its count as recorded and no entries.
async fn closed_data(state: &AppState, board: BoardRef, ended: EndedPeriod) -> Result<Value, ApiError> {
    let selector = PeriodSelector::Index(ended.period);
    let page = match rankings::page(state, &board, selector, TOP, PageRequest::Offset(0)).await {
        Ok(rendered) => serde_json::from_slice::<Value>(&rendered.body).ok(),
        Err(error) if error.code() == crate::error::ErrorCode::PeriodNotFound => None,
        Err(error) => return Err(error),
    };
    Ok(match page {
        Some(page) => json!({
            "board": board.id(),
            "period": page["period"],
            "players": page["total_players"],
            "top": page["entries"],
        }),
        None => json!({
            "board": board.id(),
            "period": PeriodView { index: ended.period, start: Some(ended.starts_at), end: Some(ended.ends_at) },
            "players": ended.players,
            "top": [],
        }),
    })
}
