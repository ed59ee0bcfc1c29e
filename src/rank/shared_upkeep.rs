//! Keeping the boards in Redis right: boards added and forgotten, names
//! changed, the shared state checked, gaps in change numbers healed, and
//! a failure turned into reads from the database until recovery.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::boards::CustomBoard;
use crate::domain::{BoardPeriod, Operator, Timestamp};
use crate::redis::{RedisClient, RedisError};

use super::health::SharedState;
use super::redis_source::Numbering;
use super::{Failed, RankEngine, Shared};

impl RankEngine {
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
    pub(super) fn degrade(&self, shared: &Arc<Shared>, error: &RedisError, failed: Failed) {
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

/// How long a gap in a board's change numbers in Redis may last before the
/// board is rebuilt (see `RankEngine::heal_change_gaps`).
const GAP_GRACE: Duration = Duration::from_secs(5);
