//! The rank engine: competition ranks, pages and windows for every board.
//!
//! Every endpoint that shows a rank goes through this one interface. Three
//! sources can answer ([`source::BoardSource`]): the in-process index
//! ([`local`], a single instance without Redis), sorted sets in Redis
//! ([`redis`], shared by every instance), and the database's board indexes
//! ([`database`], while Redis is down, empty or being rebuilt: slower, and
//! exact, which an in-process fallback could not be as it would miss the
//! other instances' posts). [`RankEngine::source`] picks one per read, in
//! one place; a [`health::RedisHealth`] owns the recovery that brings Redis
//! back. Custom boards are held for their current period only; ended
//! periods are always read from the database. The engine never writes the
//! database: it is a cache of it, warmed at start and updated after each
//! committed post.

mod database;
mod health;
mod key;
mod local;
mod picked;
mod record;
mod redis_source;
mod shared_upkeep;
mod source;
#[cfg(test)]
mod tests;
mod warm_up;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use self::database::DatabaseSource;
use self::health::RedisHealth;
pub use self::health::SharedState;
pub use self::local::EntryChange;
use self::local::LocalSource;
use self::picked::Picked;
use self::redis_source::RedisSource;
use self::source::{BoardSource, Slice, SliceRead, SliceStart};
pub use self::source::{Entry, Ranked, ScoreRank};
use crate::background::Background;
use crate::boards::Registry;
use crate::domain::{Board, BoardKey, BoardPeriod, Cursor, Operator, Timestamp, Walk};
use crate::redis::RedisClient;
use crate::store::{MiddleRead, Store, StoreResult, UserRow};
use sqlx::AnyConnection;

/// A player's rank on each built-in board; `None` while they have not played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserRanks {
    pub best: Option<ScoreRank>,
    pub total: Option<ScoreRank>,
}

/// An entry of a page with its competition rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedEntry {
    pub rank: i64,
    pub key: BoardKey,
    /// The metadata of the post that set the score (custom boards).
    pub metadata: Option<Arc<str>>,
}

/// A slice of a board with its ranks and where to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub board: BoardPeriod,
    pub entries: Vec<RankedEntry>,
    pub total_players: i64,
    /// Position after the last entry, when there is more.
    pub next_offset: Option<i64>,
    /// Keyset cursor after the last entry, when there is more.
    pub next_cursor: Option<Cursor>,
    /// The engine's version this page was read at (see [`RankEngine::version`]).
    pub version: u64,
    /// The source's name for the board's state (see [`Slice::stamp`]).
    pub board_stamp: Option<Arc<str>>,
}

/// Where a page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageStart {
    /// At this 0-based position.
    Offset(i64),
    /// After a cursor's key, in the walk the cursor carries.
    After { key: BoardKey, walk: Option<Walk> },
}

/// What a conditional page read found.
#[derive(Debug)]
pub enum PageRead {
    /// The board is still at the stamp the caller holds.
    Unchanged,
    Read(Page),
}

impl Page {
    pub fn user_ids(&self) -> Vec<i64> {
        self.entries.iter().map(|e| e.key.id).collect()
    }
}

/// What a warm-up did, for the log and the benchmarks.
#[derive(Debug, Clone, Copy)]
pub struct WarmUp {
    /// Entries loaded: players on the built-in boards and entries of the
    /// custom boards' current periods.
    pub entries: usize,
    pub elapsed: Duration,
}

#[derive(Clone)]
pub struct RankEngine {
    /// The in-process index, used only without Redis.
    local: LocalSource,
    /// Bumped on every change to the local index, so that caches of pages
    /// can tell whether they are still exact.
    version: Arc<AtomicU64>,
    /// Bumped by every rename made on this instance (the display names a
    /// page shows changed, though no entry did).
    renames: Arc<AtomicU64>,
    /// The boards in Redis shared by all instances, when configured.
    shared: Option<Arc<Shared>>,
    /// Reads while Redis is unusable, and of ended periods.
    database: DatabaseSource,
    /// Where warm-ups and rebuilds read from.
    store: Store,
    /// The custom boards, for their current periods.
    boards: Arc<Registry>,
    /// Gaps in the change numbers Redis has recorded, by board period:
    /// where the numbers stopped and since when (see `heal_change_gaps`).
    gaps: Arc<std::sync::Mutex<HashMap<BoardPeriod, (u64, Instant)>>>,
}

/// The boards in Redis and whether they can be trusted right now.
struct Shared {
    redis: RedisSource,
    health: RedisHealth,
}

/// A custom board's current period as the database has it: every change
/// up to `changes` is in `entries`.
struct CurrentEntries {
    board: BoardPeriod,
    changes: i64,
    entries: Vec<EntryChange>,
}

/// What failed on Redis: a read loses nothing; a write may be missing
/// from Redis now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failed {
    Read,
    Write,
}

/// The source a read goes to.
enum Source<'a> {
    Local(&'a LocalSource),
    Redis(&'a Arc<Shared>),
    Database,
}

impl RankEngine {
    /// An engine over `store`, and over Redis when a client is given (its
    /// recovery task runs on `background`).
    pub fn new(store: Store, redis: Option<Arc<RedisClient>>, boards: Arc<Registry>, background: Background) -> Self {
        Self {
            local: LocalSource::default(),
            version: Arc::default(),
            renames: Arc::default(),
            shared: redis.map(|client| {
                Arc::new(Shared { redis: RedisSource::new(client), health: RedisHealth::new(background) })
            }),
            database: DatabaseSource::new(store.for_board_reads()),
            store,
            boards,
            gaps: Arc::default(),
        }
    }

    /// Whether `board` is a period the live sources hold: every built-in,
    /// and the current period of a custom board. Ended periods are read
    /// from the database.
    fn is_live(&self, board: &BoardPeriod) -> bool {
        match board.board {
            Board::Best | Board::Total => true,
            Board::Custom(number) => self
                .boards
                .by_number(number)
                .is_some_and(|custom| custom.period_at(Timestamp::now()).index == board.period),
        }
    }

    /// Whether walks of `board` leave out entries changed since they began:
    /// on `latest` boards, the only ones where an entry can move down past
    /// a walker's cursor with every post.
    fn walks_skip_changes(&self, board: Board) -> bool {
        match board {
            Board::Best | Board::Total => false,
            Board::Custom(number) => {
                self.boards.by_number(number).is_some_and(|custom| custom.spec.operator == Operator::Latest)
            }
        }
    }

    /// Where a read of these boards goes right now.
    /// The source that answers a read of `boards` (see [`Picked`]).
    fn pick<'a>(&'a self, boards: impl IntoIterator<Item = &'a BoardPeriod>) -> Picked<'a> {
        Picked { engine: self, source: self.source(boards) }
    }

    fn source<'a>(&'a self, boards: impl IntoIterator<Item = &'a BoardPeriod>) -> Source<'a> {
        if !boards.into_iter().all(|board| self.is_live(board)) {
            return Source::Database;
        }
        match &self.shared {
            None => Source::Local(&self.local),
            Some(shared) if shared.health.is_healthy() => Source::Redis(shared),
            Some(_) => Source::Database,
        }
    }

    /// Changes so far to the local index; equal versions mean identical
    /// local boards (with Redis it never moves, which is why pages are not
    /// cached then).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Renames made on this instance so far (with Redis, every instance's
    /// move the shared names version instead).
    pub fn renames(&self) -> u64 {
        self.renames.load(Ordering::Acquire)
    }

    /// Ranks on the built-in boards of the scores these rows show (so a
    /// profile's rank matches its own numbers even if the player posted a
    /// moment later).
    pub async fn ranks_of(&self, users: &[&UserRow]) -> StoreResult<Vec<UserRanks>> {
        let ranks = self.ranks_of_keys(&builtin_scores(users)).await?;
        Ok(pair_ranks(users, &ranks))
    }

    /// [`Self::ranks_of`] for the score writer, inside its transaction (see
    /// [`Self::ranks_of_keys_on`]).
    pub async fn ranks_of_on(&self, conn: &mut AnyConnection, users: &[&UserRow]) -> StoreResult<Vec<UserRanks>> {
        let ranks = self.ranks_of_keys_on(conn, &builtin_scores(users)).await?;
        Ok(pair_ranks(users, &ranks))
    }

    /// [`Self::ranks_of_keys`] for the score writer: when the database
    /// answers, it counts on the writer's own connection, inside its
    /// transaction, never on the board-read pool (see
    /// `Store::for_board_reads`), so a crowd of anonymous board reads while
    /// Redis is down can slow a batch of posts but never fail it.
    pub async fn ranks_of_keys_on(
        &self,
        conn: &mut AnyConnection,
        keys: &[(BoardPeriod, BoardKey)],
    ) -> StoreResult<Vec<ScoreRank>> {
        if !keys.is_empty() && matches!(self.source(keys.iter().map(|(board, _)| board)), Source::Database) {
            return database::key_ranks(&self.store, conn, keys, MiddleRead::CachedOnly).await;
        }
        self.ranks_of_keys(keys).await
    }

    /// For each (board, key): its competition rank (1 + entries strictly
    /// better by score and subscores) and the board's size.
    pub async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> StoreResult<Vec<ScoreRank>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.pick(keys.iter().map(|(board, _)| board)).ranks_of_keys(keys).await
    }

    /// `count` entries from `start` plus one more, to tell whether there is
    /// more; read at one version (the local one is read before and after
    /// the slice: equal means no change happened in between).
    async fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> StoreResult<(Option<Slice>, u64)> {
        loop {
            let version = self.version();
            let slice = self.pick([&board]).slice(board, start, count + 1).await?;
            if self.version() == version {
                return Ok((slice, version));
            }
        }
    }

    /// `limit` entries from `start`.
    pub async fn page(&self, board: BoardPeriod, start: PageStart, limit: i64) -> StoreResult<Page> {
        let count = to_count(limit);
        let start = self.slice_start(board, start);
        let (slice, version) = self.slice(board, start, count).await?;
        Ok(self.page_of(board, start, slice, count, version))
    }

    /// With Redis, `board`'s stamp there (what kept pages are checked
    /// against; any change to the board's answers moves it), in one round
    /// trip. `None` without Redis, where the database answers `board`
    /// (an ended period, Redis degraded), or when the read fails.
    pub async fn shared_stamp(&self, board: BoardPeriod) -> Option<Arc<str>> {
        let Source::Redis(shared) = self.source([&board]) else { return None };
        shared.redis.stamp(board).await.ok().flatten()
    }

    /// `limit` entries from `start`, unless the board is still at `known`
    /// (the [`Page::board_stamp`] of a page the caller keeps): in shared
    /// mode one round trip either way; the other sources always read.
    pub async fn page_unless(
        &self,
        board: BoardPeriod,
        start: PageStart,
        limit: i64,
        known: &str,
    ) -> StoreResult<PageRead> {
        let count = to_count(limit);
        // Read before the slice: a change meanwhile leaves the page tagged older than it is.
        let version = self.version();
        let start = self.slice_start(board, start);
        let read = self.pick([&board]).slice_unless(board, start, count + 1, known).await?;
        Ok(match read {
            SliceRead::Unchanged => PageRead::Unchanged,
            SliceRead::Read(slice) => PageRead::Read(self.page_of(board, start, slice, count, version)),
        })
    }

    /// Up to `radius` entries either side of a player; `None` when the
    /// player is not on the board.
    pub async fn around(&self, board: BoardPeriod, user_id: i64, radius: i64) -> StoreResult<Option<Page>> {
        let radius = to_count(radius);
        let start = SliceStart::Around { id: user_id, radius };
        let (slice, version) = self.slice(board, start, 2 * radius + 1).await?;
        let Some(slice) = slice else { return Ok(None) };
        // The window is `radius` either side of the player: "more" means
        // more after the window.
        let Some(me) = slice.entries.iter().position(|entry| entry.key.id == user_id) else { return Ok(None) };
        Ok(Some(page_of(board, Some(slice), me + 1 + radius, version, None)))
    }

    /// Those of `ids` who are on the board, in board order, each with its
    /// board-wide rank (a friends board).
    pub async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> StoreResult<Ranked> {
        self.pick([&board]).ranked(board, ids).await
    }
}

impl RankEngine {
    /// The slice a page starts from: a walk only where walks skip changes.
    fn slice_start(&self, board: BoardPeriod, start: PageStart) -> SliceStart {
        match start {
            PageStart::Offset(offset) => SliceStart::Offset(usize::try_from(offset).unwrap_or(usize::MAX)),
            PageStart::After { key, walk } => {
                SliceStart::After { key, walk: walk.filter(|_| self.walks_skip_changes(board.board)) }
            }
        }
    }

    /// A page from `slice`; its cursor carries the walk on: the one the
    /// page was read in, or one beginning at this read.
    fn page_of(&self, board: BoardPeriod, start: SliceStart, slice: Option<Slice>, count: usize, version: u64) -> Page {
        let walk = match start {
            _ if !self.walks_skip_changes(board.board) => None,
            SliceStart::After { walk: Some(walk), .. } => Some(walk),
            _ => slice.as_ref().and_then(|slice| slice.walk),
        };
        page_of(board, slice, count, version, walk)
    }
}

/// The built-in boards' scores of the players on them, two per player
/// (best, total), for one ranking call.
fn builtin_scores(users: &[&UserRow]) -> Vec<(BoardPeriod, BoardKey)> {
    let (best, total) = (BoardPeriod::builtin(Board::Best), BoardPeriod::builtin(Board::Total));
    let keys =
        |u: &UserRow| [(best, BoardKey::of(u.best_score, 0, u.id)), (total, BoardKey::of(u.total_score, 0, u.id))];
    users.iter().filter(|u| u.is_listed()).flat_map(|u| keys(u)).collect()
}

/// Each player's ranks from the answer to [`builtin_scores`].
fn pair_ranks(users: &[&UserRow], ranks: &[ScoreRank]) -> Vec<UserRanks> {
    let mut pairs = ranks.chunks(2);
    users
        .iter()
        .map(|user| {
            // Only players on the boards were asked about, so only they take a pair.
            let pair = if user.is_listed() { pairs.next() } else { None };
            match pair {
                Some([best, total]) => UserRanks { best: Some(*best), total: Some(*total) },
                _ => UserRanks::default(),
            }
        })
        .collect()
}

/// A page of `count` entries from a slice that read one more (or stopped
/// early, see [`Skipped::stopped_after`]).
fn page_of(board: BoardPeriod, slice: Option<Slice>, count: usize, version: u64, walk: Option<Walk>) -> Page {
    let board_stamp = slice.as_ref().and_then(|slice| slice.stamp.clone());
    let empty = |total: usize| Page {
        board,
        entries: Vec::new(),
        total_players: total as i64,
        next_offset: None,
        next_cursor: None,
        version,
        board_stamp: board_stamp.clone(),
    };
    let Some(mut slice) = slice else { return empty(0) };
    let stopped_after = slice.skipped.as_ref().and_then(|skipped| skipped.stopped_after);
    let has_more = slice.entries.len() > count || stopped_after.is_some();
    slice.entries.truncate(count);
    let total = slice.total;
    let (ranks, next_offset) = match slice.skipped {
        Some(mut skipped) => {
            skipped.ranks.truncate(count);
            let last = skipped.positions.get(slice.entries.len().wrapping_sub(1)).copied();
            (skipped.ranks, last.map_or(slice.position, |last| last + 1))
        }
        None => {
            // Entries share a rank when equal on the score and subscores.
            let ranked: Vec<_> = slice.entries.iter().map(|entry| (entry.key.score, entry.key.subscores)).collect();
            (assign_ranks(slice.first_rank, slice.position as i64, &ranked), slice.position + slice.entries.len())
        }
    };
    let after = match (stopped_after, slice.entries.last()) {
        (Some(stopped), _) => stopped,
        (None, Some(last)) => last.key,
        (None, None) => return empty(total),
    };
    Page {
        board,
        entries: slice
            .entries
            .into_iter()
            .zip(ranks)
            .map(|(entry, rank)| RankedEntry { rank, key: entry.key, metadata: entry.metadata })
            .collect(),
        total_players: total as i64,
        next_offset: has_more.then_some(next_offset as i64),
        next_cursor: has_more.then_some(Cursor { board, after, walk }),
        version,
        board_stamp,
    }
}

fn to_count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Competition ranks for a contiguous run of a board.
///
/// `first_rank` is the rank of the first entry (1 + players strictly
/// better) and `first_position` its 0-based position; `scores` are what
/// ranks are taken by (the score, and subscores where the board has them).
/// An entry equal to the previous one shares its rank; any other entry has
/// only strictly better ones before it, so its rank is its position + 1.
pub fn assign_ranks<T: PartialEq>(first_rank: i64, first_position: i64, scores: &[T]) -> Vec<i64> {
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
