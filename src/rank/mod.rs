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
mod redis_source;
mod source;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use self::database::DatabaseSource;
use self::health::RedisHealth;
pub use self::health::SharedState;
pub use self::local::EntryChange;
use self::local::{LocalBoards, LocalSource};
use self::picked::Picked;
use self::redis_source::{builtin_members, LoggedChange, Numbering, RebuildEntry, Record, RedisSource};
use self::source::{BoardSource, Slice, SliceRead, SliceStart};
pub use self::source::{Entry, Ranked, ScoreRank};
use crate::background::Background;
use crate::boards::{CustomBoard, Registry};
use crate::domain::{Board, BoardKey, BoardPeriod, Cursor, Operator, Ranking, Timestamp, Walk};
use crate::redis::{RedisClient, RedisError};
use crate::store::{MiddleRead, Standing, Store, StoreResult, UserRow};
use futures_util::TryStreamExt as _;
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

    /// Loads the boards from the database: without Redis into the local
    /// index (the write lock is held across the read: a post that commits
    /// before the read is in it, and one that commits after waits here and
    /// is recorded afterwards); with Redis, rebuilds the boards there when
    /// `rebuild_shared` (after an initialize) or when they are not built
    /// (posts meanwhile are replayed from their change logs). Redis trouble
    /// never fails this: reads go to the database and recovery runs in the
    /// background.
    pub async fn warm_up(&self, rebuild_shared: bool) -> StoreResult<WarmUp> {
        let started = Instant::now();
        let Some(shared) = &self.shared else {
            let mut boards = self.local.boards.write().await;
            let rows = self.store.board_standings().await?;
            let read = started.elapsed();
            let mut local = LocalBoards::from_standings(&rows);
            let mut entries = rows.len();
            for custom in self.boards.all_ranked() {
                let current = self.current_entries(&custom).await?;
                entries += current.entries.len();
                local.load_period(current.board, current.changes, &current.entries);
            }
            *boards = local;
            self.version.fetch_add(1, Ordering::Release);
            let elapsed = started.elapsed();
            tracing::debug!(
                read_ms = read.as_millis() as u64,
                build_ms = (elapsed - read).as_millis() as u64,
                "warm-up"
            );
            return Ok(WarmUp { entries, elapsed });
        };
        let mut entries = 0;
        for group in self.groups() {
            let ready = shared.redis.ready(&[group]).await.ok().and_then(|r| r.first().copied()).unwrap_or(false);
            if ready && !rebuild_shared {
                continue;
            }
            match self.rebuild_group(shared, group).await {
                Ok(rebuilt) => entries += rebuilt,
                Err(error) => {
                    tracing::warn!(%error, %group, "rebuilding a board in Redis failed");
                    self.degrade(shared, &RedisError::NotReady, Failed::Read);
                }
            }
        }
        self.check_shared().await;
        Ok(WarmUp { entries, elapsed: started.elapsed() })
    }

    /// The built-in group and every custom board.
    fn groups(&self) -> Vec<Board> {
        std::iter::once(Board::Best).chain(self.boards.all_ranked().iter().map(|custom| custom.spec.board())).collect()
    }

    /// The entries of a custom board's current period, from the database.
    async fn current_entries(&self, custom: &CustomBoard) -> StoreResult<CurrentEntries> {
        let board = custom.spec.period(custom.period_at(Timestamp::now()).index);
        let period = self.store.period_entries(custom.spec.number, board.period).await?;
        let entries = period
            .entries
            .into_iter()
            .map(|row| EntryChange {
                board,
                key: BoardKey {
                    score: row.score,
                    subscores: row.subscores,
                    at: row.achieved_at.millis(),
                    id: row.user_id,
                },
                version: row.version,
                listed: true,
                metadata: row.metadata.map(Arc::from),
                changed: row.changed,
            })
            .collect();
        Ok(CurrentEntries { board, changes: period.changes, entries })
    }

    /// Rebuilds one group in Redis from the database; returns its entries.
    /// The built-in boards are read and written a chunk at a time (ten
    /// million players held at once took 2.6 GB); a custom board's current
    /// period is read whole.
    async fn rebuild_group(&self, shared: &Shared, group: Board) -> anyhow::Result<usize> {
        let since = shared.redis.begin_rebuild(group).await?;
        let track = self.walks_skip_changes(group);
        let (board, changes) = match group {
            Board::Best | Board::Total => (BoardPeriod::builtin(Board::Best), 0),
            Board::Custom(number) => {
                let Some(custom) = self.boards.by_number(number) else { return Ok(0) };
                let current = self.current_entries(&custom).await?;
                let board = current.board;
                let entries: Vec<RebuildEntry> = current
                    .entries
                    .iter()
                    .map(|change| RebuildEntry {
                        id: change.key.id,
                        version: change.version,
                        changed: change.changed,
                        members: vec![(
                            key::member_of(board.ranking, change.key),
                            change.metadata.as_deref().map(str::to_owned),
                        )],
                    })
                    .collect();
                if shared.redis.rebuild(board, &entries, Numbering { track, changes: current.changes }).await? {
                    self.replay_logged(shared, board, since, track).await?;
                }
                return Ok(entries.len());
            }
        };
        let Some(mut rebuild) = shared.redis.start_rebuild(board, Numbering { track, changes }).await? else {
            return Ok(0); // another instance is on it; `ready` will tell
        };
        let mut written = 0;
        let added: anyhow::Result<()> = async {
            let mut chunks = std::pin::pin!(self.store.board_standings_in_chunks().await?);
            while let Some(chunk) = chunks.try_next().await? {
                let entries: Vec<RebuildEntry> = chunk.iter().map(builtin_rebuild_entry).collect();
                shared.redis.add_to_rebuild(&mut rebuild, &entries).await?;
                written += entries.len();
            }
            Ok(())
        }
        .await;
        if let Err(error) = added {
            shared.redis.abandon_rebuild(rebuild).await;
            return Err(error);
        }
        shared.redis.finish_rebuild(rebuild).await?;
        self.replay_logged(shared, board, since, track).await?;
        Ok(written)
    }

    /// Brings into Redis what changed while a rebuild read the database.
    /// The log names who changed, in which period, and the version and
    /// change number each change left; what those players hold now is read
    /// from the database (a chunk of players a statement), and each logged
    /// change is recorded, in log order, with its own version and change
    /// number and that state: versioned like any change (the newest wins,
    /// and once the last is in, Redis holds what the database does), and
    /// every change number is noted, so a walk's numbers have no gap.
    async fn replay_logged(&self, shared: &Shared, board: BoardPeriod, since: i64, track: bool) -> anyhow::Result<()> {
        const PLAYERS_PER_READ: usize = 500;
        let logged: Vec<LoggedChange> = shared
            .redis
            .logged_changes(board.board, since)
            .await?
            .into_iter()
            .filter(|change| change.period >= board.period)
            .collect();
        let players: BTreeSet<(i64, i64)> = logged.iter().map(|change| (change.period, change.id)).collect();
        let players: Vec<(i64, i64)> = players.into_iter().collect();
        let custom = match board.board {
            Board::Custom(number) => match self.boards.by_number(number) {
                Some(custom) => Some(custom),
                None => return Ok(()), // deleted meanwhile
            },
            Board::Best | Board::Total => None,
        };
        // What each logged player holds now: members per board of the
        // group, or none when no longer listed (banned, erased, their last
        // post removed).
        let mut now: HashMap<(i64, i64), RebuildEntry> = HashMap::new();
        let mut conn = self.store.conn().await?;
        for chunk in players.chunk_by(|a, b| a.0 == b.0).flat_map(|period| period.chunks(PLAYERS_PER_READ)) {
            let period = chunk[0].0;
            let ids: Vec<i64> = chunk.iter().map(|(_, id)| *id).collect();
            let entries: Vec<RebuildEntry> = match (board.board, &custom) {
                (Board::Custom(number), Some(custom)) => {
                    let rows = self.store.listed_entries_of(&mut conn, number, period, &ids).await?;
                    rows.iter().map(|row| custom_rebuild_entry(custom.spec.ranking(), row)).collect()
                }
                _ => self
                    .store
                    .users(&mut conn, &ids)
                    .await?
                    .iter()
                    .map(|u| builtin_rebuild_entry(&Standing::of(u)))
                    .collect(),
            };
            now.extend(entries.into_iter().map(|entry| ((period, entry.id), entry)));
        }
        drop(conn);
        let off_the_boards = vec![(String::new(), None); if custom.is_some() { 1 } else { 2 }];
        for change in logged {
            let members = now.get(&(change.period, change.id)).map_or(&off_the_boards, |entry| &entry.members);
            let members: Vec<(String, Option<&str>)> =
                members.iter().map(|(member, metadata)| (member.clone(), metadata.as_deref())).collect();
            let expire_at = custom
                .as_ref()
                .and_then(|custom| custom.recent_periods().into_iter().find(|p| p.index == change.period))
                .and_then(|period| period.end);
            let record = Record {
                id: change.id,
                version: change.version,
                period: change.period,
                expire_at,
                track,
                changed: change.changed,
                members: &members,
            };
            shared.redis.replay(BoardPeriod { period: change.period, ..board }, &record).await?;
        }
        Ok(())
    }

    /// Gets a board created on this instance ready: an empty period 0 in
    /// the local index, or built (empty) in Redis.
    pub async fn add_board(&self, custom: &CustomBoard) {
        let board = custom.spec.period(custom.period_at(Timestamp::now()).index);
        match &self.shared {
            None => {
                self.local.boards.write().await.load_period(board, 0, &[]);
                self.version.fetch_add(1, Ordering::Release);
            }
            Some(shared) => {
                let track = custom.spec.operator == Operator::Latest;
                if let Err(error) = shared.redis.rebuild(board, &[], Numbering { track, changes: 0 }).await {
                    self.degrade(shared, &error, Failed::Write);
                }
            }
        }
    }

    /// Forgets a deleted board.
    pub async fn forget_board(&self, number: i64) {
        match &self.shared {
            None => {
                self.local.boards.write().await.forget(number);
                self.version.fetch_add(1, Ordering::Release);
            }
            Some(shared) => {
                if let Err(error) = shared.redis.forget(number).await {
                    tracing::warn!(%error, number, "a deleted board's keys could not be removed from Redis");
                }
            }
        }
    }

    /// Tells every instance that pages may show other names now: in Redis
    /// every board's stamp moves (each instance's kept pages go stale); a
    /// single instance's pages go with its names cache.
    pub async fn names_changed(&self) {
        self.renames.fetch_add(1, Ordering::Release);
        match &self.shared {
            None => {
                self.version.fetch_add(1, Ordering::Release);
            }
            Some(shared) => {
                if let Err(error) = shared.redis.touch(&self.groups()).await {
                    tracing::error!(%error, "a rename could not be shown on the other instances' pages");
                    self.degrade(shared, &error, Failed::Write);
                }
            }
        }
    }

    /// Whether reads go to Redis right now.
    pub fn shared_state(&self) -> SharedState {
        match &self.shared {
            None => SharedState::Disabled,
            Some(shared) if shared.health.is_healthy() => SharedState::Ok,
            Some(_) => SharedState::Degraded,
        }
    }

    /// Checks that every board in Redis is still built (a flushed or
    /// restarted Redis has lost them) and that nothing made Redis untrusted
    /// (see [`RedisClient::is_trusted`]: a failed write, a failover); called
    /// every second by a background task.
    pub async fn check_shared(&self) {
        let Some(shared) = &self.shared else { return };
        let client = shared.redis.client();
        if let Err(error) = client.check_topology().await {
            return self.degrade(shared, &error, Failed::Read);
        }
        match shared.redis.ready(&self.groups()).await {
            Ok(_) if !client.is_trusted() => self.degrade(shared, &RedisError::Untrusted, Failed::Read),
            Ok(ready) if ready.iter().all(|ready| *ready) => {
                shared.health.mark_healthy();
                self.heal_change_gaps(shared).await;
            }
            Ok(_) => self.degrade(shared, &RedisError::NotReady, Failed::Read),
            Err(error) => self.degrade(shared, &error, Failed::Read),
        }
    }

    /// Rebuilds the `latest` boards whose change numbers in Redis have had
    /// the same gap for [`GAP_GRACE`]: a record still in flight fills a gap
    /// in milliseconds; one that never comes (its instance died between
    /// the commit and the record) would leave that entry stale in Redis and
    /// make every walk begun there leave out more players than it needs to.
    async fn heal_change_gaps(&self, shared: &Arc<Shared>) {
        let now = Timestamp::now();
        let boards: Vec<BoardPeriod> = self
            .boards
            .all_ranked()
            .iter()
            .filter(|custom| custom.spec.operator == Operator::Latest)
            .map(|custom| custom.spec.period(custom.period_at(now).index))
            .collect();
        let Ok(gaps) = shared.redis.change_gaps(&boards).await else { return };
        let lasting: Vec<BoardPeriod> = {
            let Ok(mut seen) = self.gaps.lock() else { return };
            seen.retain(|board, _| boards.contains(board));
            let mut lasting = Vec::new();
            for (board, (through, gap)) in boards.iter().zip(gaps) {
                match seen.get(board) {
                    _ if !gap => {
                        seen.remove(board);
                    }
                    Some((stopped_at, since)) if *stopped_at == through => {
                        if since.elapsed() >= GAP_GRACE {
                            seen.remove(board);
                            lasting.push(*board);
                        }
                    }
                    _ => {
                        seen.insert(*board, (through, Instant::now()));
                    }
                }
            }
            lasting
        };
        for board in lasting {
            tracing::warn!(board = %board.board, "a change never reached Redis (an instance stopped between its commit and its record): rebuilding the board");
            if let Err(error) = self.rebuild_group(shared, board.board).await {
                tracing::warn!(%error, board = %board.board, "rebuilding a board in Redis failed");
            }
        }
    }

    /// Sends reads to the database and starts the recovery: rebuild every
    /// board Redis lacks from the database until none is missing. After a
    /// write that failed in transit every board is rebuilt and the cached
    /// sessions and user rows dropped, since any of them may have missed
    /// it; a failed read (a timeout, a wait for a pooled connection) lost
    /// nothing, so Redis is trusted again as soon as it answers.
    fn degrade(&self, shared: &Arc<Shared>, error: &RedisError, failed: Failed) {
        let client = Arc::clone(shared.redis.client());
        let lost_nothing = matches!(error, RedisError::NotReady | RedisError::Untrusted | RedisError::BehindWalk);
        if failed == Failed::Write && !lost_nothing {
            client.distrust();
        }
        let engine = self.clone();
        let recovering = Arc::clone(shared);
        shared.health.degrade(error, async move {
            loop {
                let groups = engine.groups();
                let failures = client.failures();
                let suspect = !client.is_trusted();
                let ready = match recovering.redis.ready(&groups).await {
                    Ok(ready) => Some(ready),
                    Err(error) => {
                        // A connection may be wedged (see `RedisClient::reconnect`):
                        // the next round asks on fresh ones.
                        tracing::debug!(%error, "Redis is not answering yet");
                        client.reconnect();
                        None
                    }
                };
                if let Some(ready) = ready {
                    if !suspect && ready.iter().all(|ready| *ready) {
                        break;
                    }
                    let mut rebuilt = true;
                    for (group, _) in groups.iter().zip(ready).filter(|(_, ready)| suspect || !ready) {
                        if let Err(error) = engine.rebuild_group(&recovering, *group).await {
                            tracing::warn!(%error, %group, "rebuilding a board in Redis failed");
                            rebuilt = false;
                        }
                    }
                    if suspect && rebuilt && drop_cached_copies(&client).await {
                        client.recovered_from(failures);
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            recovering.health.recovered();
        });
    }

    /// Records players' states after a committed change (a post, a
    /// moderation): on the built-in boards, or off them.
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
                    let standing = Standing::of(user);
                    let members = builtin_members(&standing);
                    let record = Record {
                        id: standing.id,
                        version: standing.version,
                        period: 0,
                        expire_at: None,
                        track: false,
                        changed: 0,
                        members: &members,
                    };
                    if let Err(error) = shared.redis.record(BoardPeriod::builtin(Board::Best), &record).await {
                        self.degrade(shared, &error, Failed::Write);
                    }
                }
            }
        }
    }

    /// Records custom board entries after a committed post; `ends` gives
    /// each change's period end (its sets in Redis expire after it).
    pub async fn record_entries(&self, changes: &[(EntryChange, Option<Timestamp>)]) {
        match &self.shared {
            None => {
                let mut boards = self.local.boards.write().await;
                let mut changed = false;
                for (change, _) in changes {
                    changed |= boards.apply_entry(change);
                }
                if changed {
                    self.version.fetch_add(1, Ordering::Release);
                }
            }
            Some(shared) => {
                for (change, end) in changes {
                    let member =
                        if change.listed { key::member_of(change.board.ranking, change.key) } else { String::new() };
                    let members = [(member, change.metadata.as_deref())];
                    let record = Record {
                        id: change.key.id,
                        version: change.version,
                        period: change.board.period,
                        expire_at: *end,
                        track: self.walks_skip_changes(change.board.board),
                        changed: change.changed,
                        members: &members,
                    };
                    if let Err(error) = shared.redis.record(change.board, &record).await {
                        self.degrade(shared, &error, Failed::Write);
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

/// A player's entry on the built-in boards, as a rebuild writes it.
fn builtin_rebuild_entry(standing: &Standing) -> RebuildEntry {
    RebuildEntry {
        id: standing.id,
        version: standing.version,
        changed: 0,
        members: builtin_members(standing).into_iter().map(|(member, _)| (member, None)).collect(),
    }
}

/// A player's entry on a custom board, as a rebuild writes it.
fn custom_rebuild_entry(ranking: Ranking, row: &crate::store::EntryRow) -> RebuildEntry {
    let key = row.key();
    RebuildEntry {
        id: row.user_id,
        version: row.version,
        changed: row.changed,
        members: vec![(key::member_of(ranking, key), row.metadata.clone())],
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

/// Drops the cached sessions and user rows (each is read again from the
/// database at its next use); whether it could.
async fn drop_cached_copies(client: &RedisClient) -> bool {
    let keys = client.keys();
    for pattern in [keys.session_pattern(), keys.user_rows_pattern()] {
        if let Err(error) = client.delete_matching(&pattern).await {
            tracing::warn!(%error, "cached copies in Redis could not be dropped");
            return false;
        }
    }
    true
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

/// How long a gap in a board's change numbers in Redis may last before the
/// board is rebuilt (see `RankEngine::heal_change_gaps`).
const GAP_GRACE: Duration = Duration::from_secs(5);

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
