//! User rows in Redis, in front of the database, for every instance.
//!
//! Reads are one `MGET` for a whole batch, then one `IN (…)` query for the
//! misses. A score post writes the player's new row through after commit
//! and before answering, so the player reads their own write from any
//! instance. Entries carry `play_count` as a version: a slow refill from the
//! database can never replace a newer row. Keys include the data
//! generation, so an initialize makes every old entry unreachable.
//!
//! There is deliberately no in-process layer for user rows: another
//! instance's post could not invalidate it in time for read-your-writes.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::domain::Timestamp;
use crate::rank::RedisBoard;
use crate::store::UserRow;

/// How long an untouched row stays cached.
const TTL: Duration = Duration::from_secs(300);

pub struct UserCache {
    redis: Arc<RedisBoard>,
    /// The data generation the keys belong to (see the module docs).
    generation: AtomicI64,
}

impl UserCache {
    pub fn new(redis: Arc<RedisBoard>) -> Self {
        Self { redis, generation: AtomicI64::new(0) }
    }

    pub fn set_generation(&self, generation: i64) {
        self.generation.store(generation, Ordering::Release);
    }

    fn name(&self, id: i64) -> String {
        format!("user:{}:{id}", self.generation.load(Ordering::Acquire))
    }

    /// Cached rows of `ids` and the ids that were not cached. Redis trouble
    /// means everything is a miss.
    pub async fn get_many(&self, ids: &[i64]) -> (Vec<UserRow>, Vec<i64>) {
        let names: Vec<String> = ids.iter().map(|id| self.name(*id)).collect();
        let Ok(values) = self.redis.cache_get_many(&names).await else { return (Vec::new(), ids.to_vec()) };
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for (id, value) in ids.iter().zip(values) {
            match value.as_deref().and_then(|v| decode(*id, v)) {
                Some(row) => found.push(row),
                None => missing.push(*id),
            }
        }
        (found, missing)
    }

    /// Stores rows (versioned by play count); failures are only logged.
    pub async fn put_many(&self, rows: &[UserRow]) {
        let entries: Vec<(String, i64, String)> =
            rows.iter().map(|row| (self.name(row.id), row.play_count, encode(row))).collect();
        if let Err(error) = self.redis.cache_set_versioned(&entries, TTL).await {
            tracing::debug!(%error, "user rows not cached");
        }
    }
}

/// Fields joined by tabs: display names cannot hold control characters and
/// login names are `[A-Za-z0-9_.-]`, so a tab never occurs inside one.
fn encode(row: &UserRow) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        row.login_name,
        row.display_name,
        row.best_score,
        row.best_at.map_or(-1, Timestamp::millis),
        row.best_score_id.unwrap_or(-1),
        row.total_score,
        row.play_count,
        row.created_at.millis()
    )
}

/// Reads `version|fields`; `None` for anything malformed (then it is a miss).
fn decode(id: i64, value: &str) -> Option<UserRow> {
    let (_, fields) = value.split_once('|')?;
    let parts: Vec<&str> = fields.split('\t').collect();
    let [login_name, display_name, best, best_at, best_score_id, total, plays, created_at] = parts[..] else {
        return None;
    };
    let number = |text: &str| text.parse::<i64>().ok();
    Some(UserRow {
        id,
        login_name: login_name.to_owned(),
        display_name: display_name.to_owned(),
        best_score: number(best)?,
        best_at: number(best_at).filter(|t| *t >= 0).map(Timestamp::from_millis),
        best_score_id: number(best_score_id).filter(|s| *s >= 0),
        total_score: number(total)?,
        play_count: number(plays)?,
        created_at: Timestamp::from_millis(number(created_at)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let row = UserRow {
            id: 7,
            login_name: "alice_01".into(),
            display_name: "Zoë 🎮 with spaces".into(),
            best_score: 120,
            best_at: Some(Timestamp::from_millis(1_790_000_000_123)),
            best_score_id: Some(99),
            total_score: 400,
            play_count: 3,
            created_at: Timestamp::from_millis(1_780_000_000_000),
        };
        assert_eq!(decode(7, &format!("3|{}", encode(&row))), Some(row.clone()));
        let fresh = UserRow { best_at: None, best_score_id: None, play_count: 0, best_score: 0, total_score: 0, ..row };
        assert_eq!(decode(7, &format!("0|{}", encode(&fresh))), Some(fresh));
        assert_eq!(decode(7, "garbage"), None);
        assert_eq!(decode(7, "1|too\tfew"), None);
    }
}
