//! User rows in front of the database, where they can be kept exact: in
//! Redis when instances share it (see `cache::users`), in process on a
//! single instance, whose own writes are the only ones. Every write path
//! brings them up to date before it answers (the score writer after its
//! commit, `account_changes::publish`, an initialize), so a profile is
//! read without a database round trip.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use super::users::UserCache;
use crate::store::UserRow;

/// Rows kept in process at most (about 200 bytes each): the players who
/// read profiles are a small part of the board in practice.
const LOCAL_ROWS: usize = 100_000;

pub enum UserRows {
    /// A single instance: rows in process.
    Local(LocalRows),
    /// Several instances: rows in Redis.
    Shared(UserCache),
}

impl UserRows {
    /// Cached rows of `ids` and the ids that were not cached.
    pub async fn get_many(&self, ids: &[i64]) -> (Vec<UserRow>, Vec<i64>) {
        match self {
            Self::Local(rows) => rows.get_many(ids),
            Self::Shared(cache) => cache.get_many(ids).await,
        }
    }

    /// Stores rows, none over a newer copy of itself.
    pub async fn put_many(&self, rows: &[UserRow]) {
        match self {
            Self::Local(local) => local.put_many(rows),
            Self::Shared(cache) => cache.put_many(rows).await,
        }
    }

    /// An erased player's row: gone, and no older copy can come back.
    pub async fn forget(&self, row: &UserRow) {
        match self {
            Self::Local(local) => local.forget(row),
            Self::Shared(cache) => cache.forget(row).await,
        }
    }

    /// An initialize replaced the data with generation `generation`: rows of
    /// the old data go, and none read before it can come back. (Rows in
    /// Redis carry their generation and readers check it there.)
    pub fn replaced(&self, generation: i64) {
        if let Self::Local(local) = self {
            local.replaced(generation);
        }
    }

    /// On a single instance, how many times the kept rows changed so far:
    /// read before a row, it tags what is built from the row (a kept
    /// profile), which is stale once the count moved.
    pub fn local_changes(&self) -> Option<u64> {
        match self {
            Self::Local(local) => Some(local.changes.load(Ordering::Acquire)),
            Self::Shared(_) => None,
        }
    }
}

/// A row's copy, or the mark an erasure leaves; ordered by the row's data
/// generation, then its version.
struct Kept {
    generation: i64,
    version: i64,
    row: Option<UserRow>,
}

#[derive(Default)]
pub struct LocalRows {
    inner: RwLock<Local>,
    /// Bumped after every change to `inner` (see `UserRows::local_changes`).
    changes: AtomicU64,
}

#[derive(Default)]
struct Local {
    /// The data generation the rows belong to: rows of an older one (a
    /// read that began before an initialize) are not kept.
    generation: i64,
    rows: HashMap<i64, Kept>,
}

impl LocalRows {
    fn get_many(&self, ids: &[i64]) -> (Vec<UserRow>, Vec<i64>) {
        let local = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            match local.rows.get(id) {
                Some(Kept { row: Some(row), .. }) => found.push(row.clone()),
                // Erased: nothing to find in the database either.
                Some(Kept { row: None, .. }) => {}
                None => missing.push(*id),
            }
        }
        (found, missing)
    }

    fn put_many(&self, rows: &[UserRow]) {
        let mut local = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        for row in rows {
            local.keep(row.id, Kept { generation: row.generation, version: row.version, row: Some(row.clone()) });
        }
        self.changed();
    }

    fn forget(&self, row: &UserRow) {
        let mut local = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        local.keep(row.id, Kept { generation: row.generation, version: row.version + 1, row: None });
        self.changed();
    }

    fn replaced(&self, generation: i64) {
        let mut local = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        local.generation = local.generation.max(generation);
        local.rows.clear();
        self.changed();
    }

    /// Counted after the change: a reader that saw the new count reads the
    /// changed rows; one that saw the old count tags what it builds with a
    /// count already gone, so that it is never served.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }
}

impl Local {
    fn keep(&mut self, id: i64, kept: Kept) {
        if kept.generation < self.generation {
            return;
        }
        match self.rows.get(&id) {
            Some(held) if (held.generation, held.version) >= (kept.generation, kept.version) => {}
            Some(_) => {
                self.rows.insert(id, kept);
            }
            None => {
                if self.rows.len() >= LOCAL_ROWS {
                    // Full: start over (constant work per row kept, where
                    // evicting one at a time would scan the table each time);
                    // a miss costs one database read.
                    self.rows.clear();
                }
                self.rows.insert(id, kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Timestamp;

    fn row(id: i64, generation: i64, version: i64, best: i64) -> UserRow {
        UserRow {
            id,
            login_name: format!("p{id}"),
            display_name: format!("P{id}"),
            best_score: best,
            best_at: None,
            best_score_id: None,
            total_score: best,
            play_count: 1,
            created_at: Timestamp::from_millis(0),
            version,
            banned_at: None,
            generation,
        }
    }

    #[test]
    fn an_older_copy_never_replaces_a_newer_one() {
        let rows = LocalRows::default();
        rows.put_many(&[row(1, 0, 5, 50)]);
        rows.put_many(&[row(1, 0, 4, 40)]);
        assert_eq!(rows.get_many(&[1, 2]).0[0].best_score, 50);
        assert_eq!(rows.get_many(&[1, 2]).1, [2]);
        rows.put_many(&[row(1, 0, 6, 60)]);
        assert_eq!(rows.get_many(&[1]).0[0].best_score, 60);
    }

    #[test]
    fn every_change_moves_the_count_of_changes() {
        let rows = UserRows::Local(LocalRows::default());
        let count = || rows.local_changes().expect("a single instance counts");
        let before = count();
        let UserRows::Local(local) = &rows else { unreachable!() };
        local.put_many(&[row(1, 0, 1, 10)]);
        let put = count();
        local.forget(&row(1, 0, 1, 10));
        let forgotten = count();
        rows.replaced(1);
        assert!(before < put && put < forgotten && forgotten < count());
    }

    #[test]
    fn a_full_cache_starts_over() {
        let rows = LocalRows::default();
        let all: Vec<UserRow> = (1..=LOCAL_ROWS as i64).map(|id| row(id, 0, 1, id)).collect();
        rows.put_many(&all);
        assert_eq!(rows.get_many(&[1, LOCAL_ROWS as i64]).0.len(), 2);
        rows.put_many(&[row(0, 0, 1, 0)]);
        assert_eq!(rows.get_many(&[0, 1]), (vec![row(0, 0, 1, 0)], vec![1]));
    }

    #[test]
    fn an_erased_row_stays_gone_and_an_initialize_drops_the_old_data() {
        let rows = LocalRows::default();
        rows.put_many(&[row(1, 0, 5, 50), row(2, 0, 1, 10)]);
        rows.forget(&row(1, 0, 5, 50));
        rows.put_many(&[row(1, 0, 5, 50)]);
        assert_eq!(rows.get_many(&[1]), (Vec::new(), Vec::new()));
        rows.replaced(3);
        assert_eq!(rows.get_many(&[2]).1, [2]);
        // A read from before the initialize comes back too late: not kept.
        rows.put_many(&[row(2, 0, 9, 90)]);
        assert_eq!(rows.get_many(&[2]).1, [2]);
        rows.put_many(&[row(2, 3, 1, 7)]);
        assert_eq!(rows.get_many(&[2]).0[0].best_score, 7);
    }
}
