//! Tournaments (v3): joining a board's current period, and what a player
//! holds on a board (joined, attempts, entry). The score writer enforces
//! both at posting (`scoring::custom`), under the same period lock.

use crate::domain::{PeriodSelector, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::limits::Limit;
use crate::state::AppState;
use crate::usecases::account_changes::{in_transaction, lock_user, Failure};
use crate::usecases::boards::{resolve_custom, resolve_partition, BoardRef};
use crate::usecases::rankings;
use crate::usecases::sessions::SessionOwner;
use crate::views::{BoardStanding, Joined, PeriodView};

/// `POST /api/boards/{id}/entrants`: joins the period in force. Whether
/// there is room is decided with the period's row locked (the lock every
/// post to it takes), so a full period stays full under any concurrency.
/// `true` with the answer when the player joined now, `false` when they
/// had already.
pub async fn join(state: &AppState, id: &str, owner: SessionOwner) -> Result<(bool, Joined), ApiError> {
    let board = resolve_custom(state, id).await?;
    let now = Timestamp::now();
    let period = board.period_at(now);
    let tournament = board.tournament(period.index);
    if !tournament.join_required {
        return Err(ErrorCode::JoinNotRequired.into());
    }
    // A join writes, under the period's lock: it counts as a post.
    state.limits.check(Limit::PostsPerPlayer, &owner.user_id.to_string()).await?;
    if !tournament.open_at(now) {
        return Err(ErrorCode::BoardClosed.into());
    }
    let number = board.spec.number;
    let (joined_now, entrants) = in_transaction(state, async |conn| {
        // The player's row first, as posts and moderation lock it.
        let user = lock_user(state, conn, owner.user_id).await?;
        if user.banned_at.is_some() {
            return Err(ErrorCode::Banned.into());
        }
        state.store.lock_period(conn, number, period.index, period.start, period.end).await?;
        let entrants = state.store.entrant_count(conn, number, period.index).await?;
        if !state.store.entrants_among(conn, number, period.index, &[owner.user_id]).await?.is_empty() {
            return Ok::<_, Failure>((false, entrants));
        }
        if tournament.max_entrants.is_some_and(|max| entrants >= max) {
            return Err(ErrorCode::BoardFull.into());
        }
        state.store.insert_entrant(conn, number, period.index, owner.user_id, now).await?;
        Ok((true, entrants + 1))
    })
    .await?;
    Ok((joined_now, Joined { period: PeriodView::from(period), entrants }))
}

/// `GET /api/boards/{id}/me`: the player's standing on a board in the
/// period in force.
pub async fn standing(
    state: &AppState,
    id: &str,
    partition: Option<&str>,
    owner: SessionOwner,
) -> Result<BoardStanding, ApiError> {
    let board = resolve_custom(state, id).await?;
    // (Only the entry is the partition's: joins and attempts are the board's.)
    let ranked = resolve_partition(state, BoardRef::Custom(board.clone()), partition).await?;
    let period = board.period_at(Timestamp::now());
    let (number, user_id) = (board.spec.number, owner.user_id);
    let mut conn = state.store.conn().await?;
    let joined = !state.store.entrants_among(&mut conn, number, period.index, &[user_id]).await?.is_empty();
    let attempts = state.store.attempts_among(&mut conn, number, period.index, &[user_id]).await?;
    drop(conn);
    let attempts = attempts.get(&user_id).copied().unwrap_or(0);
    let attempts_left = board.tournament(period.index).max_attempts.map(|max| (max - attempts).max(0));
    let entry = rankings::entry_of(state, &ranked, PeriodSelector::Index(period.index), user_id).await?;
    Ok(BoardStanding {
        board: board.spec.id.clone(),
        period: PeriodView::from(period),
        joined,
        attempts,
        attempts_left,
        entry,
    })
}
