//! The Redis board source: the boards as sorted sets, shared by every
//! instance of the service.
//!
//! Each board period is a sorted set whose members all have score 0 and
//! are the packed entry keys in hex ([`Packed::member`]): their
//! lexicographic order *is* the board order. That makes everything an
//! O(log n) lex operation, including the keyset cursor, which needs the
//! position of a key that may no longer exist (a player who moved on):
//! competition rank = `ZLEXCOUNT` of the members before `floor` + 1, where
//! `floor` is the smallest key with that score (what `ZCOUNT (score +inf`
//! would give with real scores, which cannot hold the tie-break). Beside
//! each set, a hash maps player ids to their member, version and (custom
//! boards) metadata.
//!
//! Boards written together form a group (the two built-ins: one standing
//! places a player on both; each custom board with all its periods) whose
//! keys share a hash tag. Writes go through one Lua script per entry
//! (atomic across instances, versioned so that out-of-order updates keep
//! the newest) and, while a rebuild of the group runs, appended to its
//! change log, so that the rebuild from the database can replay what was
//! posted while it ran (outside rebuilds a change costs the log nothing;
//! the log expires after the rebuild). The group's
//! `ready` key holds the period it was rebuilt at: every later period is
//! complete (all its entries were recorded while it was ready); a flushed
//! or restarted Redis lacks it and gets rebuilt. Sets of a resetting board
//! expire an hour after their period ends (ended periods are read from the
//! database).

use std::sync::Arc;

use deadpool_redis::redis::{self, AsyncCommands as _, Script};

use super::key::{member_of, member_ranked_digits, Packed};
use super::source::{
    rank_entries, BoardSource, Entry, Ranked, ScoreRank, Skipped, Slice, SliceRead, SliceStart, WALK_SCAN_LIMIT,
};
use crate::domain::{Board, BoardKey, BoardPeriod, Order, Ranking, Timestamp, Walk};
use crate::redis::{bounded, BoardGroupKeys, Connection, RedisClient, RedisError, RedisResult};
use crate::store::Standing;

/// Changes kept for replay after a rebuild, at most.
const CHANGE_LOG_LENGTH: i64 = 200_000;
/// How long after a rebuild begins changes are logged for its replay (a
/// rebuild that reads the database for longer misses changes).
const REPLAY_WINDOW_MS: u64 = 600_000;
/// Log lines read at a time by a replay.
const REPLAY_CHUNK: usize = 1_000;
/// Entries per pipelined batch during a rebuild.
const REBUILD_BATCH: usize = 2_000;
/// How long a rebuild may hold the lock before another instance may take over.
const REBUILD_LOCK_MS: u64 = 120_000;
/// How long a resetting board's period stays in Redis after it ends.
const ENDED_PERIOD_TTL_MS: i64 = 3_600_000;

// The scripts, each documented at its top (KEYS and ARGV).
const RECORD: &str = include_str!("lua/record.lua");
const METADATA_OF: &str = include_str!("lua/metadata_of.lua");
const SLICE: &str = include_str!("lua/slice.lua");
const RANKED: &str = include_str!("lua/ranked.lua");
const UNLOCK: &str = include_str!("lua/unlock.lua");
const EXTEND_LOCK: &str = include_str!("lua/extend_lock.lua");

/// An entry to record: its player, version, and per board of its group a
/// packed key and metadata.
pub struct Record<'a> {
    pub id: i64,
    pub version: i64,
    pub period: i64,
    /// When the period's sets may go (a resetting board), else `None`.
    pub expire_at: Option<Timestamp>,
    /// Whether the group notes which entries changed when (`latest`
    /// boards, whose walks leave those out).
    pub track: bool,
    /// The number of the change that wrote the entry (custom boards; see
    /// `board_entries.changed`).
    pub changed: i64,
    pub members: &'a [(String, Option<&'a str>)],
}

/// The boards in Redis.
pub struct RedisSource {
    client: Arc<RedisClient>,
    record: Script,
    slice: Script,
    ranked: Script,
    unlock: Script,
    extend_lock: Script,
}

/// How both built-in boards rank.
const BUILTIN: Ranking = Ranking::by_score(Order::Desc);

/// The members of a standing on the built-in boards (best, total); empty
/// for a standing off the boards (the record script's tombstone).
pub fn builtin_members(s: &Standing) -> [(String, Option<&'static str>); 2] {
    if !s.listed {
        return [(String::new(), None), (String::new(), None)];
    }
    let member = |key| member_of(BUILTIN, key);
    [(member(BoardKey::of(s.best, s.best_at, s.id)), None), (member(BoardKey::of(s.total, 0, s.id)), None)]
}

fn set_name(board: BoardPeriod) -> String {
    match board.board {
        Board::Best => "best".to_owned(),
        Board::Total => "total".to_owned(),
        Board::Custom(_) => board.period.to_string(),
    }
}

impl RedisSource {
    pub fn new(client: Arc<RedisClient>) -> Self {
        Self {
            client,
            record: Script::new(RECORD),
            slice: Script::new(&format!("{METADATA_OF}{SLICE}")),
            ranked: Script::new(RANKED),
            unlock: Script::new(UNLOCK),
            extend_lock: Script::new(EXTEND_LOCK),
        }
    }

    pub fn client(&self) -> &Arc<RedisClient> {
        &self.client
    }

    /// The keys of the group a board belongs to.
    fn group(&self, board: Board) -> BoardGroupKeys {
        match board {
            Board::Best | Board::Total => self.client.keys().builtin_boards(),
            Board::Custom(number) => self.client.keys().custom_board(number),
        }
    }

    /// The boards of a group, in the order the record script takes them.
    fn group_boards(board: BoardPeriod) -> Vec<BoardPeriod> {
        match board.board {
            Board::Best | Board::Total => vec![BoardPeriod::builtin(Board::Best), BoardPeriod::builtin(Board::Total)],
            Board::Custom(_) => vec![board],
        }
    }

    /// Whether each group's sets are complete (`false` after a flush or
    /// restart), in one round trip.
    pub async fn ready(&self, boards: &[Board]) -> RedisResult<Vec<bool>> {
        if boards.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for board in boards {
            pipe.exists(self.group(*board).ready());
        }
        bounded(async { self.client.conn().await?.query(&pipe).await }).await
    }

    /// The group's stamp, as `slice.lua` names it (`epoch:sequence`), in one
    /// round trip: `None` while the group is not ready for `board`'s
    /// period (reads then go elsewhere and name no state).
    pub async fn stamp(&self, board: BoardPeriod) -> RedisResult<Option<Arc<str>>> {
        let group = self.group(board.board);
        let mut pipe = redis::pipe();
        pipe.get(group.ready()).get(group.epoch()).get(group.sequence());
        let (ready, epoch, sequence): (Option<i64>, Option<String>, Option<String>) =
            bounded(async { self.client.conn().await?.query(&pipe).await }).await?;
        if ready.is_none_or(|first| board.period < first) {
            return Ok(None);
        }
        let (epoch, sequence) = (epoch.unwrap_or_default(), sequence.unwrap_or_else(|| "0".to_owned()));
        Ok(Some(Arc::from(format!("{epoch}:{sequence}"))))
    }

    /// For each board period: how far its recorded change numbers run
    /// without a gap, and whether a number past a gap was recorded (see
    /// `RankEngine::heal_change_gaps`). One round trip.
    pub async fn change_gaps(&self, boards: &[BoardPeriod]) -> RedisResult<Vec<(u64, bool)>> {
        if boards.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for board in boards {
            let (group, name) = (self.group(board.board), set_name(*board));
            pipe.get(group.changes_applied(&name)).scard(group.changes_ahead(&name));
        }
        let values: Vec<redis::Value> = bounded(async { self.client.conn().await?.query(&pipe).await }).await?;
        values
            .chunks(2)
            .map(|pair| {
                let through: Option<u64> = redis::from_redis_value(pair[0].clone())?;
                let ahead: u64 = redis::from_redis_value(pair[1].clone())?;
                Ok((through.unwrap_or(0), ahead > 0))
            })
            .collect()
    }

    /// Records an entry (on every board of its group); `NotReady` when the
    /// group needs a rebuild (a rebuild under way logs the change for its
    /// replay; one that begins later reads it from the database).
    pub async fn record(&self, board: BoardPeriod, record: &Record<'_>) -> RedisResult<()> {
        let recorded = bounded(async {
            let mut conn = self.client.conn().await?;
            self.apply(&mut conn, board, record, true).await
        })
        .await;
        // Timed out or not, the change may have reached Redis.
        self.client.page_lease().wrote();
        recorded
    }

    async fn apply(
        &self,
        conn: &mut Connection,
        board: BoardPeriod,
        record: &Record<'_>,
        log: bool,
    ) -> RedisResult<()> {
        let group = self.group(board.board);
        let mut invocation = self.record.prepare_invoke();
        invocation.key(group.changes()).key(group.sequence()).key(group.ready()).key(group.rebuilding());
        for member_board in Self::group_boards(board) {
            let name = set_name(member_board);
            invocation
                .key(group.set(&name))
                .key(group.entries(&name))
                .key(group.change_numbers(&name))
                .key(group.changes_applied(&name))
                .key(group.changes_ahead(&name));
        }
        invocation
            .arg(record.id)
            .arg(record.version)
            .arg(if log { "1" } else { "0" })
            .arg(CHANGE_LOG_LENGTH)
            .arg(record.period)
            .arg(record.expire_at.map_or(0, |t| t.millis() + ENDED_PERIOD_TTL_MS))
            .arg(if record.track { "1" } else { "0" })
            .arg(record.changed);
        for (member, metadata) in record.members {
            invocation.arg(member).arg(metadata.unwrap_or(""));
        }
        let outcome: i64 = invocation.invoke_async(conn).await?;
        if outcome < 0 {
            Err(RedisError::NotReady)
        } else {
            Ok(())
        }
    }

    /// Moves the sequence of every group given, in one round trip: their
    /// pages' stamps change without a change to an entry (a rename).
    pub async fn touch(&self, boards: &[Board]) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for board in boards {
            pipe.incr(self.group(*board).sequence(), 1).ignore();
        }
        let touched = bounded(async { self.client.conn().await?.query(&pipe).await }).await;
        self.client.page_lease().wrote();
        touched
    }

    /// Begins a rebuild of `board`'s group, before the database is read:
    /// marks the group as being rebuilt, so that its changes are logged
    /// for the replay from now on (for [`REPLAY_WINDOW_MS`], renewed by
    /// every rebuild that begins), and returns where the log stands.
    /// Outside that window nothing is logged. The mark is never cleared
    /// early: a rebuild that began meanwhile on another instance (and may
    /// take the lock next, swapping in what it read) replays from it.
    pub async fn begin_rebuild(&self, board: Board) -> RedisResult<i64> {
        let group = self.group(board);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(group.rebuilding())
            .arg(1)
            .arg("PX")
            .arg(REPLAY_WINDOW_MS)
            .ignore()
            .get(group.sequence());
        let (seq,): (Option<i64>,) = bounded(async { self.client.conn().await?.query(&pipe).await }).await?;
        Ok(seq.unwrap_or(0))
    }

    /// Rebuilds one period of a group from `entries` (read from the
    /// database after [`Self::begin_rebuild`]; each is an id, a version and
    /// its members) in one go: [`Self::start_rebuild`], one
    /// [`Self::add_to_rebuild`], [`Self::finish_rebuild`]. `false` when
    /// another instance holds the rebuild.
    pub async fn rebuild(
        &self,
        board: BoardPeriod,
        entries: &[RebuildEntry],
        numbering: Numbering,
    ) -> RedisResult<bool> {
        let Some(mut rebuild) = self.start_rebuild(board, numbering).await? else { return Ok(false) };
        match self.add_to_rebuild(&mut rebuild, entries).await {
            Ok(()) => self.finish_rebuild(rebuild).await.map(|()| true),
            Err(error) => {
                self.abandon_rebuild(rebuild).await;
                Err(error)
            }
        }
    }

    /// Takes the group's rebuild lock (one rebuild at a time across
    /// instances; the others wait for `ready`): `None` when another
    /// instance holds it. The entries then go in a chunk at a time
    /// ([`Self::add_to_rebuild`], so a rebuild of ten million players never
    /// holds them all), beside the live sets, until [`Self::finish_rebuild`]
    /// swaps them in; the caller then replays what was logged meanwhile
    /// ([`Self::logged_changes`], [`Self::replay`]).
    pub async fn start_rebuild(&self, board: BoardPeriod, numbering: Numbering) -> RedisResult<Option<Rebuild>> {
        let group = self.group(board.board);
        let token = format!("{:x}", rand::random::<u64>());
        let mut conn = self.client.conn().await?;
        let acquired: Option<String> = redis::cmd("SET")
            .arg(group.rebuild_lock())
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(REBUILD_LOCK_MS)
            .query_async(&mut conn)
            .await?;
        if acquired.is_none() {
            return Ok(None);
        }
        let boards = Self::group_boards(board);
        let live: Vec<String> = boards
            .iter()
            .flat_map(|board| {
                let name = set_name(*board);
                [group.set(&name), group.entries(&name), group.change_numbers(&name)]
            })
            .collect();
        let building = live.iter().map(|key| group.building(&token, key)).collect();
        Ok(Some(Rebuild { group, board, numbering, token, live, building, entries: 0, numbered: false }))
    }

    /// Writes some of a rebuild's entries.
    pub async fn add_to_rebuild(&self, rebuild: &mut Rebuild, entries: &[RebuildEntry]) -> RedisResult<()> {
        let mut conn = self.client.conn().await?;
        for chunk in entries.chunks(REBUILD_BATCH) {
            let mut pipe = redis::pipe();
            // `building` holds (set, entries, change numbers) per board of the group, in order.
            for (index, keys) in rebuild.building.chunks(3).enumerate() {
                let mut set = redis::cmd("ZADD");
                set.arg(&keys[0]);
                let mut hash = redis::cmd("HSET");
                hash.arg(&keys[1]);
                let mut numbers = redis::cmd("HSET");
                numbers.arg(&keys[2]);
                let mut any_number = false;
                for entry in chunk {
                    let (member, metadata) = &entry.members[index];
                    set.arg(0).arg(member);
                    // The value's stamp, as `record.lua` writes and compares it.
                    let stamp = format!("{}:{}", entry.changed, entry.version);
                    hash.arg(entry.id).arg(format!("{member} {stamp} {}", metadata.as_deref().unwrap_or("")));
                    // Entries never changed since the numbering began
                    // (number 0) are left out: a missing number reads as 0.
                    if rebuild.numbering.track && entry.changed > 0 {
                        numbers.arg(entry.id).arg(entry.changed);
                        any_number = true;
                    }
                }
                pipe.add_command(set).add_command(hash);
                if any_number {
                    pipe.add_command(numbers);
                    rebuild.numbered = true;
                }
            }
            conn.query::<()>(&pipe).await?;
        }
        // A rebuild of millions outlasts the lock's first lifetime: each
        // chunk renews it, so no other instance starts the same rebuild.
        let lock = rebuild.group.rebuild_lock();
        let held: i64 =
            self.extend_lock.key(&lock).arg(&rebuild.token).arg(REBUILD_LOCK_MS).invoke_async(&mut conn).await?;
        if held == 0 {
            tracing::warn!(group = %lock, "a rebuild's lock expired before it was renewed");
        }
        rebuild.entries += entries.len();
        Ok(())
    }

    /// Swaps a rebuild's sets in atomically, marks the group ready from its
    /// period on, and lets go of the lock.
    pub async fn finish_rebuild(&self, rebuild: Rebuild) -> RedisResult<()> {
        let result = async {
            let Rebuild { group, board, numbering, token, live, building, entries, numbered } = &rebuild;
            let mut swap = redis::pipe();
            swap.atomic();
            for (index, (live, building)) in live.iter().zip(building).enumerate() {
                let is_numbers = index % 3 == 2;
                if *entries == 0 || (is_numbers && !numbered) {
                    swap.del(live);
                } else {
                    swap.rename(building, live);
                }
            }
            // Every change up to `changes` is in the entries; later ones are
            // replayed from the log and noted as they come.
            for board in Self::group_boards(*board) {
                let name = set_name(board);
                swap.set(group.changes_applied(&name), numbering.changes);
                swap.del(group.changes_ahead(&name));
            }
            swap.set(group.ready(), board.period);
            swap.set(group.epoch(), token);
            let mut conn = self.client.conn().await?;
            swap.query_async::<()>(&mut conn).await.map_err(RedisError::from)
        }
        .await;
        self.client.page_lease().wrote();
        self.abandon_rebuild(rebuild).await;
        result
    }

    /// Lets go of a rebuild's lock (its partly written keys are left for
    /// the next rebuild of the group, which writes under a new token, and
    /// to the group's deletion).
    pub async fn abandon_rebuild(&self, rebuild: Rebuild) {
        let unlocked: RedisResult<i64> = async {
            let mut conn = self.client.conn().await?;
            let lock = rebuild.group.rebuild_lock();
            Ok(self.unlock.key(&lock).arg(&rebuild.token).invoke_async(&mut conn).await?)
        }
        .await;
        if let Err(error) = unlocked {
            tracing::warn!(%error, "a rebuild's lock could not be let go (it expires)");
        }
    }

    /// The changes logged for a rebuild of `board`'s group after the log
    /// stood at `since`, oldest first, read a chunk at a time.
    pub async fn logged_changes(&self, board: Board, since: i64) -> RedisResult<Vec<LoggedChange>> {
        let log = self.group(board).changes();
        let mut conn = self.client.conn().await?;
        let logged: i64 = conn.llen(&log).await?;
        let mut changes = Vec::new();
        for start in (0..logged).step_by(REPLAY_CHUNK) {
            let end = (start + REPLAY_CHUNK as i64).min(logged) - 1;
            let lines: Vec<String> = conn.lrange(&log, start as isize, end as isize).await?;
            changes.extend(
                lines
                    .iter()
                    .filter_map(|line| serde_json::from_str::<LoggedChange>(line).ok())
                    .filter(|change| change.seq > since),
            );
        }
        Ok(changes)
    }

    /// Records a change a rebuild replays (not logged again).
    pub async fn replay(&self, board: BoardPeriod, record: &Record<'_>) -> RedisResult<()> {
        let replayed = bounded(async {
            let mut conn = self.client.conn().await?;
            self.apply(&mut conn, board, record, false).await
        })
        .await;
        self.client.page_lease().wrote();
        replayed
    }

    /// Deletes every key of a custom board (deleted from the catalog).
    pub async fn forget(&self, number: i64) -> RedisResult<u64> {
        let forgotten = self.client.delete_matching(&self.client.keys().custom_board(number).pattern()).await;
        self.client.page_lease().wrote();
        forgotten
    }
}

/// An entry for a rebuild: its player, version, change number, and per
/// board of its group a member and metadata.
pub struct RebuildEntry {
    pub id: i64,
    pub version: i64,
    pub changed: i64,
    pub members: Vec<(String, Option<String>)>,
}

/// A rebuild under way (see [`RedisSource::start_rebuild`]).
pub struct Rebuild {
    group: BoardGroupKeys,
    board: BoardPeriod,
    numbering: Numbering,
    /// Names this rebuild's keys and its hold on the lock.
    token: String,
    /// The group's keys: (set, entries, change numbers) per board.
    live: Vec<String>,
    /// Where this rebuild writes them until the swap.
    building: Vec<String>,
    /// Entries written so far.
    entries: usize,
    /// Whether any entry had a change number.
    numbered: bool,
}

/// How a rebuilt group numbers its changes (see `board_entries.changed`).
#[derive(Debug, Clone, Copy)]
pub struct Numbering {
    /// Whether the group notes change numbers (see [`Record::track`]).
    pub track: bool,
    /// The period's change count, read before its entries: every change up
    /// to it is in them.
    pub changes: i64,
}

/// A line of the change log: a change made while a rebuild read the
/// database, by whom, in which period, and the version and change number it
/// left. Lines of earlier releases (which carried the members) are not
/// replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct LoggedChange {
    pub seq: i64,
    pub id: i64,
    pub period: i64,
    pub version: i64,
    pub changed: i64,
}

fn parse_member(board: BoardPeriod, member: &str) -> RedisResult<BoardKey> {
    Packed::from_member(board.ranking, member)
        .map(|packed| packed.unpack(board.ranking))
        .ok_or_else(|| RedisError::Protocol(member.to_owned()))
}

fn metadata(text: String) -> Option<Arc<str>> {
    (!text.is_empty()).then(|| Arc::from(text))
}

impl BoardSource for RedisSource {
    type Error = RedisError;

    async fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> RedisResult<Option<Slice>> {
        // No stamp has the empty string for its epoch and sequence.
        match self.slice_unless(board, start, count, "").await? {
            SliceRead::Read(slice) => Ok(slice),
            SliceRead::Unchanged => Err(RedisError::Protocol("an unconditional slice answered unchanged".into())),
        }
    }

    /// One round trip either way: the script compares the stamp.
    async fn slice_unless(
        &self,
        board: BoardPeriod,
        start: SliceStart,
        count: usize,
        known: &str,
    ) -> RedisResult<SliceRead> {
        let (mode, argument, radius) = match start {
            SliceStart::Offset(position) => ("offset", position.to_string(), 0),
            SliceStart::After { key, .. } => ("after", member_of(board.ranking, key), 0),
            SliceStart::Around { id, radius } => ("around", id.to_string(), radius),
        };
        let walk = match start {
            SliceStart::After { walk: Some(walk), .. } => Some(walk),
            _ => None,
        };
        let group = self.group(board.board);
        let name = set_name(board);
        let value: redis::Value = bounded(async {
            let mut conn = self.client.conn().await?;
            Ok(self
                .slice
                .key(group.set(&name))
                .key(group.entries(&name))
                .key(group.ready())
                .key(group.sequence())
                .key(group.epoch())
                .key(group.change_numbers(&name))
                .key(group.changes_applied(&name))
                .arg(mode)
                .arg(argument)
                .arg(count)
                .arg(member_ranked_digits(board.ranking))
                .arg(radius)
                .arg(board.period)
                .arg(if board.board.is_builtin() { "0" } else { "1" })
                .arg(known)
                .arg(walk.map_or(String::new(), |walk| walk.changes.to_string()))
                .arg(WALK_SCAN_LIMIT)
                .invoke_async(&mut conn)
                .await?)
        })
        .await?;
        let redis::Value::Array(parts) = value else { return Err(RedisError::Protocol(format!("{value:?}"))) };
        match parts.first() {
            Some(redis::Value::Int(-1)) => return Err(RedisError::NotReady),
            Some(redis::Value::Int(-2)) => return Ok(SliceRead::Read(None)),
            Some(redis::Value::Int(-3)) => return Ok(SliceRead::Unchanged),
            Some(redis::Value::Int(-4)) => return Err(RedisError::BehindWalk),
            _ => {}
        }
        let [total, position, first_rank, members, metadata_values, stamp, walked, positions, ranks, stopped, walk] =
            <[redis::Value; 11]>::try_from(parts).map_err(|parts| RedisError::Protocol(format!("{parts:?}")))?;
        let members: Vec<String> = redis::from_redis_value(members)?;
        let mut metadata_values: Vec<String> = redis::from_redis_value(metadata_values)?;
        metadata_values.resize(members.len(), String::new());
        let entries = members
            .iter()
            .zip(metadata_values)
            .map(|(member, text)| Ok(Entry { key: parse_member(board, member)?, metadata: metadata(text) }))
            .collect::<RedisResult<Vec<Entry>>>()?;
        let stamp: String = redis::from_redis_value(stamp)?;
        let skipped = if redis::from_redis_value::<i64>(walked)? == 1 {
            let stopped: String = redis::from_redis_value(stopped)?;
            Some(Skipped {
                positions: redis::from_redis_value(positions)?,
                ranks: redis::from_redis_value(ranks)?,
                stopped_after: (!stopped.is_empty()).then(|| parse_member(board, &stopped)).transpose()?,
            })
        } else {
            None
        };
        Ok(SliceRead::Read(Some(Slice {
            total: redis::from_redis_value::<i64>(total)?.max(0) as usize,
            position: redis::from_redis_value::<i64>(position)?.max(0) as usize,
            first_rank: redis::from_redis_value(first_rank)?,
            entries,
            walk: Some(Walk { changes: redis::from_redis_value(walk)? }),
            stamp: Some(Arc::from(stamp)),
            skipped,
        })))
    }

    /// One pipelined round trip for all.
    async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> RedisResult<Vec<ScoreRank>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (board, _) in keys {
            pipe.get(self.group(board.board).ready());
        }
        for (board, key) in keys {
            let floor = Packed::of(board.ranking, *key).floor().member(board.ranking);
            let set = self.group(board.board).set(&set_name(*board));
            pipe.cmd("ZLEXCOUNT").arg(&set).arg("-").arg(format!("({floor}"));
            pipe.cmd("ZCARD").arg(&set);
        }
        let values: Vec<redis::Value> = bounded(async { self.client.conn().await?.query(&pipe).await }).await?;
        let (ready, counts) = values.split_at(keys.len());
        for ((board, _), ready) in keys.iter().zip(ready) {
            let from: Option<i64> = redis::from_redis_value(ready.clone())?;
            if from.is_none_or(|from| board.period < from) {
                return Err(RedisError::NotReady);
            }
        }
        counts
            .chunks(2)
            .map(|pair| {
                let above: i64 = redis::from_redis_value(pair[0].clone())?;
                let players: i64 = redis::from_redis_value(pair[1].clone())?;
                Ok(ScoreRank { rank: above + 1, players })
            })
            .collect()
    }

    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> RedisResult<Ranked> {
        let group = self.group(board.board);
        let name = set_name(board);
        let mut invocation = self.ranked.prepare_invoke();
        invocation
            .key(group.set(&name))
            .key(group.entries(&name))
            .key(group.ready())
            .arg(board.period)
            .arg(member_ranked_digits(board.ranking));
        for id in ids {
            invocation.arg(*id);
        }
        let value: redis::Value =
            bounded(async { Ok(invocation.invoke_async(&mut self.client.conn().await?).await?) }).await?;
        let redis::Value::Array(parts) = value else { return Err(RedisError::Protocol(format!("{value:?}"))) };
        if let Some(redis::Value::Int(-1)) = parts.first() {
            return Err(RedisError::NotReady);
        }
        let [total, found] =
            <[redis::Value; 2]>::try_from(parts).map_err(|parts| RedisError::Protocol(format!("{parts:?}")))?;
        let found: Vec<(String, String, i64)> = redis::from_redis_value(found)?;
        let total = redis::from_redis_value::<i64>(total)?.max(0) as usize;
        let mut ranks = std::collections::HashMap::new();
        let entries = found
            .into_iter()
            .map(|(member, text, rank)| {
                let key = parse_member(board, &member)?;
                ranks.insert(key.id, rank);
                Ok(Entry { key, metadata: metadata(text) })
            })
            .collect::<RedisResult<Vec<Entry>>>()?;
        Ok(rank_entries(board, entries, |entry| ranks.get(&entry.key.id).copied().unwrap_or(0), total))
    }
}
