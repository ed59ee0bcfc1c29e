//! A connection for one call: to one Redis or to a Redis Cluster (each
//! command routed to the master of its key's slot), one multiplexed
//! connection per thread, dropped when a failure leaves it unusable.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use deadpool_redis::cluster::ClusterConnection;
use deadpool_redis::redis::aio::{ConnectionLike, MultiplexedConnection};
use deadpool_redis::redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use deadpool_redis::redis::{self, Cmd, Pipeline, RedisFuture, Value};
use futures_util::future::try_join_all;

use super::RedisResult;

/// A connection to one Redis, or to a Redis Cluster (which routes each
/// command to the master of its key's slot and follows failovers).
#[derive(Clone)]
pub(super) enum Link {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

/// The connection the calls of each thread share, while it works. One per
/// thread: a multiplexed connection's driver task runs where it was made,
/// and a call from another thread would wake that thread twice per round
/// trip (measured: 5.5% of the CPU in `eventfd_write` on a page load).
pub(super) type Shared = Arc<Mutex<HashMap<ThreadId, Link>>>;

/// A connection for one call: its thread's multiplexed connection, which a
/// failure that leaves it unusable drops for the next call to replace.
#[derive(Clone)]
pub struct Connection {
    pub(super) inner: Link,
    pub(super) shared: Shared,
    pub(super) thread: ThreadId,
}

impl Connection {
    /// Runs a pipeline whose commands may name keys of different slots: in
    /// one round trip to one Redis; on a cluster (which refuses a pipeline
    /// across slots) each command on its own, all at once. A transaction
    /// must keep to one slot (one hash tag) and goes as it is. Results of
    /// commands marked `ignore` are kept on a cluster: ask for `()` then.
    pub async fn query<T: redis::FromRedisValue>(&mut self, pipe: &Pipeline) -> RedisResult<T> {
        if matches!(self.inner, Link::Single(_)) || pipe.is_transaction() {
            return Ok(pipe.query_async(self).await?);
        }
        // Commands whose keys share a hash tag share a slot: one pipeline
        // each, found by its tag (a batch at the maxima names thousands).
        let mut groups: Vec<(Pipeline, Vec<usize>)> = Vec::new();
        let mut by_tag: HashMap<&[u8], usize> = HashMap::new();
        for (index, cmd) in pipe.cmd_iter().enumerate() {
            let found = first_key(cmd).map(hash_tag).and_then(|tag| match by_tag.entry(tag) {
                Entry::Occupied(group) => Some(*group.get()),
                Entry::Vacant(new) => {
                    new.insert(groups.len());
                    None
                }
            });
            match found {
                Some(group) => {
                    groups[group].0.add_command(cmd.clone());
                    groups[group].1.push(index);
                }
                None => {
                    let mut group = redis::pipe();
                    group.add_command(cmd.clone());
                    groups.push((group, vec![index]));
                }
            }
        }
        let calls = groups.iter().map(|(group, _)| {
            let mut conn = self.clone();
            async move { group.query_async::<Vec<Value>>(&mut conn).await }
        });
        let answers = try_join_all(calls).await?;
        let mut values = vec![Value::Nil; pipe.cmd_iter().count()];
        for ((_, indices), answer) in groups.iter().zip(answers) {
            for (index, value) in indices.iter().zip(answer) {
                values[*index] = value;
            }
        }
        Ok(redis::from_redis_value(Value::Array(values))?)
    }

    /// One slot of each master of a cluster, for commands every master
    /// must run (a `SCAN`); empty for one Redis. Routed by slot, a command
    /// goes to whichever node the client knows as that slot's master now.
    pub(super) async fn master_slots(&mut self) -> RedisResult<Vec<u16>> {
        if matches!(self.inner, Link::Single(_)) {
            return Ok(Vec::new());
        }
        // Each range: [first slot, last slot, [master host, port, id], replicas…].
        let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(self).await?;
        let mut masters: HashMap<String, u16> = HashMap::new();
        for range in ranges {
            let (Some(first), Some(master)) = (range.first(), range.get(2)) else { continue };
            let first: u16 = redis::from_redis_value(first.clone())?;
            let master: Vec<Value> = redis::from_redis_value(master.clone())?;
            let address = format!("{:?}", &master[..master.len().min(2)]);
            masters.entry(address).or_insert(first);
        }
        Ok(masters.into_values().collect())
    }

    /// Runs a command on the master of `slot` (`None`: as routed).
    pub(super) async fn query_on<T: redis::FromRedisValue>(&mut self, slot: Option<u16>, cmd: &Cmd) -> RedisResult<T> {
        let value = match (&mut self.inner, slot) {
            (Link::Cluster(inner), Some(slot)) => {
                let route = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
                let result = inner.route_command(cmd.clone(), RoutingInfo::SingleNode(route)).await;
                self.check(result)?
            }
            _ => cmd.query_async::<Value>(self).await?,
        };
        Ok(redis::from_redis_value(value)?)
    }

    fn check<T>(&self, result: redis::RedisResult<T>) -> redis::RedisResult<T> {
        if let Err(error) = &result {
            if error.is_io_error() || error.is_connection_dropped() || error.is_unrecoverable_error() {
                if let Ok(mut shared) = self.shared.lock() {
                    shared.remove(&self.thread);
                }
            }
        }
        result
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let result = match &mut self.inner {
                Link::Single(inner) => inner.req_packed_command(cmd).await,
                Link::Cluster(inner) => inner.req_packed_command(cmd).await,
            };
            self.check(result)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let result = match &mut self.inner {
                Link::Single(inner) => inner.req_packed_commands(pipeline, offset, count).await,
                Link::Cluster(inner) => inner.req_packed_commands(pipeline, offset, count).await,
            };
            self.check(result)
        })
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Link::Single(inner) => inner.get_db(),
            Link::Cluster(inner) => inner.get_db(),
        }
    }
}

/// The key a command names first (the slot a cluster sends it to).
fn first_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().filter_map(|arg| match arg {
        redis::Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    let name = args.next()?;
    if name.eq_ignore_ascii_case(b"EVALSHA") || name.eq_ignore_ascii_case(b"EVAL") {
        // EVALSHA sha numkeys key …
        return args.nth(2);
    }
    args.next()
}

/// The part of a key Redis Cluster hashes: the first `{…}` with something
/// inside, else the whole key.
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|b| *b == b'{') else { return key };
    match key[open + 1..].iter().position(|b| *b == b'}') {
        Some(0) | None => key,
        Some(close) => &key[open + 1..open + 1 + close],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_grouped_by_the_hash_tag_redis_cluster_hashes() {
        assert_eq!(hash_tag(b"hs:{builtin}:set:best"), b"builtin");
        assert_eq!(hash_tag(b"hs:{b:7}:ready"), b"b:7");
        assert_eq!(hash_tag(b"hs:user:42"), b"hs:user:42");
        assert_eq!(hash_tag(b"hs:{}:x"), b"hs:{}:x", "an empty tag hashes the whole key");
        assert_eq!(first_key(redis::cmd("GET").arg("k1")), Some(&b"k1"[..]));
        assert_eq!(first_key(redis::cmd("EVALSHA").arg("abc").arg(1).arg("k2").arg("v")), Some(&b"k2"[..]));
        assert_eq!(first_key(&redis::cmd("PING")), None);
    }
}
