//! The database board source: pages and ranks straight from the database's
//! board indexes (`users_best_board`, `users_total_board`,
//! `board_entries_order`): what the engine reads while the boards in Redis
//! are down, empty or being rebuilt, and always for ended periods.
//!
//! A slice is one read snapshot: a keyset or offset range of the index, a
//! count of the entries ahead of its first key, and the player count (one
//! row of `board_stats` or `board_periods`, kept by the score writer).
//! Slower than the other sources — deep offsets and ranks are O(depth)
//! counts over the index — and exact on every instance, which an
//! in-process fallback could not be (it would miss the other instances'
//! posts).

use std::sync::Arc;

use super::source::{rank_entries, BoardSource, Entry, Ranked, Slice, SliceStart};
use crate::domain::{BoardKey, BoardPeriod};
use crate::store::{KeyWithMetadata, Store, StoreError};

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

fn entry((key, metadata): KeyWithMetadata) -> Entry {
    Entry { key, metadata: metadata.map(Arc::from) }
}

impl BoardSource for DatabaseSource {
    type Error = StoreError;

    async fn slice(&self, board: BoardPeriod, start: SliceStart, wanted: usize) -> Result<Option<Slice>, StoreError> {
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let (position, keys) = match start {
            SliceStart::Offset(position) => {
                (count(position), store.board_keys_at(conn, board, count(position), count(wanted)).await?)
            }
            // The database does not count changes: a walk goes on without
            // leaving changed entries out (see README, "Cursors").
            SliceStart::After { key, .. } => {
                // Keys up to and including `key` come before, existing or not.
                let up_to = BoardKey { id: key.id.saturating_add(1), ..key };
                let position = store.board_position_of(conn, board, up_to).await?;
                (position, store.board_keys_after(conn, board, key, count(wanted)).await?)
            }
            SliceStart::Around { id, radius } => {
                let Some((key, _)) = store.board_key_of(conn, board, id).await? else {
                    snapshot.commit().await?;
                    return Ok(None);
                };
                let position = (store.board_position_of(conn, board, key).await? - count(radius)).max(0);
                (position, store.board_keys_at(conn, board, position, count(wanted)).await?)
            }
        };
        let total = store.board_players(conn, board).await?;
        let first_rank = match keys.first() {
            Some((first, _)) => {
                store.board_players_above(conn, &[(board, first.score)]).await?.first().copied().unwrap_or(0) + 1
            }
            None => 0,
        };
        snapshot.commit().await?;
        let to_usize = |n: i64| usize::try_from(n).unwrap_or(0);
        let entries = keys.into_iter().map(entry).collect();
        Ok(Some(Slice {
            entries,
            position: to_usize(position),
            first_rank,
            total: to_usize(total),
            stamp: None,
            walk: None,
            skipped: None,
        }))
    }

    async fn ranks_of_scores(&self, scores: &[(BoardPeriod, i64)]) -> Result<Vec<i64>, StoreError> {
        let mut conn = self.store.conn().await?;
        let above = self.store.board_players_above(&mut conn, scores).await?;
        Ok(above.into_iter().map(|players| players + 1).collect())
    }

    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> Result<Ranked, StoreError> {
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let entries: Vec<Entry> = store.board_keys_of(conn, board, ids).await?.into_iter().map(entry).collect();
        let scores: Vec<(BoardPeriod, i64)> = entries.iter().map(|entry| (board, entry.key.score)).collect();
        let above = store.board_players_above(conn, &scores).await?;
        let total = store.board_players(conn, board).await?;
        snapshot.commit().await?;
        let ranks: std::collections::HashMap<i64, i64> =
            entries.iter().zip(above).map(|(entry, above)| (entry.key.id, above + 1)).collect();
        let total = usize::try_from(total).unwrap_or(0);
        Ok(rank_entries(board, entries, |entry| ranks.get(&entry.key.id).copied().unwrap_or(0), total))
    }
}
