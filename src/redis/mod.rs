//! The Redis client every part of hiscore shares: one deadpool pool, the
//! key prefix ([`Keys`]), a timeout on every call, and the general
//! operations (cached values, versioned values, counters, rate windows).
//!
//! The pool's connections are multiplexed (any number of concurrent calls
//! share one socket), so a call does not check one out each time: every
//! call uses one connection taken from the pool, until it fails, when the
//! next call takes a fresh one. A checkout costs a round trip (deadpool
//! sends `UNWATCH` and `PING` to recycle the connection).
//! The boards' sorted sets are the rank engine's (`rank::redis`), built on
//! the connections this client hands out.
//!
//! Redis is never the source of truth: every caller survives an error here
//! by asking the database instead.

mod connection;
mod keys;
mod lease;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_redis::redis::{self, AsyncCommands as _, Script};
use deadpool_redis::{Config, Pool, PoolConfig, Runtime, Timeouts};
use futures_util::future::try_join_all;

pub use self::connection::Connection;
use self::connection::{Link, Shared};
pub use self::keys::{BoardGroupKeys, Keys};
pub use self::lease::{PageLease, Standing};
pub use deadpool_redis::redis::{pipe, Cmd, Pipeline, Value};

/// Every Redis call is bounded: a hung Redis must not hang requests.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("redis pool: {0}")]
    Pool(#[from] deadpool_redis::PoolError),
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    /// The data a read needs is not built (Redis restarted or was flushed).
    #[error("the data in Redis is not built (Redis restarted or flushed)")]
    NotReady,
    #[error("unexpected answer from Redis: {0}")]
    Protocol(String),
    /// A write failed or the masters changed: Redis may be out of step with
    /// the database until a recovery.
    #[error("Redis may have missed writes (a failed write or a failover)")]
    Untrusted,
    /// A walk began at changes Redis has not all recorded yet (they were
    /// committed a moment ago, or the walk began on the database): this
    /// read goes to the database, and nothing is wrong with Redis.
    #[error("Redis has not recorded every change a walk began after")]
    BehindWalk,
}

impl From<redis::ParsingError> for RedisError {
    fn from(error: redis::ParsingError) -> Self {
        Self::Protocol(error.to_string())
    }
}

pub type RedisResult<T> = Result<T, RedisError>;

/// Runs a Redis future with the timeout.
pub async fn bounded<T>(future: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
    tokio::time::timeout(REDIS_TIMEOUT, future).await.map_err(|_| RedisError::Timeout(REDIS_TIMEOUT))?
}

// The scripts, each documented at its top (KEYS and ARGV).
const VERSIONED_SET: &str = include_str!("lua/versioned_set.lua");
const WINDOW_COUNT: &str = include_str!("lua/window_count.lua");
const UNCOUNT: &str = include_str!("lua/uncount.lua");
const RAISE: &str = include_str!("lua/raise.lua");

/// Where connections come from.
enum Pools {
    Single(Pool),
    Cluster(deadpool_redis::cluster::Pool),
}

/// The node URLs of a `redis+cluster://[user:password@]host:port,host:port,…`
/// (or `rediss+cluster://`, with TLS) URL: any reachable nodes; the client
/// discovers the rest. `None` for a URL of one Redis.
fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    let (scheme, rest) = url.split_once("+cluster://")?;
    let (credentials, hosts) = match rest.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), rest),
    };
    let hosts = hosts.split('/').next().unwrap_or_default();
    Some(
        hosts
            .split(',')
            .filter(|host| !host.is_empty())
            .map(|host| format!("{scheme}://{credentials}{host}"))
            .collect(),
    )
}

pub struct RedisClient {
    pools: Pools,
    /// Writes that failed in transit (or failovers seen), and how many of
    /// them the last recovery covered: see [`RedisClient::is_trusted`].
    failures: AtomicU64,
    recovered: AtomicU64,
    /// What the last check saw of the masters (see [`RedisClient::topology`]).
    topology: Mutex<Option<String>>,
    shared: Shared,
    keys: Keys,
    page_lease: PageLease,
    versioned_set: Script,
    window_count: Script,
    uncount: Script,
    raise: Script,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// This instance's clock in milliseconds since the Unix epoch (scores of
/// members that expire one by one; instances' clocks agree well enough for
/// times counted in days).
fn unix_millis() -> u64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

impl RedisClient {
    pub fn new(url: &str, prefix: &str, max_connections: usize) -> anyhow::Result<Self> {
        let timeouts =
            Timeouts { wait: Some(REDIS_TIMEOUT), create: Some(REDIS_TIMEOUT), recycle: Some(REDIS_TIMEOUT) };
        let pool_config = PoolConfig { max_size: max_connections, timeouts, ..PoolConfig::default() };
        let pools = match cluster_nodes(url) {
            Some(nodes) => {
                anyhow::ensure!(!nodes.is_empty(), "a redis+cluster:// URL names no node");
                let mut config = deadpool_redis::cluster::Config::from_urls(nodes);
                // Discovering the cluster takes a few round trips.
                let timeouts = Timeouts { create: Some(REDIS_TIMEOUT * 4), ..timeouts };
                config.pool = Some(PoolConfig { timeouts, ..pool_config });
                Pools::Cluster(config.create_pool(Some(Runtime::Tokio1))?)
            }
            None => {
                let mut config = Config::from_url(url);
                config.pool = Some(pool_config);
                Pools::Single(config.create_pool(Some(Runtime::Tokio1))?)
            }
        };
        Ok(Self {
            pools,
            failures: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
            topology: Mutex::new(None),
            shared: Shared::default(),
            keys: Keys::new(prefix),
            page_lease: PageLease::new(Duration::ZERO),
            versioned_set: Script::new(VERSIONED_SET),
            window_count: Script::new(WINDOW_COUNT),
            uncount: Script::new(UNCOUNT),
            raise: Script::new(RAISE),
        })
    }

    /// Leases of `length` on kept pages (see [`PageLease`]; none unless
    /// set).
    #[must_use]
    pub fn with_page_lease(self, length: Duration) -> Self {
        Self { page_lease: PageLease::new(length), ..self }
    }

    /// How this deployment's keys are spelled.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub fn page_lease(&self) -> &PageLease {
        &self.page_lease
    }

    /// Whether the cached copies in Redis (sessions, user rows, boards) can
    /// be believed. Not after a write failed in transit (a session's
    /// tombstone, a user row may be missing) or a failover (a dead master
    /// may have acknowledged writes its replica never got), until the rank
    /// engine's recovery has rebuilt the boards from the database and
    /// dropped the cached copies ([`RedisClient::recovered_from`]).
    pub fn is_trusted(&self) -> bool {
        self.failures.load(Ordering::Acquire) == self.recovered.load(Ordering::Acquire)
    }

    /// Notes a failure that may have left Redis out of step with the database.
    pub fn distrust(&self) {
        self.failures.fetch_add(1, Ordering::AcqRel);
    }

    /// The failures so far: a recovery that begins now covers these.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// A recovery begun after `failures` failures has put everything right.
    pub fn recovered_from(&self, failures: u64) {
        self.recovered.fetch_max(failures, Ordering::AcqRel);
    }

    /// Checks who the masters are (a cluster: their node ids; one Redis:
    /// its run id, new at every start) and distrusts Redis when that
    /// changed since the last check: a failover or a restart happened.
    pub async fn check_topology(&self) -> RedisResult<()> {
        let topology = bounded(async {
            let mut conn = self.conn().await?;
            if matches!(conn.inner, Link::Single(_)) {
                let info: String = redis::cmd("INFO").arg("server").query_async(&mut conn).await?;
                return Ok(info.lines().find(|line| line.starts_with("run_id:")).unwrap_or_default().to_owned());
            }
            let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut conn).await?;
            let mut masters = Vec::new();
            for range in ranges {
                let master: Vec<Value> =
                    range.get(2).cloned().map(redis::from_redis_value).transpose()?.unwrap_or_default();
                masters.push(format!("{:?}-{:?}", range.first(), master.get(2)));
            }
            masters.sort();
            Ok(masters.join(","))
        })
        .await?;
        let Ok(mut seen) = self.topology.lock() else { return Ok(()) };
        if seen.as_ref().is_some_and(|seen| *seen != topology) {
            tracing::warn!("the Redis masters changed (a failover or a restart)");
            self.distrust();
        }
        *seen = Some(topology);
        Ok(())
    }

    /// This thread's connection, or a fresh one from the pool when it has
    /// none (callers wrap their use in [`bounded`]).
    pub async fn conn(&self) -> RedisResult<Connection> {
        let thread = std::thread::current().id();
        let current = self.shared.lock().ok().and_then(|shared| shared.get(&thread).cloned());
        let inner = match current {
            Some(inner) => inner,
            None => {
                let fresh = match &self.pools {
                    Pools::Single(pool) => Link::Single(deadpool_redis::Connection::take(pool.get().await?)),
                    Pools::Cluster(pool) => Link::Cluster(deadpool_redis::cluster::Connection::take(pool.get().await?)),
                };
                if let Ok(mut shared) = self.shared.lock() {
                    shared.insert(thread, fresh.clone());
                }
                fresh
            }
        };
        Ok(Connection { inner, shared: Arc::clone(&self.shared), thread })
    }

    /// Drops every thread's shared connection: the next call of each takes
    /// a fresh one from the pool. A cluster connection whose calls only time
    /// out after a failover is wedged on its old map of the slots (seen: a
    /// ready check timing out every time for 40 s while the cluster was
    /// fine); a fresh one asks the nodes again.
    pub fn reconnect(&self) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.clear();
        }
    }

    /// A cached value.
    pub async fn get(&self, key: &str) -> RedisResult<Option<String>> {
        bounded(async { Ok(self.conn().await?.get(key).await?) }).await
    }

    /// Caches a value for `ttl`.
    pub async fn set(&self, key: &str, value: &str, ttl: Duration) -> RedisResult<()> {
        bounded(async { Ok(self.conn().await?.pset_ex(key, value, millis(ttl)).await?) }).await
    }

    /// Caches a value for `ttl` unless the key holds one: `false` then.
    pub async fn set_if_absent(&self, key: &str, value: &str, ttl: Duration) -> RedisResult<bool> {
        bounded(async {
            let set: Option<String> = redis::cmd("SET")
                .arg(key)
                .arg(value)
                .arg("NX")
                .arg("PX")
                .arg(millis(ttl))
                .query_async(&mut self.conn().await?)
                .await?;
            Ok(set.is_some())
        })
        .await
    }

    /// Sets one value under several keys for `ttl`, in one round trip.
    pub async fn set_many(&self, keys: &[String], value: &str, ttl: Duration) -> RedisResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.pset_ex(key, value, millis(ttl)).ignore();
        }
        bounded(async { self.conn().await?.query(&pipe).await }).await
    }

    pub async fn delete(&self, key: &str) -> RedisResult<()> {
        bounded(async { Ok(self.conn().await?.del(key).await?) }).await
    }

    /// Deletes several keys in one round trip.
    pub async fn delete_many(&self, keys: &[String]) -> RedisResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        bounded(async { Ok(self.conn().await?.del(keys).await?) }).await
    }

    /// Adds one to a counter; returns the new value.
    pub async fn increment(&self, key: &str) -> RedisResult<i64> {
        bounded(async { Ok(self.conn().await?.incr(key, 1).await?) }).await
    }

    /// Values of several keys in one round trip (`MGET`).
    pub async fn get_many(&self, keys: &[String]) -> RedisResult<Vec<Option<String>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        bounded(async { Ok(redis::cmd("MGET").arg(keys).query_async(&mut self.conn().await?).await?) }).await
    }

    /// Sets `version|value` under each key unless a higher version is there
    /// already (versions are texts of one width, compared as text): writers
    /// racing each other (or a reader's refill racing a writer) converge on
    /// the newest value. One round trip.
    pub async fn set_versioned(&self, entries: &[(String, String, String)], ttl: Duration) -> RedisResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let ttl = millis(ttl);
        bounded(async {
            let mut conn = self.conn().await?;
            if matches!(conn.inner, Link::Cluster(_)) {
                // The keys spread over the slots: one script call each, all at once.
                let calls = entries.iter().map(|(key, version, value)| {
                    let mut conn = conn.clone();
                    async move {
                        let mut invocation = self.versioned_set.key(key);
                        invocation.arg(version).arg(value).arg(ttl);
                        invocation.invoke_async::<i64>(&mut conn).await
                    }
                });
                try_join_all(calls).await?;
                return Ok(());
            }
            let mut pipe = redis::pipe();
            for (key, version, value) in entries {
                pipe.invoke_script(self.versioned_set.key(key).arg(version).arg(value).arg(ttl));
            }
            query_with_scripts::<()>(&mut conn, &pipe, &[&self.versioned_set]).await
        })
        .await
    }

    /// Counts an event in a fixed window: (events so far in this window,
    /// time until it closes). One round trip.
    pub async fn count_in_window(&self, key: &str, window: Duration) -> RedisResult<(i64, Duration)> {
        bounded(async {
            let mut conn = self.conn().await?;
            let (count, ttl): (i64, i64) =
                self.window_count.key(key).arg(millis(window)).invoke_async(&mut conn).await?;
            Ok((count, Duration::from_millis(u64::try_from(ttl).unwrap_or(0))))
        })
        .await
    }

    /// Takes back an event [`Self::count_in_window`] counted, while its
    /// window is open.
    pub async fn uncount_in_window(&self, key: &str) -> RedisResult<()> {
        bounded(async { Ok(self.uncount.key(key).invoke_async(&mut self.conn().await?).await?) }).await
    }

    /// Sets a key that only says "yes", for `ttl`.
    pub async fn mark(&self, key: &str, ttl: Duration) -> RedisResult<()> {
        bounded(async { Ok(self.conn().await?.pset_ex(key, "1", millis(ttl)).await?) }).await
    }

    /// Whether a key is there.
    pub async fn is_marked(&self, key: &str) -> RedisResult<bool> {
        bounded(async { Ok(self.conn().await?.exists(key).await?) }).await
    }

    /// Notes `member` in the sorted set at `key` until `ttl` from now,
    /// drops the members whose time is over and all but the `kept` latest,
    /// and lets the key expire with its newest member. One round trip.
    pub async fn remember_member(&self, key: &str, member: &str, ttl: Duration, kept: usize) -> RedisResult<()> {
        let now = unix_millis();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .zadd(key, member, now + millis(ttl))
            .ignore()
            .zrembyscore(key, "-inf", now)
            .ignore()
            .zremrangebyrank(key, 0, -(kept as isize) - 1)
            .ignore()
            .pexpire(key, millis(ttl) as i64)
            .ignore();
        bounded(async { self.conn().await?.query(&pipe).await }).await
    }

    /// Whether `member` of the sorted set at `key` (see [`Self::remember_member`])
    /// still counts.
    pub async fn is_current_member(&self, key: &str, member: &str) -> RedisResult<bool> {
        let until: Option<u64> = bounded(async { Ok(self.conn().await?.zscore(key, member).await?) }).await?;
        Ok(until.is_some_and(|until| until > unix_millis()))
    }

    /// Adds `member` to the set at `key`, which expires `ttl` from now at
    /// the earliest. One round trip.
    pub async fn add_to_set(&self, key: &str, member: &str, ttl: Duration) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic().sadd(key, member).ignore().pexpire(key, millis(ttl) as i64).ignore();
        bounded(async { self.conn().await?.query(&pipe).await }).await
    }

    /// The members of the set at `key`.
    pub async fn set_members(&self, key: &str) -> RedisResult<Vec<String>> {
        bounded(async { Ok(self.conn().await?.smembers(key).await?) }).await
    }

    /// A counter every instance can watch (0 when unset).
    pub async fn counter(&self, key: &str) -> RedisResult<i64> {
        bounded(async { Ok(self.conn().await?.get::<_, Option<i64>>(key).await?.unwrap_or(0)) }).await
    }

    /// Raises a counter to `value` unless it is higher already; returns it.
    pub async fn raise(&self, key: &str, value: i64) -> RedisResult<i64> {
        bounded(async { Ok(self.raise.key(key).arg(value).invoke_async(&mut self.conn().await?).await?) }).await
    }

    /// Unlinks every key matching `pattern`, walking the keyspace with
    /// `SCAN` (never `KEYS`, which blocks Redis for the whole walk), on
    /// every master of a cluster.
    pub async fn delete_matching(&self, pattern: &str) -> RedisResult<u64> {
        let mut conn = self.conn().await?;
        let masters = bounded(conn.master_slots()).await?;
        let nodes: Vec<Option<u16>> =
            if masters.is_empty() { vec![None] } else { masters.into_iter().map(Some).collect() };
        let mut deleted = 0;
        for node in nodes {
            let mut cursor: u64 = 0;
            loop {
                let scan = redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(1_000).clone();
                let (next, keys): (u64, Vec<String>) = bounded(conn.query_on(node, &scan)).await?;
                if !keys.is_empty() {
                    deleted += keys.len() as u64;
                    // A cluster splits a many-key UNLINK by slot.
                    bounded(async { Ok(redis::cmd("UNLINK").arg(&keys).query_async::<()>(&mut conn).await?) }).await?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }
}

/// Runs a pipeline that invokes scripts by hash (`EVALSHA`). A pipeline
/// does not load a script Redis lacks (after a restart or `SCRIPT FLUSH`),
/// so on `NOSCRIPT` the scripts are loaded and the pipeline sent once more.
pub async fn query_with_scripts<T: redis::FromRedisValue>(
    conn: &mut Connection,
    pipe: &Pipeline,
    scripts: &[&Script],
) -> RedisResult<T> {
    match pipe.query_async(conn).await {
        Err(error) if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            for script in scripts {
                script.prepare_invoke().load_async(conn).await?;
            }
            Ok(pipe.query_async(conn).await?)
        }
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The logout race, forced: a request read a session from the database,
    /// the session ended (its key now holds a tombstone), then the request
    /// caches what it read. The fill must not bring the session back.
    #[tokio::test]
    async fn a_late_fill_never_replaces_a_tombstone() {
        let Some(url) = std::env::var("TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
            eprintln!("note: TEST_REDIS_URL is not set: the Redis client test is SKIPPED");
            return;
        };
        let redis = RedisClient::new(&url, &format!("hiscore-unit-{:016x}", rand::random::<u64>()), 1).unwrap();
        let key = redis.keys().session("a-token-hash");
        let ttl = Duration::from_secs(5);
        assert!(redis.set_if_absent(&key, "7", ttl).await.unwrap(), "an absent key is filled");
        redis.set_many(std::slice::from_ref(&key), "-", ttl).await.unwrap();
        assert!(!redis.set_if_absent(&key, "7", ttl).await.unwrap(), "the late fill is refused");
        assert_eq!(redis.get(&key).await.unwrap().as_deref(), Some("-"));
        redis.delete_matching(&redis.keys().everything()).await.unwrap();
    }
}
