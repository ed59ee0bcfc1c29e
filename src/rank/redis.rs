//! The Redis board source: the boards as sorted sets, shared by every
//! instance of the service.
//!
//! Each board is a sorted set whose members all have score 0 and are the
//! packed entry keys in hex ([`Packed::member`]): their lexicographic order
//! *is* the board order. That makes everything an O(log n) lex operation,
//! including the keyset cursor, which needs the position of a key that may
//! no longer exist (a player who moved on): competition rank = `ZLEXCOUNT`
//! of the members before `floor` + 1, where `floor` is the smallest key with
//! that score (what `ZCOUNT (score +inf` would give with real scores, which
//! cannot hold the tie-break).
//!
//! Boards written together form a group (the two built-ins: one standing
//! places a player on both) whose keys share a hash tag. Writes go through
//! one Lua script per player (atomic across instances, versioned so that
//! out-of-order updates keep the newest) and are appended to the group's
//! change log, so a rebuild from the database can replay what was posted
//! while it ran. A `ready` key says the sets are complete; a flushed or
//! restarted Redis lacks it and gets rebuilt.

use std::sync::Arc;

use deadpool_redis::redis::{self, AsyncCommands as _, Script};

use super::key::{Packed, MEMBER_SCORE_DIGITS};
use super::source::{BoardSource, Slice, SliceStart};
use crate::domain::{Board, BoardKey};
use crate::redis::{bounded, BoardGroupKeys, Connection, RedisClient, RedisError, RedisResult};
use crate::store::Standing;

/// Changes kept for replay after a rebuild.
const CHANGE_LOG_LENGTH: i64 = 200_000;
/// Players per pipelined batch during a rebuild.
const REBUILD_BATCH: usize = 2_000;
/// How long a rebuild may hold the lock before another instance may take over.
const REBUILD_LOCK_MS: u64 = 120_000;

const RECORD: &str = r"
-- KEYS: changes, seq, ready, then (set, entries) per board of the group
-- ARGV: id, version, log (1 = append to the change log), log length, then a member per board
local id, version = ARGV[1], tonumber(ARGV[2])
local boards = (#KEYS - 3) / 2
if ARGV[3] == '1' then
  local entry = redis.call('INCR', KEYS[2]) .. ' ' .. id .. ' ' .. ARGV[2]
  for i = 1, boards do entry = entry .. ' ' .. ARGV[4 + i] end
  redis.call('RPUSH', KEYS[1], entry)
  redis.call('LTRIM', KEYS[1], -tonumber(ARGV[4]), -1)
end
if redis.call('EXISTS', KEYS[3]) == 0 then return -1 end
for i = 1, boards do
  local set, entries, member = KEYS[2 + 2 * i], KEYS[3 + 2 * i], ARGV[4 + i]
  local old = redis.call('HGET', entries, id)
  local newer = true
  if old then
    local old_member, old_version = string.match(old, '^(%x+) (%d+)$')
    if tonumber(old_version) >= version then newer = false else redis.call('ZREM', set, old_member) end
  end
  if newer then
    redis.call('ZADD', set, 0, member)
    redis.call('HSET', entries, id, member .. ' ' .. version)
  end
end
return 1
";

const SLICE: &str = r"
-- KEYS: set, entries, ready
-- ARGV: mode (offset | after | around), offset / member / id, count, score digits, radius
if redis.call('EXISTS', KEYS[3]) == 0 then return {-1} end
local total = redis.call('ZCARD', KEYS[1])
local position
if ARGV[1] == 'offset' then
  position = tonumber(ARGV[2])
elseif ARGV[1] == 'after' then
  position = redis.call('ZLEXCOUNT', KEYS[1], '-', '[' .. ARGV[2])
else
  local entry = redis.call('HGET', KEYS[2], ARGV[2])
  if not entry then return {-2} end
  local mine = string.match(entry, '^(%x+)')
  position = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. mine) - tonumber(ARGV[5])
  if position < 0 then position = 0 end
end
local count = tonumber(ARGV[3])
local members = {}
if position < total and count > 0 then
  members = redis.call('ZRANGE', KEYS[1], position, position + count - 1)
end
local first_rank = 0
if #members > 0 then
  local digits = tonumber(ARGV[4])
  local floor = string.sub(members[1], 1, digits) .. string.rep('0', string.len(members[1]) - digits)
  first_rank = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. floor) + 1
end
return {total, position, first_rank, members}
";

const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// The built-in boards in Redis.
pub struct RedisSource {
    client: Arc<RedisClient>,
    group: BoardGroupKeys,
    record: Script,
    slice: Script,
    unlock: Script,
}

/// The boards of the built-in group, in the order the record script takes them.
const BUILTIN: [Board; 2] = [Board::Best, Board::Total];

fn members_of(s: &Standing) -> [String; 2] {
    [
        Packed::of(Board::Best.order(), BoardKey { score: s.best, at: s.best_at, id: s.id }).member(),
        Packed::of(Board::Total.order(), BoardKey { score: s.total, at: 0, id: s.id }).member(),
    ]
}

impl RedisSource {
    pub fn new(client: Arc<RedisClient>) -> Self {
        let group = client.keys().builtin_boards();
        Self { client, group, record: Script::new(RECORD), slice: Script::new(SLICE), unlock: Script::new(UNLOCK) }
    }

    /// Whether the sets are complete (`false` after a flush or restart).
    pub async fn is_ready(&self) -> RedisResult<bool> {
        bounded(async { Ok(self.client.conn().await?.exists(self.group.ready()).await?) }).await
    }

    /// Records a player's standing; `NotReady` when the sets need a rebuild
    /// (the change is in the log either way).
    pub async fn record(&self, standing: &Standing) -> RedisResult<()> {
        bounded(async {
            let mut conn = self.client.conn().await?;
            self.apply(&mut conn, standing.id, standing.plays, &members_of(standing), true).await
        })
        .await
    }

    async fn apply(
        &self,
        conn: &mut Connection,
        id: i64,
        version: i64,
        members: &[String],
        log: bool,
    ) -> RedisResult<()> {
        let mut invocation = self.record.prepare_invoke();
        invocation.key(self.group.changes()).key(self.group.sequence()).key(self.group.ready());
        for board in BUILTIN {
            invocation.key(self.group.set(board.as_str())).key(self.group.entries(board.as_str()));
        }
        invocation.arg(id).arg(version).arg(if log { "1" } else { "0" }).arg(CHANGE_LOG_LENGTH);
        for member in members {
            invocation.arg(member);
        }
        let outcome: i64 = invocation.invoke_async(conn).await?;
        if outcome < 0 {
            Err(RedisError::NotReady)
        } else {
            Ok(())
        }
    }

    /// The current sequence number of the change log.
    pub async fn change_seq(&self) -> RedisResult<i64> {
        self.client.counter(&self.group.sequence()).await
    }

    /// Rebuilds the sets from `standings` (read from the database after
    /// the change log stood at `since`), swaps them in atomically, marks the
    /// group ready, then replays the changes logged meanwhile. Only one
    /// instance rebuilds at a time (a lock key); the others wait for `ready`.
    pub async fn rebuild(&self, standings: &[Standing], since: i64) -> RedisResult<()> {
        let token = format!("{:x}", rand::random::<u64>());
        let mut conn = self.client.conn().await?;
        let lock = self.group.rebuild_lock();
        let acquired: Option<String> = redis::cmd("SET")
            .arg(&lock)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(REBUILD_LOCK_MS)
            .query_async(&mut conn)
            .await?;
        if acquired.is_none() {
            return Ok(()); // another instance is on it; `ready` will tell
        }
        let result = self.rebuild_locked(&mut conn, standings, since, &token).await;
        let _: RedisResult<i64> =
            self.unlock.key(&lock).arg(&token).invoke_async(&mut conn).await.map_err(RedisError::from);
        result
    }

    async fn rebuild_locked(
        &self,
        conn: &mut Connection,
        standings: &[Standing],
        since: i64,
        token: &str,
    ) -> RedisResult<()> {
        let live: Vec<String> = BUILTIN
            .iter()
            .flat_map(|board| [self.group.set(board.as_str()), self.group.entries(board.as_str())])
            .collect();
        let building: Vec<String> = live.iter().map(|key| self.group.building(token, key)).collect();
        // Only players are on the boards.
        let players: Vec<&Standing> = standings.iter().filter(|s| s.plays > 0).collect();
        for chunk in players.chunks(REBUILD_BATCH) {
            let mut pipe = redis::pipe();
            // `building` holds (set, entries) per board, in BUILTIN order.
            for (board, keys) in building.chunks(2).enumerate() {
                let mut set = redis::cmd("ZADD");
                set.arg(&keys[0]);
                let mut entries = redis::cmd("HSET");
                entries.arg(&keys[1]);
                for standing in chunk {
                    let member = &members_of(standing)[board];
                    set.arg(0).arg(member);
                    entries.arg(standing.id).arg(format!("{member} {}", standing.plays));
                }
                pipe.add_command(set).add_command(entries);
            }
            pipe.query_async::<()>(&mut *conn).await?;
        }
        let mut swap = redis::pipe();
        swap.atomic();
        for (live, building) in live.iter().zip(&building) {
            if players.is_empty() {
                swap.del(live);
            } else {
                swap.rename(building, live);
            }
        }
        swap.set(self.group.ready(), 1);
        swap.query_async::<()>(&mut *conn).await?;

        // Posts recorded while the database was being read.
        let log: Vec<String> = conn.lrange(self.group.changes(), 0, -1).await?;
        for entry in log {
            let fields: Vec<&str> = entry.split(' ').collect();
            let [seq, id, version, best, total] = fields[..] else { continue };
            let (Ok(seq), Ok(id), Ok(version)) = (seq.parse::<i64>(), id.parse::<i64>(), version.parse::<i64>()) else {
                continue;
            };
            if seq > since {
                self.apply(conn, id, version, &[best.to_owned(), total.to_owned()], false).await?;
            }
        }
        Ok(())
    }
}

fn parse_member(board: Board, member: &str) -> RedisResult<BoardKey> {
    Packed::from_member(member)
        .map(|packed| packed.unpack(board.order()))
        .ok_or_else(|| RedisError::Protocol(member.to_owned()))
}

impl BoardSource for RedisSource {
    type Error = RedisError;

    async fn slice(&self, board: Board, start: SliceStart, count: usize) -> RedisResult<Option<Slice>> {
        let (mode, argument, radius) = match start {
            SliceStart::Offset(position) => ("offset", position.to_string(), 0),
            SliceStart::After(key) => ("after", Packed::of(board.order(), key).member(), 0),
            SliceStart::Around { id, radius } => ("around", id.to_string(), radius),
        };
        let value: redis::Value = bounded(async {
            let mut conn = self.client.conn().await?;
            Ok(self
                .slice
                .key(self.group.set(board.as_str()))
                .key(self.group.entries(board.as_str()))
                .key(self.group.ready())
                .arg(mode)
                .arg(argument)
                .arg(count)
                .arg(MEMBER_SCORE_DIGITS)
                .arg(radius)
                .invoke_async(&mut conn)
                .await?)
        })
        .await?;
        let redis::Value::Array(parts) = value else { return Err(RedisError::Protocol(format!("{value:?}"))) };
        match parts.first() {
            Some(redis::Value::Int(-1)) => return Err(RedisError::NotReady),
            Some(redis::Value::Int(-2)) => return Ok(None),
            _ => {}
        }
        let [total, position, first_rank, members] =
            <[redis::Value; 4]>::try_from(parts).map_err(|parts| RedisError::Protocol(format!("{parts:?}")))?;
        let members: Vec<String> = redis::from_redis_value(members)?;
        Ok(Some(Slice {
            total: redis::from_redis_value::<i64>(total)?.max(0) as usize,
            position: redis::from_redis_value::<i64>(position)?.max(0) as usize,
            first_rank: redis::from_redis_value(first_rank)?,
            keys: members.iter().map(|member| parse_member(board, member)).collect::<RedisResult<_>>()?,
        }))
    }

    /// One pipelined round trip for all.
    async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> RedisResult<Vec<i64>> {
        if scores.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.exists(self.group.ready());
        for (board, score) in scores {
            let floor = Packed::floor(board.order(), *score).member();
            pipe.cmd("ZLEXCOUNT").arg(self.group.set(board.as_str())).arg("-").arg(format!("({floor}"));
        }
        let mut values: Vec<redis::Value> =
            bounded(async { Ok(pipe.query_async(&mut self.client.conn().await?).await?) }).await?;
        if !matches!(values.first(), Some(redis::Value::Int(1))) {
            return Err(RedisError::NotReady);
        }
        let counts = values.drain(1..).map(redis::from_redis_value).collect::<Result<Vec<i64>, _>>()?;
        Ok(counts.into_iter().map(|n| n + 1).collect())
    }
}
