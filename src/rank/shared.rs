//! The board in Redis, shared by every instance of the service.
//!
//! Each board is a sorted set whose members all have score 0 and are the
//! same packed keys as the embedded index, written as 32 hex digits: their
//! lexicographic order *is* the board order (score desc, then `best_at`,
//! then id). That makes everything an O(log n) lex operation, including the
//! keyset cursor, which needs the position of a key that may no longer exist
//! (a player who moved on): competition rank = `ZLEXCOUNT - (floor` + 1,
//! where `floor` is the smallest key with that score (the count of players
//! with a strictly greater score, like `ZCOUNT (score +inf` would give with
//! real scores, which cannot hold the tie-break).
//!
//! Writes go through one Lua script (atomic across instances, versioned by
//! play count so out-of-order updates keep the newest) and are also
//! appended to a change log, so a rebuild from the database can replay what
//! was posted while it ran. A `ready` key says the sets are complete; a
//! flushed or restarted Redis lacks it and gets rebuilt.

use std::time::Duration;

use deadpool_redis::redis::{self, AsyncCommands as _, Script};
use deadpool_redis::{Config, Pool, PoolConfig, Runtime, Timeouts};

use super::standings::{first_key_with, pack, unpack, Standing};
use crate::domain::{Board, BoardKey};

/// Every Redis call is bounded: a hung Redis must not hang requests.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(500);
/// Changes kept for replay after a rebuild.
const CHANGE_LOG_LENGTH: i64 = 200_000;
/// Players per pipelined batch during a rebuild.
const REBUILD_BATCH: usize = 2_000;

#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("redis pool: {0}")]
    Pool(#[from] deadpool_redis::PoolError),
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the shared board is not built (Redis restarted or flushed)")]
    NotReady,
    #[error("unexpected answer from Redis: {0}")]
    Protocol(String),
}

impl From<redis::ParsingError> for SharedError {
    fn from(error: redis::ParsingError) -> Self {
        Self::Protocol(error.to_string())
    }
}

/// Runs a Redis future with the timeout.
async fn bounded<T>(future: impl std::future::Future<Output = Result<T, SharedError>>) -> Result<T, SharedError> {
    tokio::time::timeout(REDIS_TIMEOUT, future).await.map_err(|_| SharedError::Timeout(REDIS_TIMEOUT))?
}

fn member(board: Board, key: BoardKey) -> String {
    format!("{:032x}", pack(board, key))
}

fn parse_member(board: Board, member: &str) -> Result<BoardKey, SharedError> {
    u128::from_str_radix(member, 16)
        .map(|packed| unpack(board, packed))
        .map_err(|_| SharedError::Protocol(member.to_owned()))
}

/// Hex digits of a member that hold the score (the rest is the tie-break).
fn score_digits(board: Board) -> usize {
    match board {
        Board::Best => 8,
        Board::Total => 16,
    }
}

const RECORD: &str = r"
-- KEYS: best, total, players, changes, seq, ready
-- ARGV: id, best member, total member, plays, log (1 = append to the change log)
if ARGV[5] == '1' then
  local seq = redis.call('INCR', KEYS[5])
  redis.call('RPUSH', KEYS[4], seq .. ' ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[6]), -1)
end
if redis.call('EXISTS', KEYS[6]) == 0 then return -1 end
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then
  local old_best, old_total, old_plays = string.match(old, '^(%x+) (%x+) (%d+)$')
  if tonumber(old_plays) >= tonumber(ARGV[4]) then return 0 end
  redis.call('ZREM', KEYS[1], old_best)
  redis.call('ZREM', KEYS[2], old_total)
end
redis.call('ZADD', KEYS[1], 0, ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
return 1
";

const PAGE: &str = r"
-- KEYS: board set, players, ready
-- ARGV: mode (offset | after | around), offset / member / id, count, score digits, radius, board column (1 best, 2 total)
if redis.call('EXISTS', KEYS[3]) == 0 then return {-1} end
local total = redis.call('ZCARD', KEYS[1])
local position
if ARGV[1] == 'offset' then
  position = tonumber(ARGV[2])
elseif ARGV[1] == 'after' then
  position = redis.call('ZLEXCOUNT', KEYS[1], '-', '[' .. ARGV[2])
else
  local row = redis.call('HGET', KEYS[2], ARGV[2])
  if not row then return {-2} end
  local best, tot = string.match(row, '^(%x+) (%x+)')
  local mine = best
  if ARGV[6] == '2' then mine = tot end
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
  local floor = string.sub(members[1], 1, digits) .. string.rep('0', 32 - digits)
  first_rank = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. floor) + 1
end
return {total, position, first_rank, members}
";

/// A consistent slice read by one script: the board size, the slice's
/// position, the rank of its first entry, and its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSlice {
    pub total: usize,
    pub position: usize,
    pub first_rank: i64,
    pub keys: Vec<BoardKey>,
}

/// Where a slice starts.
pub enum SliceStart {
    Offset(usize),
    After(BoardKey),
    /// `radius` entries before the player with this id.
    Around {
        id: i64,
        radius: usize,
    },
}

pub struct RedisBoard {
    pool: Pool,
    prefix: String,
    record: Script,
    page: Script,
    versioned_set: Script,
    window_count: Script,
}

const WINDOW_COUNT: &str = r"
-- KEYS: the counter; ARGV: window in ms. Returns {count, ms until the window closes}.
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}
";

const VERSIONED_SET: &str = r"
-- KEYS: the key; ARGV: version, value, ttl in ms. Stored as 'version|value'.
local old = redis.call('GET', KEYS[1])
if old then
  local version = tonumber(string.match(old, '^(%d+)|'))
  if version and version > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
return 1
";

impl RedisBoard {
    pub fn new(url: &str, prefix: &str, max_connections: usize) -> anyhow::Result<Self> {
        let mut config = Config::from_url(url);
        let timeouts =
            Timeouts { wait: Some(REDIS_TIMEOUT), create: Some(REDIS_TIMEOUT), recycle: Some(REDIS_TIMEOUT) };
        config.pool = Some(PoolConfig { max_size: max_connections, timeouts, ..PoolConfig::default() });
        let pool = config.create_pool(Some(Runtime::Tokio1))?;
        Ok(Self {
            pool,
            prefix: prefix.to_owned(),
            record: Script::new(RECORD),
            page: Script::new(PAGE),
            versioned_set: Script::new(VERSIONED_SET),
            window_count: Script::new(WINDOW_COUNT),
        })
    }

    pub fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    fn board_key(&self, board: Board) -> String {
        self.key(board.as_str())
    }

    async fn conn(&self) -> Result<deadpool_redis::Connection, SharedError> {
        Ok(self.pool.get().await?)
    }

    /// Whether the sets are complete (`false` after a flush or restart).
    pub async fn is_ready(&self) -> Result<bool, SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            Ok(conn.exists::<_, bool>(self.key("ready")).await?)
        })
        .await
    }

    /// Records a player's state; `NotReady` when the sets need a rebuild
    /// (the change is in the log either way).
    pub async fn record(&self, standing: Standing) -> Result<(), SharedError> {
        self.apply(standing, true).await
    }

    async fn apply(&self, s: Standing, log: bool) -> Result<(), SharedError> {
        let best = member(Board::Best, BoardKey { score: s.best, at: s.best_at, id: s.id });
        let total = member(Board::Total, BoardKey { score: s.total, at: 0, id: s.id });
        bounded(async {
            let mut conn = self.conn().await?;
            let outcome: i64 = self
                .record
                .key(self.board_key(Board::Best))
                .key(self.board_key(Board::Total))
                .key(self.key("players"))
                .key(self.key("changes"))
                .key(self.key("seq"))
                .key(self.key("ready"))
                .arg(s.id)
                .arg(&best)
                .arg(&total)
                .arg(s.plays)
                .arg(if log { "1" } else { "0" })
                .arg(CHANGE_LOG_LENGTH)
                .invoke_async(&mut conn)
                .await?;
            if outcome < 0 {
                Err(SharedError::NotReady)
            } else {
                Ok(())
            }
        })
        .await
    }

    /// Competition ranks of scores, one pipelined round trip for all.
    pub async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> Result<Vec<i64>, SharedError> {
        if scores.is_empty() {
            return Ok(Vec::new());
        }
        bounded(async {
            let mut conn = self.conn().await?;
            let mut pipe = redis::pipe();
            pipe.exists(self.key("ready"));
            for (board, score) in scores {
                let floor = format!("{:032x}", first_key_with(*board, *score));
                pipe.cmd("ZLEXCOUNT").arg(self.board_key(*board)).arg("-").arg(format!("({floor}"));
            }
            let (ready, counts): (bool, Vec<i64>) = {
                let mut values: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
                let ready = matches!(values.first(), Some(redis::Value::Int(1)));
                let counts = values.drain(1..).map(redis::from_redis_value).collect::<Result<Vec<i64>, _>>()?;
                (ready, counts)
            };
            if !ready {
                return Err(SharedError::NotReady);
            }
            Ok(counts.into_iter().map(|n| n + 1).collect())
        })
        .await
    }

    /// A slice of a board, read atomically; `None` for `Around` a player who
    /// is not on the board.
    pub async fn slice(
        &self,
        board: Board,
        start: SliceStart,
        count: usize,
    ) -> Result<Option<SharedSlice>, SharedError> {
        let (mode, argument, radius) = match start {
            SliceStart::Offset(position) => ("offset", position.to_string(), 0),
            SliceStart::After(key) => ("after", member(board, key), 0),
            SliceStart::Around { id, radius } => ("around", id.to_string(), radius),
        };
        bounded(async {
            let mut conn = self.conn().await?;
            let value: redis::Value = self
                .page
                .key(self.board_key(board))
                .key(self.key("players"))
                .key(self.key("ready"))
                .arg(mode)
                .arg(argument)
                .arg(count)
                .arg(score_digits(board))
                .arg(radius)
                .arg(match board {
                    Board::Best => 1,
                    Board::Total => 2,
                })
                .invoke_async(&mut conn)
                .await?;
            let redis::Value::Array(parts) = value else { return Err(SharedError::Protocol(format!("{value:?}"))) };
            match parts.first() {
                Some(redis::Value::Int(-1)) => return Err(SharedError::NotReady),
                Some(redis::Value::Int(-2)) => return Ok(None),
                _ => {}
            }
            let [total, position, first_rank, members] =
                <[redis::Value; 4]>::try_from(parts).map_err(|parts| SharedError::Protocol(format!("{parts:?}")))?;
            let members: Vec<String> = redis::from_redis_value(members)?;
            Ok(Some(SharedSlice {
                total: redis::from_redis_value::<i64>(total)?.max(0) as usize,
                position: redis::from_redis_value::<i64>(position)?.max(0) as usize,
                first_rank: redis::from_redis_value(first_rank)?,
                keys: members.iter().map(|m| parse_member(board, m)).collect::<Result<_, _>>()?,
            }))
        })
        .await
    }

    /// The current sequence number of the change log.
    pub async fn change_seq(&self) -> Result<i64, SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            Ok(conn.get::<_, Option<i64>>(self.key("seq")).await?.unwrap_or(0))
        })
        .await
    }

    /// Rebuilds both sets from `standings` (read from the database after
    /// the change log stood at `since`), swaps them in atomically, marks the
    /// board ready, then replays the changes logged meanwhile. Only one
    /// instance rebuilds at a time (a lock key); the others wait for `ready`.
    pub async fn rebuild(&self, standings: &[Standing], since: i64) -> Result<(), SharedError> {
        let token = format!("{:x}", rand::random::<u64>());
        let mut conn = self.conn().await?;
        let lock = self.key("rebuild-lock");
        let acquired: bool = redis::cmd("SET")
            .arg(&lock)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(120_000)
            .query_async::<Option<String>>(&mut conn)
            .await?
            .is_some();
        if !acquired {
            return Ok(()); // another instance is on it; `ready` will tell
        }
        let result = self.rebuild_locked(&mut conn, standings, since, &token).await;
        let _: Result<i64, _> = redis::Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
        )
        .key(&lock)
        .arg(&token)
        .invoke_async(&mut conn)
        .await;
        result
    }

    async fn rebuild_locked(
        &self,
        conn: &mut deadpool_redis::Connection,
        standings: &[Standing],
        since: i64,
        token: &str,
    ) -> Result<(), SharedError> {
        let temp = |name: &str| self.key(&format!("build:{token}:{name}"));
        for chunk in standings.chunks(REBUILD_BATCH) {
            let mut pipe = redis::pipe();
            let mut best = redis::cmd("ZADD");
            best.arg(temp("best"));
            let mut total = redis::cmd("ZADD");
            total.arg(temp("total"));
            let mut players = redis::cmd("HSET");
            players.arg(temp("players"));
            for s in chunk {
                let best_member = member(Board::Best, BoardKey { score: s.best, at: s.best_at, id: s.id });
                let total_member = member(Board::Total, BoardKey { score: s.total, at: 0, id: s.id });
                best.arg(0).arg(&best_member);
                total.arg(0).arg(&total_member);
                players.arg(s.id).arg(format!("{best_member} {total_member} {}", s.plays));
            }
            pipe.add_command(best).add_command(total).add_command(players);
            pipe.query_async::<()>(&mut *conn).await?;
        }
        let mut swap = redis::pipe();
        swap.atomic();
        for name in ["best", "total", "players"] {
            if standings.is_empty() {
                swap.del(self.key(name));
            } else {
                swap.rename(temp(name), self.key(name));
            }
        }
        swap.set(self.key("ready"), 1);
        swap.query_async::<()>(&mut *conn).await?;

        // Posts recorded while the database was being read.
        let log: Vec<String> = conn.lrange(self.key("changes"), 0, -1).await?;
        for entry in log {
            let fields: Vec<&str> = entry.split(' ').collect();
            let [seq, id, best, total, plays] = fields[..] else { continue };
            if seq.parse::<i64>().unwrap_or(0) <= since {
                continue;
            }
            let (Ok(best), Ok(total)) = (parse_member(Board::Best, best), parse_member(Board::Total, total)) else {
                continue;
            };
            let standing = Standing {
                id: id.parse().unwrap_or(best.id),
                best: best.score,
                best_at: best.at,
                total: total.score,
                plays: plays.parse().unwrap_or(0),
            };
            self.apply(standing, false).await?;
        }
        Ok(())
    }

    /// Deletes everything under this prefix (tests).
    pub async fn clear(&self) -> Result<(), SharedError> {
        self.delete_matching("*").await
    }

    /// Deletes the keys under this prefix that match `pattern` (admin
    /// initialize drops cached sessions this way: rare, so `KEYS` will do).
    pub async fn delete_matching(&self, pattern: &str) -> Result<(), SharedError> {
        let mut conn = self.conn().await?;
        let keys: Vec<String> = conn.keys(self.key(pattern)).await?;
        for chunk in keys.chunks(1_000) {
            conn.del::<_, ()>(chunk).await?;
        }
        Ok(())
    }

    /// A key-value cache entry with a time to live (sessions).
    pub async fn cache_get(&self, name: &str) -> Result<Option<String>, SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            Ok(conn.get(self.key(name)).await?)
        })
        .await
    }

    pub async fn cache_set(&self, name: &str, value: &str, ttl: Duration) -> Result<(), SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            conn.pset_ex::<_, _, ()>(self.key(name), value, millis).await?;
            Ok(())
        })
        .await
    }

    pub async fn cache_delete(&self, name: &str) -> Result<(), SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            conn.del::<_, ()>(self.key(name)).await?;
            Ok(())
        })
        .await
    }

    /// Values of several keys in one round trip (`MGET`).
    pub async fn cache_get_many(&self, names: &[String]) -> Result<Vec<Option<String>>, SharedError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        bounded(async {
            let mut conn = self.conn().await?;
            let keys: Vec<String> = names.iter().map(|name| self.key(name)).collect();
            Ok(redis::cmd("MGET").arg(keys).query_async(&mut conn).await?)
        })
        .await
    }

    /// Sets `version|value` under each name unless a higher version is
    /// there already: writers racing each other (or a reader's refill racing
    /// a writer) converge on the newest value. One round trip.
    pub async fn cache_set_versioned(
        &self,
        entries: &[(String, i64, String)],
        ttl: Duration,
    ) -> Result<(), SharedError> {
        if entries.is_empty() {
            return Ok(());
        }
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        bounded(async {
            let mut conn = self.conn().await?;
            let mut pipe = redis::pipe();
            for (name, version, value) in entries {
                pipe.invoke_script(self.versioned_set.key(self.key(name)).arg(*version).arg(value).arg(millis));
            }
            pipe.query_async::<()>(&mut conn).await?;
            Ok(())
        })
        .await
    }

    /// Counts an event in a fixed window: (events so far in this window,
    /// time until it closes). One round trip.
    pub async fn count_in_window(&self, name: &str, window: Duration) -> Result<(i64, Duration), SharedError> {
        let millis = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
        bounded(async {
            let mut conn = self.conn().await?;
            let (count, ttl): (i64, i64) =
                self.window_count.key(self.key(name)).arg(millis).invoke_async(&mut conn).await?;
            Ok((count, Duration::from_millis(u64::try_from(ttl).unwrap_or(0))))
        })
        .await
    }

    /// A counter every instance can watch (the data generation).
    pub async fn counter(&self, name: &str) -> Result<i64, SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            Ok(conn.get::<_, Option<i64>>(self.key(name)).await?.unwrap_or(0))
        })
        .await
    }

    pub async fn bump(&self, name: &str) -> Result<i64, SharedError> {
        bounded(async {
            let mut conn = self.conn().await?;
            Ok(conn.incr(self.key(name), 1).await?)
        })
        .await
    }
}
