//! Players as others see them: profiles with ranks, batched lookups, and
//! the history of their posts.

use std::collections::HashMap;

use crate::error::{ApiError, ErrorCode};
use crate::rank::UserRanks;
use crate::state::AppState;
use crate::store::{ScoreRow, UserRow};
use crate::views::{FoundPlayer, FoundPlayers, Me};

/// Users with their ranks, whatever their number in one query to the
/// database (and one to Redis); unknown and banned ids are left out, order
/// is the order asked.
pub async fn profiles(state: &AppState, ids: &[i64]) -> Result<Vec<(UserRow, UserRanks)>, ApiError> {
    let mut rows = rows(state, ids).await?;
    rows.retain(|row| row.banned_at.is_none());
    let refs: Vec<&UserRow> = rows.iter().collect();
    let ranks = state.ranks.ranks_of(&refs).await?;
    let mut by_id: HashMap<i64, (UserRow, UserRanks)> =
        rows.into_iter().zip(ranks).map(|(row, ranks)| (row.id, (row, ranks))).collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// An admin's search (`GET /api/admin/users?q=`): players by id or name
/// prefix, banned ones included with their ranks null (they are on no
/// board), the others ranked in one batch.
pub async fn search(state: &AppState, q: &str, limit: i64) -> Result<FoundPlayers, ApiError> {
    let rows = state.store.search_users(q, limit).await?;
    let listed: Vec<&UserRow> = rows.iter().filter(|row| row.banned_at.is_none()).collect();
    let ranks = state.ranks.ranks_of(&listed).await?;
    let mut ranks: HashMap<i64, UserRanks> = listed.iter().map(|row| row.id).zip(ranks).collect();
    let users = rows
        .iter()
        .map(|row| FoundPlayer {
            me: Me::new(row, ranks.remove(&row.id).unwrap_or_default()),
            banned_at: row.banned_at,
        })
        .collect();
    Ok(FoundPlayers { users })
}

/// One user with ranks, or `None`.
pub async fn profile(state: &AppState, id: i64) -> Result<Option<(UserRow, UserRanks)>, ApiError> {
    Ok(profiles(state, &[id]).await?.pop())
}

/// Rows from the cache where kept (in process, or one `MGET` in Redis),
/// the rest from the database (one `IN (…)` query), which then refill it.
async fn rows(state: &AppState, ids: &[i64]) -> Result<Vec<UserRow>, ApiError> {
    let (mut rows, missing) = state.caches.users.get_many(ids).await;
    if !missing.is_empty() {
        let mut conn = state.store.conn().await?;
        let loaded = state.store.users(&mut conn, &missing).await?;
        drop(conn);
        state.caches.users.put_many(&loaded).await;
        rows.extend(loaded);
    }
    Ok(rows)
}

/// A page of a player's posts, newest first, and where the next one starts.
pub struct History {
    pub scores: Vec<ScoreRow>,
    pub next_before: Option<i64>,
}

/// Up to `limit` posts older than `before`; 404 for an unknown (or banned) player.
pub async fn history(state: &AppState, id: i64, before: Option<i64>, limit: i64) -> Result<History, ApiError> {
    let mut conn = state.store.conn().await?;
    if state.store.user(&mut conn, id).await?.is_none_or(|user| user.banned_at.is_some()) {
        return Err(ErrorCode::UserNotFound.into());
    }
    let mut scores = state.store.score_history(&mut conn, id, before, limit + 1).await?;
    let has_more = scores.len() as i64 > limit;
    scores.truncate(usize::try_from(limit).unwrap_or(0));
    let next_before = if has_more { scores.last().map(|row| row.id) } else { None };
    Ok(History { scores, next_before })
}
