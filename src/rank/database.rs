//! The database board source: pages and ranks straight from the database's
//! board indexes (`users_best_board`, `users_total_board`,
//! `board_entries_order`): what the engine reads while the boards in Redis
//! are down, empty or being rebuilt, and always for ended periods.
//!
//! A slice is one read snapshot: a keyset or offset range of the index, a
//! count of the entries ahead of its first key, and the player count (one
//! row of `board_stats` or `board_periods`, kept by the score writer). A
//! custom board's slice also reads the period's change count, where a walk
//! beginning at it begins; later pages of the walk leave out entries whose
//! change number is past it, as the other sources do with the same numbers.
//! Slower than the other sources — deep offsets and ranks are O(depth)
//! counts over the index — and exact on every instance, which an
//! in-process fallback could not be (it would miss the other instances'
//! posts).
//!
//! An ended period whose final standings hold (`store/standings.rs`) is
//! read from them instead: a page is a seek by position, a player's place a
//! lookup of their row, whatever the depth. Reads they cannot answer (a
//! walk that began before they were written, a cursor key that is no
//! longer an entry) take the counting path.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::AnyConnection;

use super::source::{rank_entries, BoardSource, Entry, Ranked, ScoreRank, Skipped, Slice, SliceStart, WALK_SCAN_LIMIT};
use crate::domain::{Board, BoardKey, BoardPeriod, Walk};
use crate::store::{FinalPlace, KeyWithMetadata, MiddleRead, PeriodState, Store, StoreError, WalkedKey};

/// Whether a period's final standings answered a read.
enum FromStandings<T> {
    Answered(T),
    /// They do not hold, or cannot answer this read: count instead.
    Count,
}

#[derive(Clone)]
pub struct DatabaseSource {
    store: Store,
}

impl DatabaseSource {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Where a walk beginning in this snapshot begins (custom boards).
    async fn walk_start(&self, conn: &mut AnyConnection, board: BoardPeriod) -> Result<Option<Walk>, StoreError> {
        let Board::Custom(number) = board.board else { return Ok(None) };
        let changes = self.store.period_changes(conn, number, board.period).await?;
        Ok(Some(Walk { changes: u64::try_from(changes).unwrap_or(0) }))
    }

    /// Up to `wanted` entries after `key` that did not change since `walk`
    /// began, looking at no more than `wanted + WALK_SCAN_LIMIT` entries
    /// (the other sources' bound): in one snapshot, a few keyset reads of
    /// the order index, and two counts for positions and ranks (the keys
    /// looked at are one run of the board, so each one's position is the
    /// first one's plus its index).
    async fn walk_after(
        &self,
        board: BoardPeriod,
        key: BoardKey,
        walk: Walk,
        wanted: usize,
    ) -> Result<Slice, StoreError> {
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let up_to = BoardKey { id: key.id.saturating_add(1), ..key };
        let start = to_usize(store.board_position_of(conn, board, up_to).await?);
        let budget = wanted.saturating_add(WALK_SCAN_LIMIT);
        let kept_of = |looked: &[WalkedKey]| {
            looked.iter().filter(|(_, _, changed)| u64::try_from(*changed).unwrap_or(0) <= walk.changes).count()
        };
        let mut looked: Vec<WalkedKey> = Vec::new();
        let mut after = key;
        loop {
            let asked = (budget - looked.len()).min(wanted.max(looked.len()).max(1));
            let batch = store.board_walked_keys_after(conn, board, after, count(asked)).await?;
            let exhausted = batch.len() < asked;
            looked.extend(batch);
            if exhausted || looked.len() >= budget || kept_of(&looked) >= wanted {
                break;
            }
            after = looked.last().map_or(after, |(key, _, _)| *key);
        }
        let total = to_usize(store.board_players(conn, board).await?);
        let first_rank = match looked.first() {
            Some((first, _, _)) => rank_of(store, conn, board, *first).await?,
            None => 0,
        };
        snapshot.commit().await?;

        let mut entries = Vec::new();
        let mut skipped = Skipped { positions: Vec::new(), ranks: Vec::new(), stopped_after: None };
        // The rank of the run of equal scores each looked-at key is in.
        let mut rank = first_rank;
        for (index, (key, metadata, changed)) in looked.iter().enumerate() {
            if index > 0 && !looked[index - 1].0.ties(key) {
                rank = (start + index) as i64 + 1;
            }
            if entries.len() < wanted && u64::try_from(*changed).unwrap_or(0) <= walk.changes {
                entries.push(Entry { key: *key, metadata: metadata.clone().map(Arc::from) });
                skipped.positions.push(start + index);
                skipped.ranks.push(rank);
            }
        }
        if entries.len() < wanted && looked.len() >= budget && start + looked.len() < total {
            skipped.stopped_after = looked.last().map(|(key, _, _)| *key);
        }
        Ok(Slice {
            entries,
            position: start,
            first_rank: skipped.ranks.first().copied().unwrap_or(0),
            total,
            stamp: None,
            walk: None,
            skipped: Some(skipped),
        })
    }

    /// Answers `read` in one read snapshot if the period's final standings
    /// hold in it (`read` may still find it cannot: a key no longer its
    /// player's), else `Count`.
    async fn if_settled<T>(
        &self,
        number: i64,
        period: i64,
        read: impl AsyncFnOnce(&mut AnyConnection, PeriodState) -> Result<FromStandings<T>, StoreError>,
    ) -> Result<FromStandings<T>, StoreError> {
        let mut snapshot = self.store.begin_read().await?;
        let answer = match self.store.period_state(&mut snapshot, number, period).await? {
            Some(state) if state.standings_hold() => read(&mut snapshot, state).await?,
            _ => FromStandings::Count,
        };
        snapshot.commit().await?;
        Ok(answer)
    }

    /// A slice from the period's final standings, if they hold.
    async fn settled_slice(
        &self,
        board: BoardPeriod,
        number: i64,
        start: SliceStart,
        wanted: usize,
    ) -> Result<FromStandings<Option<Slice>>, StoreError> {
        let store = &self.store;
        let period = (number, board.period);
        self.if_settled(number, board.period, async |conn, state| {
            let place_of = |places: Vec<FinalPlace>| places.into_iter().next();
            let position = match start {
                SliceStart::Offset(position) => count(position),
                // A walk that began at an earlier count would leave out
                // entries changed since: only the counting path knows which.
                SliceStart::After { walk: Some(walk), .. } if i64::try_from(walk.changes) != Ok(state.changes) => {
                    return Ok(FromStandings::Count);
                }
                SliceStart::After { key, .. } => match place_of(store.standings_of(conn, period, &[key.id]).await?) {
                    Some(place) if place.key == key => place.position + 1,
                    _ => return Ok(FromStandings::Count),
                },
                SliceStart::Around { id, radius } => match place_of(store.standings_of(conn, period, &[id]).await?) {
                    Some(place) => (place.position - count(radius)).max(0),
                    None => return Ok(FromStandings::Answered(None)),
                },
            };
            let places = store.standings_from(conn, period, position, count(wanted)).await?;
            Ok(FromStandings::Answered(Some(Slice {
                first_rank: places.first().map_or(0, |place| place.rank),
                entries: places.into_iter().map(|place| entry((place.key, place.metadata))).collect(),
                position: to_usize(position),
                total: to_usize(state.players),
                stamp: None,
                walk: Some(Walk { changes: u64::try_from(state.changes).unwrap_or(0) }),
                skipped: None,
            })))
        })
        .await
    }

    /// Some players' places from the period's final standings, if they hold.
    async fn settled_ranked(
        &self,
        board: BoardPeriod,
        number: i64,
        ids: &[i64],
    ) -> Result<FromStandings<Ranked>, StoreError> {
        let store = &self.store;
        self.if_settled(number, board.period, async |conn, state| {
            let places = store.standings_of(conn, (number, board.period), ids).await?;
            let ranks: std::collections::HashMap<i64, i64> =
                places.iter().map(|place| (place.key.id, place.rank)).collect();
            let entries = places.into_iter().map(|place| entry((place.key, place.metadata))).collect();
            let total = to_usize(state.players);
            Ok(FromStandings::Answered(rank_entries(
                board,
                entries,
                |entry| ranks.get(&entry.key.id).copied().unwrap_or(0),
                total,
            )))
        })
        .await
    }
}

/// For each (board, key): its rank and the board's size, on `conn` (one
/// count of the entries above for all, one size per board asked).
pub(super) async fn key_ranks(
    store: &Store,
    conn: &mut AnyConnection,
    keys: &[(BoardPeriod, BoardKey)],
    middle: MiddleRead,
) -> Result<Vec<ScoreRank>, StoreError> {
    let above = store.board_players_above(conn, keys, middle).await?;
    let mut sizes: HashMap<BoardPeriod, i64> = HashMap::new();
    for (board, _) in keys {
        if !sizes.contains_key(board) {
            sizes.insert(*board, store.board_players(conn, *board).await?);
        }
    }
    Ok(above
        .into_iter()
        .zip(keys)
        .map(|(above, (board, _))| ScoreRank { rank: above + 1, players: sizes[board] })
        .collect())
}

/// The competition rank a key has on the board: 1 + the entries strictly
/// better (by score and subscores).
async fn rank_of(
    store: &Store,
    conn: &mut AnyConnection,
    board: BoardPeriod,
    key: BoardKey,
) -> Result<i64, StoreError> {
    let above = store.board_players_above(conn, &[(board, key)], MiddleRead::Allowed).await?;
    Ok(above.first().copied().unwrap_or(0) + 1)
}

fn to_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
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
        if let Board::Custom(number) = board.board {
            if let FromStandings::Answered(slice) = self.settled_slice(board, number, start, wanted).await? {
                return Ok(slice);
            }
        }
        if let SliceStart::After { key, walk: Some(walk) } = start {
            return Ok(Some(self.walk_after(board, key, walk, wanted).await?));
        }
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let (position, keys) = match start {
            SliceStart::Offset(position) => {
                (count(position), store.board_keys_at(conn, board, count(position), count(wanted)).await?)
            }
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
            Some((first, _)) => rank_of(store, conn, board, *first).await?,
            None => 0,
        };
        let walk = self.walk_start(conn, board).await?;
        snapshot.commit().await?;
        let entries = keys.into_iter().map(entry).collect();
        Ok(Some(Slice {
            entries,
            position: to_usize(position),
            first_rank,
            total: to_usize(total),
            stamp: None,
            walk,
            skipped: None,
        }))
    }

    async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> Result<Vec<ScoreRank>, StoreError> {
        let mut snapshot = self.store.begin_read().await?;
        let ranks = key_ranks(&self.store, &mut snapshot, keys, MiddleRead::Allowed).await?;
        snapshot.commit().await?;
        Ok(ranks)
    }

    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> Result<Ranked, StoreError> {
        if let Board::Custom(number) = board.board {
            if let FromStandings::Answered(ranked) = self.settled_ranked(board, number, ids).await? {
                return Ok(ranked);
            }
        }
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let entries: Vec<Entry> = store.board_keys_of(conn, board, ids).await?.into_iter().map(entry).collect();
        let keys: Vec<(BoardPeriod, BoardKey)> = entries.iter().map(|entry| (board, entry.key)).collect();
        let above = store.board_players_above(conn, &keys, MiddleRead::Allowed).await?;
        let total = store.board_players(conn, board).await?;
        snapshot.commit().await?;
        let ranks: std::collections::HashMap<i64, i64> =
            entries.iter().zip(above).map(|(entry, above)| (entry.key.id, above + 1)).collect();
        let total = usize::try_from(total).unwrap_or(0);
        Ok(rank_entries(board, entries, |entry| ranks.get(&entry.key.id).copied().unwrap_or(0), total))
    }
}
