//! The rank engine: competition ranks, pages and windows for both boards.
//!
//! Every endpoint that shows a rank goes through this one interface. It
//! answers from an in-process order-statistic index ([`Standings`]) in
//! O(log n) per rank and O(log n + page) per page, whatever the depth. The
//! index is warmed from the database at start (and after an initialize) and
//! updated on the same code path as a score post; the database stays the
//! source of truth. It never writes anything.
//!
//! With `REDIS_URL`, the board lives in Redis instead ([`RedisBoard`]),
//! shared by every instance. While Redis is down, empty or being rebuilt,
//! reads go straight to the database's board indexes (slower, and exact:
//! an in-process index cannot be, as it would miss the other instances'
//! posts), and a background task rebuilds Redis when it comes back.
//! Without Redis, each instance sees only its own posts, so run one
//! instance per database.

mod shared;
mod standings;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::RwLock;

pub use self::shared::RedisBoard;
use self::shared::{SharedError, SharedSlice, SliceStart};
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

#[derive(Clone)]
pub struct RankEngine {
    /// The in-process index, used only without Redis. Async lock: a warm-up
    /// holds it across the database read, so that no post recorded
    /// meanwhile is lost (see [`RankEngine::warm_up`]).
    standings: Arc<RwLock<Standings>>,
    /// Bumped on every change to the local standings, so caches of pages
    /// can tell whether they are still exact.
    version: Arc<AtomicU64>,
    /// The board in Redis shared by all instances, when configured.
    shared: Option<Arc<Shared>>,
    /// Where warm-ups and rebuilds read from.
    store: Store,
}

/// The Redis board and whether it can be trusted right now.
struct Shared {
    board: Arc<RedisBoard>,
    /// False while Redis is down, empty or being rebuilt: reads go to the
    /// database.
    healthy: AtomicBool,
    /// One recovery task at a time.
    recovering: AtomicBool,
}

/// The state of the shared board, for `/healthz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedState {
    Disabled,
    Ok,
    Degraded,
}

impl SharedState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Ok => "ok",
            Self::Degraded => "degraded",
        }
    }
}

impl RankEngine {
    pub fn new(store: Store, shared: Option<Arc<RedisBoard>>) -> Self {
        Self {
            standings: Arc::default(),
            version: Arc::default(),
            shared: shared.map(|board| {
                Arc::new(Shared { board, healthy: AtomicBool::new(false), recovering: AtomicBool::new(false) })
            }),
            store,
        }
    }

    /// Without Redis, rebuilds the local index from the database. The write
    /// lock is held across the read: a post that commits before the read is
    /// in it, and one that commits after waits here and is recorded
    /// afterwards. With Redis, rebuilds the shared board when
    /// `rebuild_shared` (after an initialize) or when it is not built (posts
    /// meanwhile are replayed from its change log); Redis trouble never
    /// fails this: reads go to the database and recovery runs in the
    /// background.
    pub async fn warm_up(&self, rebuild_shared: bool) -> Result<WarmUp, sqlx::Error> {
        let started = Instant::now();
        let Some(shared) = &self.shared else {
            let mut standings = self.standings.write().await;
            let rows = self.store.board_standings().await?;
            let read = started.elapsed();
            *standings = Standings::from_standings(&rows);
            self.version.fetch_add(1, Ordering::Release);
            let elapsed = started.elapsed();
            tracing::debug!(
                read_ms = read.as_millis() as u64,
                build_ms = (elapsed - read).as_millis() as u64,
                "warm-up"
            );
            return Ok(WarmUp { players: rows.len(), elapsed });
        };
        if !rebuild_shared && shared.board.is_ready().await.unwrap_or(false) {
            self.check_shared().await;
            let mut conn = self.store.conn().await?;
            let players = self.store.board_players(&mut conn).await?;
            return Ok(WarmUp { players: usize::try_from(players).unwrap_or(0), elapsed: started.elapsed() });
        }
        let since = shared.board.change_seq().await;
        let rows = self.store.board_standings().await?;
        let outcome = match since {
            Ok(since) => shared.board.rebuild(&rows, since).await,
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
            Some(shared) if shared.healthy.load(Ordering::Acquire) => SharedState::Ok,
            Some(_) => SharedState::Degraded,
        }
    }

    /// Checks that the shared board is still built (a flushed or restarted
    /// Redis is not); called every second by a background task.
    pub async fn check_shared(&self) {
        let Some(shared) = &self.shared else { return };
        match shared.board.is_ready().await {
            Ok(true) => {
                if !shared.healthy.swap(true, Ordering::AcqRel) {
                    tracing::info!("shared board in Redis is ready; serving from it");
                }
            }
            Ok(false) => self.degrade(shared, &SharedError::NotReady),
            Err(error) => self.degrade(shared, &error),
        }
    }

    /// Sends reads to the database and starts one recovery task.
    fn degrade(&self, shared: &Arc<Shared>, error: &SharedError) {
        if shared.healthy.swap(false, Ordering::AcqRel) {
            tracing::warn!(%error, "shared board unavailable; serving from the database");
        }
        if shared.recovering.swap(true, Ordering::AcqRel) {
            return;
        }
        let engine = self.clone();
        let shared = Arc::clone(shared);
        tokio::spawn(async move {
            loop {
                match shared.board.is_ready().await {
                    Ok(true) => break,
                    Ok(false) => {
                        if let Err(error) = engine.rebuild_shared(&shared).await {
                            tracing::warn!(%error, "rebuilding the shared board failed");
                        }
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            shared.healthy.store(true, Ordering::Release);
            shared.recovering.store(false, Ordering::Release);
            tracing::info!("shared board rebuilt; serving from Redis again");
        });
    }

    async fn rebuild_shared(&self, shared: &Shared) -> anyhow::Result<()> {
        let since = shared.board.change_seq().await?;
        let rows = self.store.board_standings().await?;
        shared.board.rebuild(&rows, since).await?;
        Ok(())
    }

    /// The shared board if it is usable now.
    fn healthy_shared(&self) -> Option<&Arc<Shared>> {
        self.shared.as_ref().filter(|shared| shared.healthy.load(Ordering::Acquire))
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
        match &self.shared {
            None => {
                let mut standings = self.standings.write().await;
                if standings.apply(standing) {
                    self.version.fetch_add(1, Ordering::Release);
                }
            }
            // Recorded even while degraded: the change log feeds the rebuild.
            Some(shared) => {
                if let Err(error) = shared.board.record(standing).await {
                    self.degrade(shared, &error);
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
    pub async fn ranks_of(&self, users: &[&UserRow]) -> Result<Vec<UserRanks>, sqlx::Error> {
        let scores: Vec<(Board, i64)> = users
            .iter()
            .filter(|u| u.play_count > 0)
            .flat_map(|u| [(Board::Best, u.best_score), (Board::Total, u.total_score)])
            .collect();
        let ranks = self.ranks_of_scores(&scores).await?;
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

    async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> Result<Vec<i64>, sqlx::Error> {
        if let Some(shared) = self.healthy_shared() {
            match shared.board.ranks_of_scores(scores).await {
                Ok(ranks) => return Ok(ranks),
                Err(error) => self.degrade(shared, &error),
            }
        }
        if self.shared.is_some() {
            let mut conn = self.store.conn().await?;
            let above = self.store.board_players_above(&mut conn, scores).await?;
            return Ok(above.into_iter().map(|players| players + 1).collect());
        }
        let standings = self.standings.read().await;
        Ok(scores.iter().map(|(board, score)| standings.rank_of_score(*board, *score)).collect())
    }

    /// `limit` entries from position `offset`.
    pub async fn page_at_offset(&self, board: Board, offset: i64, limit: i64) -> Result<Page, sqlx::Error> {
        let position = usize::try_from(offset).unwrap_or(usize::MAX);
        if let Some(page) = self.shared_page(board, SliceStart::Offset(position), to_count(limit)).await {
            return Ok(page.unwrap_or_else(|| empty_page(board, 0, 0)));
        }
        if self.shared.is_some() {
            let page = self.database_page(board, DatabaseStart::Offset { position: offset, limit }).await?;
            return Ok(page.unwrap_or_else(|| empty_page(board, 0, 0)));
        }
        let standings = self.standings.read().await;
        Ok(build_page(&standings, board, position, to_count(limit), self.version()))
    }

    /// `limit` entries after the cursor's key.
    pub async fn page_after(&self, cursor: Cursor, limit: i64) -> Result<Page, sqlx::Error> {
        let board = cursor.board;
        if let Some(page) = self.shared_page(board, SliceStart::After(cursor.after), to_count(limit)).await {
            return Ok(page.unwrap_or_else(|| empty_page(board, 0, 0)));
        }
        if self.shared.is_some() {
            let page = self.database_page(board, DatabaseStart::After { key: cursor.after, limit }).await?;
            return Ok(page.unwrap_or_else(|| empty_page(board, 0, 0)));
        }
        let standings = self.standings.read().await;
        let position = standings.position_after(board, cursor.after);
        Ok(build_page(&standings, board, position, to_count(limit), self.version()))
    }

    /// Up to `radius` entries either side of a player; `None` when the
    /// player is not on the board.
    pub async fn around(&self, board: Board, user_id: i64, radius: i64) -> Result<Option<Page>, sqlx::Error> {
        let count = to_count(radius);
        if let Some(page) =
            self.shared_page(board, SliceStart::Around { id: user_id, radius: count }, 2 * count + 1).await
        {
            return Ok(page);
        }
        if self.shared.is_some() {
            return self.database_page(board, DatabaseStart::Around { id: user_id, radius }).await;
        }
        let standings = self.standings.read().await;
        let Some(key) = standings.key_of(board, user_id) else { return Ok(None) };
        let position = standings.position_of(board, key);
        let start = position.saturating_sub(count);
        let before = position - start;
        Ok(Some(build_page(&standings, board, start, before + 1 + count, self.version())))
    }

    /// A page read from the database's board index in one snapshot, while
    /// the shared board is unusable; `None` around a player not on the board.
    async fn database_page(&self, board: Board, start: DatabaseStart) -> Result<Option<Page>, sqlx::Error> {
        let store = &self.store;
        let mut snapshot = store.begin_read().await?;
        let conn = &mut *snapshot;
        let (position, mut keys, count) = match start {
            DatabaseStart::Offset { position, limit } => {
                (position, store.board_keys_at(conn, board, position, limit + 1).await?, limit)
            }
            DatabaseStart::After { key, limit } => {
                // Keys up to and including `key` come before, existing or not.
                let up_to = BoardKey { id: key.id.saturating_add(1), ..key };
                let position = store.board_position_of(conn, board, up_to).await?;
                (position, store.board_keys_after(conn, board, key, limit + 1).await?, limit)
            }
            DatabaseStart::Around { id, radius } => {
                let Some(key) = store.board_key_of(conn, board, id).await? else {
                    snapshot.commit().await?;
                    return Ok(None);
                };
                let mine = store.board_position_of(conn, board, key).await?;
                let position = (mine - radius).max(0);
                let count = mine - position + 1 + radius;
                (position, store.board_keys_at(conn, board, position, count + 1).await?, count)
            }
        };
        let has_more = keys.len() as i64 > count;
        keys.truncate(to_count(count));
        let total_players = store.board_players(conn).await?;
        let first_rank = match keys.first() {
            Some(first) => {
                store.board_players_above(conn, &[(board, first.score)]).await?.first().copied().unwrap_or(0) + 1
            }
            None => 0,
        };
        snapshot.commit().await?;
        let slice = SharedSlice { keys, first_rank, position: to_count(position), total: to_count(total_players) };
        Ok(Some(page_from_slice(board, slice, has_more, self.version())))
    }

    /// A page from Redis: `None` while Redis is not usable (the caller
    /// reads elsewhere), `Some(None)` for a player who is not on the board.
    async fn shared_page(&self, board: Board, start: SliceStart, count: usize) -> Option<Option<Page>> {
        let shared = self.healthy_shared()?;
        let around = match start {
            SliceStart::Around { id, radius } => Some((id, radius)),
            _ => None,
        };
        match shared.board.slice(board, start, count + 1).await {
            Ok(None) => Some(None),
            Ok(Some(mut slice)) => {
                // Around a player the window is `radius` either side: trim the
                // look-ahead so that "more" means more after the window.
                let wanted = match around {
                    Some((id, radius)) => match slice.keys.iter().position(|key| key.id == id) {
                        Some(me) => me + 1 + radius,
                        None => return Some(None),
                    },
                    None => count,
                };
                let has_more = slice.keys.len() > wanted;
                slice.keys.truncate(wanted);
                Some(Some(page_from_slice(board, slice, has_more, self.version())))
            }
            Err(error) => {
                self.degrade(shared, &error);
                None
            }
        }
    }
}

/// Which page to read from the database.
enum DatabaseStart {
    Offset { position: i64, limit: i64 },
    After { key: BoardKey, limit: i64 },
    Around { id: i64, radius: i64 },
}

fn empty_page(board: Board, total_players: i64, version: u64) -> Page {
    Page { board, entries: Vec::new(), total_players, next_offset: None, next_cursor: None, version }
}

fn page_from_slice(board: Board, slice: SharedSlice, has_more: bool, version: u64) -> Page {
    let Some(last) = slice.keys.last().copied() else { return empty_page(board, slice.total as i64, version) };
    let scores: Vec<i64> = slice.keys.iter().map(|k| k.score).collect();
    let ranks = assign_ranks(slice.first_rank, slice.position as i64, &scores);
    let count = slice.keys.len();
    Page {
        board,
        entries: slice.keys.into_iter().zip(ranks).map(|(key, rank)| RankedKey { rank, key }).collect(),
        total_players: slice.total as i64,
        next_offset: has_more.then_some((slice.position + count) as i64),
        next_cursor: has_more.then_some(Cursor { board, after: last }),
        version,
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
        return empty_page(board, total_players, version);
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

    async fn engine_with(scores: &[(i64, i64)]) -> RankEngine {
        let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
        let store = Store::connect("sqlite::memory:", 1, counter).await.unwrap();
        let engine = RankEngine::new(store, None);
        let mut standings = engine.standings.write().await;
        for (i, (id, score)) in scores.iter().enumerate() {
            standings.apply(Standing { id: *id, best: *score, best_at: i as i64, total: *score, plays: 1 });
        }
        drop(standings);
        engine
    }

    #[tokio::test]
    async fn pages_cursors_and_windows() {
        let engine = engine_with(&[(1, 50), (2, 40), (3, 40), (4, 40), (5, 10)]).await;
        let first = engine.page_at_offset(Board::Best, 0, 3).await.unwrap();
        let ranks: Vec<(i64, i64)> = first.entries.iter().map(|e| (e.rank, e.key.id)).collect();
        assert_eq!(ranks, [(1, 1), (2, 2), (2, 3)]);
        assert_eq!((first.total_players, first.next_offset), (5, Some(3)));

        let second = engine.page_after(first.next_cursor.unwrap(), 3).await.unwrap();
        let ranks: Vec<(i64, i64)> = second.entries.iter().map(|e| (e.rank, e.key.id)).collect();
        assert_eq!(ranks, [(2, 4), (5, 5)]);
        assert!(second.next_cursor.is_none() && second.next_offset.is_none());

        let around = engine.around(Board::Total, 3, 1).await.unwrap().unwrap();
        assert_eq!(around.user_ids(), [2, 3, 4]);
        assert_eq!(around.next_offset, Some(4));
        assert!(engine.around(Board::Best, 99, 1).await.unwrap().is_none());
        assert!(engine.page_at_offset(Board::Best, 10, 3).await.unwrap().entries.is_empty());
    }

    /// Random boards full of ties, some users without scores: every page,
    /// cursor page, window and rank read from the database (the engine with
    /// an unreachable Redis) equals the local index's.
    #[tokio::test]
    async fn the_database_answers_exactly_like_the_local_index() {
        use rand::{Rng, SeedableRng};
        for seed in 0..8 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
            let store = Store::connect("sqlite::memory:", 1, counter).await.unwrap();
            let users: Vec<Standing> = (1..=rng.gen_range(1..60))
                .map(|id| {
                    let plays = if rng.gen_bool(0.2) { 0 } else { rng.gen_range(1..4) };
                    let best = if plays == 0 { 0 } else { rng.gen_range(0..6) * 10 };
                    let total = if plays == 0 { 0 } else { best + rng.gen_range(0..3) * 10 };
                    Standing { id, best, best_at: rng.gen_range(0..4), total, plays }
                })
                .collect();
            for user in &users {
                let name = format!("p{}", user.id);
                sqlx::query(
                    "INSERT INTO users (id, login_name, login_key, display_name, password_hash, best_score, best_at, \
                     total_score, play_count, created_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?, ?, 0)",
                )
                .bind(user.id)
                .bind(&name)
                .bind(&name)
                .bind(&name)
                .bind(user.best)
                .bind((user.plays > 0).then_some(user.best_at))
                .bind(user.total)
                .bind(user.plays)
                .execute(store.pool())
                .await
                .unwrap();
            }
            sqlx::query("UPDATE board_stats SET players = (SELECT COUNT(*) FROM users WHERE best_at IS NOT NULL)")
                .execute(store.pool())
                .await
                .unwrap();
            let local = RankEngine::new(store.clone(), None);
            local.warm_up(false).await.unwrap();
            let unreachable = Arc::new(RedisBoard::new("redis://127.0.0.1:1", "unreachable", 1).unwrap());
            let database = RankEngine::new(store, Some(unreachable));
            assert_eq!(database.shared_state(), SharedState::Degraded);

            let same = |a: Page, b: Page| {
                (a.entries, a.total_players, a.next_offset, a.next_cursor)
                    == (b.entries, b.total_players, b.next_offset, b.next_cursor)
            };
            for board in Board::ALL {
                for limit in [1, 3, 7] {
                    let mut offset = 0;
                    let mut cursor: Option<Cursor> = None;
                    loop {
                        let expected = local.page_at_offset(board, offset, limit).await.unwrap();
                        assert!(
                            same(database.page_at_offset(board, offset, limit).await.unwrap(), expected.clone()),
                            "seed {seed} {board:?} offset {offset}"
                        );
                        if let Some(after) = cursor {
                            let by_cursor = database.page_after(after, limit).await.unwrap();
                            assert!(
                                same(by_cursor, local.page_after(after, limit).await.unwrap()),
                                "seed {seed} {board:?} cursor"
                            );
                        }
                        let Some(next) = expected.next_offset else { break };
                        offset = next;
                        cursor = expected.next_cursor;
                    }
                }
                for user in &users {
                    for radius in [0, 2] {
                        let expected = local.around(board, user.id, radius).await.unwrap();
                        let actual = database.around(board, user.id, radius).await.unwrap();
                        assert_eq!(actual.is_some(), expected.is_some(), "seed {seed} around {}", user.id);
                        if let (Some(actual), Some(expected)) = (actual, expected) {
                            assert!(same(actual, expected), "seed {seed} {board:?} around {}", user.id);
                        }
                    }
                }
            }
            let rows: Vec<UserRow> = users
                .iter()
                .map(|s| UserRow {
                    id: s.id,
                    login_name: String::new(),
                    display_name: String::new(),
                    best_score: s.best,
                    best_at: None,
                    best_score_id: None,
                    total_score: s.total,
                    play_count: s.plays,
                    created_at: crate::domain::Timestamp::from_millis(0),
                })
                .collect();
            let refs: Vec<&UserRow> = rows.iter().collect();
            assert_eq!(database.ranks_of(&refs).await.unwrap(), local.ranks_of(&refs).await.unwrap(), "seed {seed}");
        }
    }
}
