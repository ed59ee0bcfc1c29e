//! User rows in Redis, in front of the database, for every instance.
//!
//! Reads are one `MGET` for a whole batch, then one `IN (…)` query for the
//! misses. A score post writes the player's new row through after commit
//! and before answering, so the player reads their own write from any
//! instance. Entries are versioned by the data generation of the database
//! snapshot they were read in (bumped by every initialize, in the same
//! transaction as the new data) and then the row's `version`: a slow refill from
//! the database can never replace a newer row, nor a row of replaced data a
//! row of the new data. Readers fetch the current generation (the copy in
//! Redis, raised before an initialize wipes anything) in the same `MGET`
//! and ignore entries of any other: a row of replaced data is a miss, never
//! an answer.
//!
//! There is deliberately no in-process layer in front of it: another
//! instance's post could not invalidate it in time for read-your-writes
//! (a single instance keeps its rows in process instead: `cache::user_rows`).

use std::sync::Arc;
use std::time::Duration;

use crate::domain::Timestamp;
use crate::redis::RedisClient;
use crate::store::UserRow;

/// How long an untouched row stays cached.
const TTL: Duration = Duration::from_secs(300);

pub struct UserCache {
    redis: Arc<RedisClient>,
}

impl UserCache {
    pub fn new(redis: Arc<RedisClient>) -> Self {
        Self { redis }
    }

    /// Cached rows of `ids` and the ids that were not cached. Redis trouble
    /// (or a Redis not trusted since, see [`RedisClient::is_trusted`])
    /// means everything is a miss.
    pub async fn get_many(&self, ids: &[i64]) -> (Vec<UserRow>, Vec<i64>) {
        if !self.redis.is_trusted() {
            return (Vec::new(), ids.to_vec());
        }
        let keys = self.redis.keys();
        let names: Vec<String> =
            std::iter::once(keys.data_generation()).chain(ids.iter().map(|id| keys.user_row(*id))).collect();
        let Ok(mut values) = self.redis.get_many(&names).await else { return (Vec::new(), ids.to_vec()) };
        let generation = values.first().cloned().flatten().and_then(|g| g.parse::<i64>().ok()).unwrap_or(0);
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for (id, value) in ids.iter().zip(values.drain(1..)) {
            match value.as_deref().and_then(|v| decode(*id, generation, v)) {
                Some(row) => found.push(row),
                None => missing.push(*id),
            }
        }
        (found, missing)
    }

    /// Stores rows (versioned by the row's version); failures are only logged.
    pub async fn put_many(&self, rows: &[UserRow]) {
        let entries: Vec<(String, String, String)> = rows
            .iter()
            .map(|row| (self.redis.keys().user_row(row.id), version(row.generation, row.version), encode(row)))
            .collect();
        self.set(&entries).await;
    }

    /// Marks an erased player's row as gone, above every version it had: a
    /// refill read before the erasure cannot bring it back (readers take
    /// the mark for a miss and find nothing in the database).
    pub async fn forget(&self, row: &UserRow) {
        let entry = (self.redis.keys().user_row(row.id), version(row.generation, row.version + 1), String::new());
        self.set(&[entry]).await;
    }

    async fn set(&self, entries: &[(String, String, String)]) {
        if let Err(error) = self.redis.set_versioned(entries, TTL).await {
            // An older copy may be left behind: believe none until recovered.
            tracing::debug!(%error, "user rows not cached in Redis");
            self.redis.distrust();
        }
    }
}

/// An entry's version: generation, then the row's version, as fixed-width
/// hex (compared as text by the set script).
fn version(generation: i64, row_version: i64) -> String {
    format!("{:012x}{:016x}", generation.max(0), row_version.max(0))
}

/// Fields joined by tabs: display names cannot hold control characters and
/// login names are `[A-Za-z0-9_.-]`, so a tab never occurs inside one.
fn encode(row: &UserRow) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        row.login_name,
        row.display_name,
        row.best_score,
        row.best_at.map_or(-1, Timestamp::millis),
        row.best_score_id.unwrap_or(-1),
        row.total_score,
        row.play_count,
        row.created_at.millis(),
        row.version,
        row.banned_at.map_or(-1, Timestamp::millis),
    )
}

/// Reads `version|fields` of `generation`; `None` for another generation
/// or anything malformed (then it is a miss).
fn decode(id: i64, generation: i64, value: &str) -> Option<UserRow> {
    let (version, fields) = value.split_once('|')?;
    if !version.starts_with(&format!("{:012x}", generation.max(0))) {
        return None;
    }
    let parts: Vec<&str> = fields.split('\t').collect();
    let [login_name, display_name, best, best_at, best_score_id, total, plays, created_at, row_version, banned_at] =
        parts[..]
    else {
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
        version: number(row_version)?,
        banned_at: number(banned_at).filter(|t| *t >= 0).map(Timestamp::from_millis),
        generation,
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
            generation: 2,
            total_score: 400,
            play_count: 3,
            created_at: Timestamp::from_millis(1_780_000_000_000),
            version: 5,
            banned_at: Some(Timestamp::from_millis(1_790_000_000_999)),
        };
        assert_eq!(decode(7, 2, &format!("{}|{}", version(2, 3), encode(&row))), Some(row.clone()));
        let fresh = UserRow {
            best_at: None,
            best_score_id: None,
            play_count: 0,
            best_score: 0,
            total_score: 0,
            generation: 0,
            version: 0,
            banned_at: None,
            ..row.clone()
        };
        assert_eq!(decode(7, 0, &format!("{}|{}", version(0, 0), encode(&fresh))), Some(fresh));
        assert_eq!(decode(7, 1, &format!("{}|{}", version(2, 3), encode(&row))), None, "another generation");
        assert_eq!(decode(7, 0, "garbage"), None);
        assert_eq!(decode(7, 2, &format!("{}|", version(2, 6))), None, "an erased player's mark");
        assert_eq!(decode(7, 0, &format!("{}|too\tfew", version(0, 1))), None);
        assert!(version(1, 0) > version(0, 99) && version(1, 10) > version(1, 9));
    }
}
