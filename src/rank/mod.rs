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
//! back. The engine never writes the database: it is a cache of it, warmed
//! at start and updated after each committed post.

mod database;
mod health;
mod key;
mod local;
mod redis;
mod source;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use self::database::DatabaseSource;
use self::health::RedisHealth;
pub use self::health::SharedState;
use self::local::{LocalBoards, LocalSource};
use self::redis::RedisSource;
use self::source::{BoardSource, Slice, SliceStart};
use crate::background::Background;
use crate::domain::{Board, BoardKey, Cursor};
use crate::redis::{RedisClient, RedisError};
use crate::store::{Standing, Store, StoreResult, UserRow};

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

#[derive(Clone)]
pub struct RankEngine {
    /// The in-process index, used only without Redis.
    local: LocalSource,
    /// Bumped on every change to the local index, so that caches of pages
    /// can tell whether they are still exact.
    version: Arc<AtomicU64>,
    /// The boards in Redis shared by all instances, when configured.
    shared: Option<Arc<Shared>>,
    /// Reads while Redis is unusable.
    database: DatabaseSource,
    /// Where warm-ups and rebuilds read from.
    store: Store,
}

/// The boards in Redis and whether they can be trusted right now.
struct Shared {
    redis: RedisSource,
    health: RedisHealth,
}

/// The source a read goes to.
enum Source<'a> {
    Local(&'a LocalSource),
    Redis(&'a Arc<Shared>),
    Database,
}

/// Runs one read on the source the engine picks; a Redis failure degrades
/// the engine and the read is answered by the database instead. The one
/// place the engine chooses where an answer comes from.
macro_rules! dispatch {
    ($engine:expr, |$source:ident| $read:expr) => {{
        let engine = $engine;
        match engine.source() {
            Source::Local($source) => match $read.await {
                Ok(answer) => Ok(answer),
                Err(never) => match never {},
            },
            Source::Redis(shared) => {
                let $source = &shared.redis;
                match $read.await {
                    Ok(answer) => Ok(answer),
                    Err(error) => {
                        engine.degrade(shared, &error);
                        let $source = &engine.database;
                        $read.await
                    }
                }
            }
            Source::Database => {
                let $source = &engine.database;
                $read.await
            }
        }
    }};
}

impl RankEngine {
    /// An engine over `store`, and over Redis when a client is given (its
    /// recovery task runs on `background`).
    pub fn new(store: Store, redis: Option<Arc<RedisClient>>, background: Background) -> Self {
        Self {
            local: LocalSource::default(),
            version: Arc::default(),
            shared: redis.map(|client| {
                Arc::new(Shared { redis: RedisSource::new(client), health: RedisHealth::new(background) })
            }),
            database: DatabaseSource::new(store.clone()),
            store,
        }
    }

    /// Where reads go right now.
    fn source(&self) -> Source<'_> {
        match &self.shared {
            None => Source::Local(&self.local),
            Some(shared) if shared.health.is_healthy() => Source::Redis(shared),
            Some(_) => Source::Database,
        }
    }

    /// Without Redis, rebuilds the local index from the database. The write
    /// lock is held across the read: a post that commits before the read is
    /// in it, and one that commits after waits here and is recorded
    /// afterwards. With Redis, rebuilds the shared boards when
    /// `rebuild_shared` (after an initialize) or when they are not built
    /// (posts meanwhile are replayed from their change log); Redis trouble
    /// never fails this: reads go to the database and recovery runs in the
    /// background.
    pub async fn warm_up(&self, rebuild_shared: bool) -> StoreResult<WarmUp> {
        let started = Instant::now();
        let Some(shared) = &self.shared else {
            let mut boards = self.local.boards.write().await;
            let rows = self.store.board_standings().await?;
            let read = started.elapsed();
            *boards = LocalBoards::from_standings(&rows);
            self.version.fetch_add(1, Ordering::Release);
            let elapsed = started.elapsed();
            tracing::debug!(
                read_ms = read.as_millis() as u64,
                build_ms = (elapsed - read).as_millis() as u64,
                "warm-up"
            );
            return Ok(WarmUp { players: rows.len(), elapsed });
        };
        if !rebuild_shared && shared.redis.is_ready().await.unwrap_or(false) {
            self.check_shared().await;
            let mut conn = self.store.conn().await?;
            let players = self.store.board_players(&mut conn).await?;
            return Ok(WarmUp { players: usize::try_from(players).unwrap_or(0), elapsed: started.elapsed() });
        }
        let since = shared.redis.change_seq().await;
        let rows = self.store.board_standings().await?;
        let outcome = match since {
            Ok(since) => shared.redis.rebuild(&rows, since).await,
            Err(error) => Err(error),
        };
        match outcome {
            Ok(()) => self.check_shared().await,
            Err(error) => self.degrade(shared, &error),
        }
        Ok(WarmUp { players: rows.len(), elapsed: started.elapsed() })
    }

    /// Whether reads go to Redis right now.
    pub fn shared_state(&self) -> SharedState {
        match &self.shared {
            None => SharedState::Disabled,
            Some(shared) if shared.health.is_healthy() => SharedState::Ok,
            Some(_) => SharedState::Degraded,
        }
    }

    /// Checks that the shared boards are still built (a flushed or restarted
    /// Redis has lost them); called every second by a background task.
    pub async fn check_shared(&self) {
        let Some(shared) = &self.shared else { return };
        match shared.redis.is_ready().await {
            Ok(true) => shared.health.mark_healthy(),
            Ok(false) => self.degrade(shared, &RedisError::NotReady),
            Err(error) => self.degrade(shared, &error),
        }
    }

    /// Sends reads to the database and starts the recovery: rebuild the
    /// boards from the database whenever Redis answers without them.
    fn degrade(&self, shared: &Arc<Shared>, error: &RedisError) {
        let engine = self.clone();
        let recovering = Arc::clone(shared);
        shared.health.degrade(error, async move {
            loop {
                match recovering.redis.is_ready().await {
                    Ok(true) => break,
                    Ok(false) => {
                        if let Err(error) = engine.rebuild_shared(&recovering).await {
                            tracing::warn!(%error, "rebuilding the boards in Redis failed");
                        }
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            recovering.health.recovered();
        });
    }

    async fn rebuild_shared(&self, shared: &Shared) -> anyhow::Result<()> {
        let since = shared.redis.change_seq().await?;
        let rows = self.store.board_standings().await?;
        shared.redis.rebuild(&rows, since).await?;
        Ok(())
    }

    /// Records players' states after a committed score post.
    pub async fn record(&self, users: &[UserRow]) {
        match &self.shared {
            None => {
                let mut boards = self.local.boards.write().await;
                let mut changed = false;
                for user in users {
                    changed |= boards.apply(&Standing::of(user));
                }
                if changed {
                    self.version.fetch_add(1, Ordering::Release);
                }
            }
            // Recorded even while degraded: the change log feeds the rebuild.
            Some(shared) => {
                for user in users {
                    if let Err(error) = shared.redis.record(&Standing::of(user)).await {
                        self.degrade(shared, &error);
                    }
                }
            }
        }
    }

    /// Changes so far to the local index; equal versions mean identical
    /// local boards (with Redis it never moves, which is why pages are not
    /// cached then).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Ranks of the scores these rows show (so a profile's rank matches its
    /// own numbers even if the player posted a moment later).
    pub async fn ranks_of(&self, users: &[&UserRow]) -> StoreResult<Vec<UserRanks>> {
        let scores: Vec<(Board, i64)> = users
            .iter()
            .filter(|u| u.play_count > 0)
            .flat_map(|u| [(Board::Best, u.best_score), (Board::Total, u.total_score)])
            .collect();
        let ranks = dispatch!(self, |source| source.ranks_of_scores(&scores))?;
        let mut pairs = ranks.chunks(2);
        Ok(users
            .iter()
            .map(|user| {
                // Only players were asked about, so only they take a pair.
                let pair = if user.play_count > 0 { pairs.next() } else { None };
                match pair {
                    Some([best, total]) => UserRanks { best: Some(*best), total: Some(*total) },
                    _ => UserRanks::default(),
                }
            })
            .collect())
    }

    /// `count` entries from `start` plus one more, to tell whether there is
    /// more; read at one version (the local one is read under the same lock
    /// as the slice by taking it before and after: equal means unchanged).
    async fn slice(&self, board: Board, start: SliceStart, count: usize) -> StoreResult<(Option<Slice>, u64)> {
        loop {
            let version = self.version();
            let slice = dispatch!(self, |source| source.slice(board, start, count + 1))?;
            if self.version() == version {
                return Ok((slice, version));
            }
        }
    }

    /// `limit` entries from position `offset`.
    pub async fn page_at_offset(&self, board: Board, offset: i64, limit: i64) -> StoreResult<Page> {
        let count = to_count(limit);
        let start = SliceStart::Offset(usize::try_from(offset).unwrap_or(usize::MAX));
        let (slice, version) = self.slice(board, start, count).await?;
        Ok(page_of(board, slice, count, version))
    }

    /// `limit` entries after the cursor's key.
    pub async fn page_after(&self, cursor: Cursor, limit: i64) -> StoreResult<Page> {
        let count = to_count(limit);
        let (slice, version) = self.slice(cursor.board, SliceStart::After(cursor.after), count).await?;
        Ok(page_of(cursor.board, slice, count, version))
    }

    /// Up to `radius` entries either side of a player; `None` when the
    /// player is not on the board.
    pub async fn around(&self, board: Board, user_id: i64, radius: i64) -> StoreResult<Option<Page>> {
        let radius = to_count(radius);
        let start = SliceStart::Around { id: user_id, radius };
        let (slice, version) = self.slice(board, start, 2 * radius + 1).await?;
        let Some(slice) = slice else { return Ok(None) };
        // The window is `radius` either side of the player: "more" means
        // more after the window.
        let Some(me) = slice.keys.iter().position(|key| key.id == user_id) else { return Ok(None) };
        Ok(Some(page_of(board, Some(slice), me + 1 + radius, version)))
    }
}

/// A page of `count` entries from a slice that read one more.
fn page_of(board: Board, slice: Option<Slice>, count: usize, version: u64) -> Page {
    let empty = |total: usize| Page {
        board,
        entries: Vec::new(),
        total_players: total as i64,
        next_offset: None,
        next_cursor: None,
        version,
    };
    let Some(mut slice) = slice else { return empty(0) };
    let has_more = slice.keys.len() > count;
    slice.keys.truncate(count);
    let Some(last) = slice.keys.last().copied() else { return empty(slice.total) };
    let scores: Vec<i64> = slice.keys.iter().map(|k| k.score).collect();
    let ranks = assign_ranks(slice.first_rank, slice.position as i64, &scores);
    let entries = slice.keys.len();
    Page {
        board,
        entries: slice.keys.into_iter().zip(ranks).map(|(key, rank)| RankedKey { rank, key }).collect(),
        total_players: slice.total as i64,
        next_offset: has_more.then_some((slice.position + entries) as i64),
        next_cursor: has_more.then_some(Cursor { board, after: last }),
        version,
    }
}

fn to_count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
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
