//! Webhook events a change writes in its own transaction (the outbox):
//! `period.amended` when moderation or a review changes a period whose
//! results went out. Below the use cases that make the changes; uses none.

use serde_json::json;
use sqlx::AnyConnection;

use crate::domain::Timestamp;
use crate::state::AppState;
use crate::store::StoreError;
use crate::views::PeriodView;
use crate::webhooks::Event;

/// Writes `period.amended` for each of `periods` that had closed (a ban,
/// an unban, a deleted or accepted post changed it after its results
/// went out), in the caller's transaction: `board` (or `league`), the
/// period, `reason` and `user_id`. A league's moves stay as they were made.
pub(super) async fn period_amended(
    state: &AppState,
    conn: &mut AnyConnection,
    periods: &[(i64, i64)],
    reason: &str,
    user_id: i64,
) -> Result<(), StoreError> {
    let now = Timestamp::now();
    for ended in state.store.closed_among(conn, periods).await? {
        // (A partition's change is its board's: the post on the board tells.)
        let Some(board) = state.boards.by_number(ended.board).filter(|board| board.spec.partition_of.is_none()) else {
            continue;
        };
        let owner = if board.spec.league { "league" } else { "board" };
        let data = json!({
            owner: board.spec.id,
            "period": PeriodView { index: ended.period, start: Some(ended.starts_at), end: Some(ended.ends_at) },
            "reason": reason,
            "user_id": user_id,
        });
        state.store.enqueue_event(conn, Event::PeriodAmended.as_str(), &data.to_string(), now).await?;
    }
    Ok(())
}
