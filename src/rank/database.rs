//! The database board source: pages and ranks straight from the database's
//! board indexes (`users_best_board`, `users_total_board`), read while the
//! boards in Redis are down, empty or being rebuilt.
//!
//! A slice is one read snapshot: a keyset or offset range of the index, a
//! count of the entries ahead of its first key, and the player count (one
//! row of `board_stats`, kept by the score writer). Slower than the other
//! sources — deep offsets and ranks are O(depth) counts over the index —
//! and exact on every instance, which an in-process fallback could not be
//! (it would miss the other instances' posts).

use super::source::{BoardSource, Slice, SliceStart};
use crate::domain::{Board, BoardKey};
use crate::store::{Store, StoreError};

#[derive(Clone)]
pub struct DatabaseSource {
    store: Store,
}

impl DatabaseSource {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl BoardSource for DatabaseSource {
    type Error = StoreError;

    async fn slice(&self, board: Board, start: SliceStart, wanted: usize) -> Result<Option<Slice>, StoreError> {
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let (position, keys) = match start {
            SliceStart::Offset(position) => {
                (count(position), store.board_keys_at(conn, board, count(position), count(wanted)).await?)
            }
            SliceStart::After(key) => {
                // Keys up to and including `key` come before, existing or not.
                let up_to = BoardKey { id: key.id.saturating_add(1), ..key };
                let position = store.board_position_of(conn, board, up_to).await?;
                (position, store.board_keys_after(conn, board, key, count(wanted)).await?)
            }
            SliceStart::Around { id, radius } => {
                let Some(key) = store.board_key_of(conn, board, id).await? else {
                    snapshot.commit().await?;
                    return Ok(None);
                };
                let position = (store.board_position_of(conn, board, key).await? - count(radius)).max(0);
                (position, store.board_keys_at(conn, board, position, count(wanted)).await?)
            }
        };
        let total = store.board_players(conn).await?;
        let first_rank = match keys.first() {
            Some(first) => {
                store.board_players_above(conn, &[(board, first.score)]).await?.first().copied().unwrap_or(0) + 1
            }
            None => 0,
        };
        snapshot.commit().await?;
        let to_usize = |n: i64| usize::try_from(n).unwrap_or(0);
        Ok(Some(Slice { keys, position: to_usize(position), first_rank, total: to_usize(total) }))
    }

    async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> Result<Vec<i64>, StoreError> {
        let mut conn = self.store.conn().await?;
        let above = self.store.board_players_above(&mut conn, scores).await?;
        Ok(above.into_iter().map(|players| players + 1).collect())
    }
}
