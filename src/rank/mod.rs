//! The rank engine: competition ranks, pages and windows for both boards.
//!
//! Every endpoint that shows a rank goes through this one interface. It
//! answers from an in-process order-statistic index ([`Standings`]) in
//! O(log n) per rank and O(log n + page) per page, whatever the depth. The
//! index is warmed from the database at start (and after an initialize) and
//! updated on the same code path as a score post; the database stays the
//! source of truth. It never writes anything.
//!
//! One instance keeps one index: several instances of the service each see
//! only their own posts here (sharing needs the Redis engine).

mod standings;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::RwLock;

pub use self::standings::{Standing, Standings};
use crate::domain::{Board, BoardKey, Cursor};
use crate::store::{Store, UserRow};

/// A player's rank on each board; `None` while they have not played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserRanks {
    pub best: Option<i64>,
    pub total: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankedKey {
    pub rank: i64,
    pub key: BoardKey,
}

/// A slice of a board with its ranks and where to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub board: Board,
    pub entries: Vec<RankedKey>,
    pub total_players: i64,
    /// Position after the last entry, when there is more.
    pub next_offset: Option<i64>,
    /// Keyset cursor after the last entry, when there is more.
    pub next_cursor: Option<Cursor>,
    /// The engine's version this page was read at (see [`RankEngine::version`]).
    pub version: u64,
}

impl Page {
    pub fn user_ids(&self) -> Vec<i64> {
        self.entries.iter().map(|e| e.key.id).collect()
    }
}

/// What a warm-up did, for the log and the benchmarks.
#[derive(Debug, Clone, Copy)]
pub struct WarmUp {
    pub players: usize,
    pub elapsed: Duration,
}

#[derive(Clone, Default)]
pub struct RankEngine {
    /// Async lock: a warm-up holds it across the database read, so that no
    /// post recorded meanwhile is lost (see [`RankEngine::warm_up`]).
    standings: Arc<RwLock<Standings>>,
    /// Bumped on every change to the standings, so caches of pages can tell
    /// whether they are still exact.
    version: Arc<AtomicU64>,
}

impl RankEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds the index from the database. The write lock is held across
    /// the read: a post that commits before the read is in it, and one that
    /// commits after waits here and is recorded afterwards.
    pub async fn warm_up(&self, store: &Store) -> Result<WarmUp, sqlx::Error> {
        let started = Instant::now();
        let mut standings = self.standings.write().await;
        let mut conn = store.conn().await?;
        let rows = store.board_standings(&mut conn).await?;
        let read = started.elapsed();
        *standings = Standings::from_standings(&rows);
        self.version.fetch_add(1, Ordering::Release);
        let elapsed = started.elapsed();
        tracing::debug!(read_ms = read.as_millis() as u64, build_ms = (elapsed - read).as_millis() as u64, "warm-up");
        Ok(WarmUp { players: rows.len(), elapsed })
    }

    /// Records a player's state after a committed score post.
    pub async fn record(&self, user: &UserRow) {
        let standing = Standing {
            id: user.id,
            best: user.best_score,
            best_at: user.best_at.map_or(0, |t| t.millis()),
            total: user.total_score,
            plays: user.play_count,
        };
        let mut standings = self.standings.write().await;
        if standings.apply(standing) {
            self.version.fetch_add(1, Ordering::Release);
        }
    }

    /// Changes so far; equal versions mean identical boards.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Ranks of the scores these rows show (so a profile's rank matches its
    /// own numbers even if the player posted a moment later).
    pub async fn ranks_of(&self, users: &[&UserRow]) -> Vec<UserRanks> {
        let standings = self.standings.read().await;
        users
            .iter()
            .map(|user| {
                if user.play_count == 0 {
                    return UserRanks::default();
                }
                UserRanks {
                    best: Some(standings.rank_of_score(Board::Best, user.best_score)),
                    total: Some(standings.rank_of_score(Board::Total, user.total_score)),
                }
            })
            .collect()
    }

    /// `limit` entries from position `offset`.
    pub async fn page_at_offset(&self, board: Board, offset: i64, limit: i64) -> Page {
        let standings = self.standings.read().await;
        let position = usize::try_from(offset).unwrap_or(usize::MAX);
        build_page(&standings, board, position, to_count(limit), self.version())
    }

    /// `limit` entries after the cursor's key.
    pub async fn page_after(&self, cursor: Cursor, limit: i64) -> Page {
        let standings = self.standings.read().await;
        let position = standings.position_after(cursor.board, cursor.after);
        build_page(&standings, cursor.board, position, to_count(limit), self.version())
    }

    /// Up to `radius` entries either side of a player; `None` when the
    /// player is not on the board.
    pub async fn around(&self, board: Board, user_id: i64, radius: i64) -> Option<Page> {
        let standings = self.standings.read().await;
        let key = standings.key_of(board, user_id)?;
        let radius = to_count(radius);
        let position = standings.position_of(board, key);
        let start = position.saturating_sub(radius);
        let before = position - start;
        Some(build_page(&standings, board, start, before + 1 + radius, self.version()))
    }
}

fn to_count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Ranks `count` entries from `position` (one snapshot, under the lock;
/// `version` is read under the same lock, so it names this snapshot).
fn build_page(standings: &Standings, board: Board, position: usize, count: usize, version: u64) -> Page {
    let mut keys = standings.slice(board, position, count + 1);
    let has_more = keys.len() > count;
    keys.truncate(count);
    let total_players = standings.len() as i64;
    let Some(first) = keys.first() else {
        return Page { board, entries: Vec::new(), total_players, next_offset: None, next_cursor: None, version };
    };
    let first_rank = standings.rank_of_score(board, first.score);
    let scores: Vec<i64> = keys.iter().map(|k| k.score).collect();
    let ranks = assign_ranks(first_rank, position as i64, &scores);
    let last = keys.last().copied().unwrap_or(*first);
    let entries: Vec<RankedKey> = keys.into_iter().zip(ranks).map(|(key, rank)| RankedKey { rank, key }).collect();
    Page {
        board,
        total_players,
        next_offset: has_more.then_some((position + entries.len()) as i64),
        next_cursor: has_more.then_some(Cursor { board, after: last }),
        entries,
        version,
    }
}

/// Competition ranks for a contiguous run of a board.
///
/// `first_rank` is the rank of the first entry (1 + players with a strictly
/// greater score) and `first_position` its 0-based position. An entry whose
/// score equals the previous one shares its rank; any other entry has only
/// strictly greater scores before it, so its rank is its position + 1.
pub fn assign_ranks(first_rank: i64, first_position: i64, scores: &[i64]) -> Vec<i64> {
    let mut ranks: Vec<i64> = Vec::with_capacity(scores.len());
    for (i, score) in scores.iter().enumerate() {
        let rank = match i {
            0 => first_rank,
            _ if scores[i - 1] == *score => ranks[i - 1],
            _ => first_position + i as i64 + 1,
        };
        ranks.push(rank);
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_a_rank_and_the_next_rank_skips() {
        assert_eq!(assign_ranks(1, 0, &[100, 90, 90, 80]), [1, 2, 2, 4]);
        assert_eq!(assign_ranks(1, 0, &[50, 40, 40, 40, 10]), [1, 2, 2, 2, 5]);
    }

    #[test]
    fn a_page_that_starts_inside_a_tie_keeps_the_tie_rank() {
        // Board 50, 40, 40, 40, 10 split in pages of 3: the second page
        // starts at position 3 with the last 40.
        assert_eq!(assign_ranks(2, 3, &[40, 10]), [2, 5]);
    }

    #[test]
    fn a_later_page_continues_instead_of_restarting_at_one() {
        assert_eq!(assign_ranks(11, 10, &[5, 4, 3]), [11, 12, 13]);
    }

    fn engine_with(scores: &[(i64, i64)]) -> RankEngine {
        let mut standings = Standings::new();
        for (i, (id, score)) in scores.iter().enumerate() {
            standings.apply(Standing { id: *id, best: *score, best_at: i as i64, total: *score, plays: 1 });
        }
        RankEngine { standings: Arc::new(RwLock::new(standings)), version: Arc::default() }
    }

    #[tokio::test]
    async fn pages_cursors_and_windows() {
        let engine = engine_with(&[(1, 50), (2, 40), (3, 40), (4, 40), (5, 10)]);
        let first = engine.page_at_offset(Board::Best, 0, 3).await;
        let ranks: Vec<(i64, i64)> = first.entries.iter().map(|e| (e.rank, e.key.id)).collect();
        assert_eq!(ranks, [(1, 1), (2, 2), (2, 3)]);
        assert_eq!((first.total_players, first.next_offset), (5, Some(3)));

        let second = engine.page_after(first.next_cursor.unwrap(), 3).await;
        let ranks: Vec<(i64, i64)> = second.entries.iter().map(|e| (e.rank, e.key.id)).collect();
        assert_eq!(ranks, [(2, 4), (5, 5)]);
        assert!(second.next_cursor.is_none() && second.next_offset.is_none());

        let around = engine.around(Board::Total, 3, 1).await.unwrap();
        assert_eq!(around.user_ids(), [2, 3, 4]);
        assert_eq!(around.next_offset, Some(4));
        assert!(engine.around(Board::Best, 99, 1).await.is_none());
        assert!(engine.page_at_offset(Board::Best, 10, 3).await.entries.is_empty());
    }
}
