//! Players as others see them: profiles with ranks, batched lookups, and
//! the history of their posts.

use std::collections::HashMap;

use actix_web::web::Bytes;

use crate::cache::{AddressTerm, PageVersion, Rendered};
use crate::error::{ApiError, ErrorCode};
use crate::rank::UserRanks;
use crate::state::AppState;
use crate::store::{ScoreRow, UserRow};
use crate::views::{FoundPlayer, FoundPlayers, Me, PublicUser};

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

/// A player's public profile as the contract's JSON; 404 `user_not_found`
/// for an unknown or banned one. A single instance keeps it at the rank
/// engine's version and the user rows' count of changes, both read before
/// the row and the ranks (a change during the read leaves the copy stale),
/// and remembers `address` (the request's path and query, which names the
/// same profile whatever the time) for `front`.
pub async fn profile_json(state: &AppState, id: i64, address: Option<&str>) -> Result<Bytes, ApiError> {
    let version =
        state.caches.users.local_changes().map(|rows| PageVersion::Profile { ranks: state.ranks.version(), rows });
    if let Some(kept) = version.as_ref().and_then(|version| state.caches.profiles.get(&id, version)) {
        return Ok(kept.body);
    }
    let (user, ranks) = profile(state, id).await?.ok_or(ErrorCode::UserNotFound)?;
    let body = Bytes::from(serde_json::to_vec(&PublicUser::new(&user, ranks)).map_err(ApiError::internal)?);
    if let Some(version) = version {
        // Only a player's address: unknown ids take no place among them.
        if let Some(address) = address {
            state.caches.profiles.remember_address(address, &id, AddressTerm::Always);
        }
        state.caches.profiles.put(id, version, Rendered::untagged(body.clone()));
    }
    Ok(body)
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
