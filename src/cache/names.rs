//! Display names by user id. A name changes only by a rename (admin or
//! the player): this instance forgets that name at once; other instances
//! see a shared version move (see `usecases::rankings::names`) and start
//! over. Initialize clears everything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

/// Bounded: past `capacity` entries the cache starts over (a ranking page
/// refills it with one query).
pub struct NameCache {
    names: RwLock<HashMap<i64, Arc<str>>>,
    capacity: usize,
    /// The shared names version the entries were read under.
    version: AtomicI64,
}

impl NameCache {
    pub fn new(capacity: usize) -> Self {
        Self { names: RwLock::new(HashMap::new()), capacity, version: AtomicI64::new(0) }
    }

    /// Follows the shared names version: when it moved, every entry may be
    /// stale and goes.
    pub fn follow(&self, version: i64) {
        if self.version.swap(version, Ordering::AcqRel) != version {
            self.clear();
        }
    }

    /// Forgets some players' names (renamed or erased here).
    pub fn forget(&self, ids: &[i64]) {
        if let Ok(mut names) = self.names.write() {
            for id in ids {
                names.remove(id);
            }
        }
    }

    /// The cached names of `ids`, and the ids that were not cached.
    pub fn lookup(&self, ids: &[i64]) -> (HashMap<i64, Arc<str>>, Vec<i64>) {
        let mut found = HashMap::with_capacity(ids.len());
        let mut missing = Vec::new();
        if let Ok(names) = self.names.read() {
            for id in ids {
                match names.get(id) {
                    Some(name) => {
                        found.insert(*id, Arc::clone(name));
                    }
                    None => missing.push(*id),
                }
            }
        }
        (found, missing)
    }

    pub fn insert_many(&self, entries: impl IntoIterator<Item = (i64, Arc<str>)>) {
        if let Ok(mut names) = self.names.write() {
            for (id, name) in entries {
                if names.len() >= self.capacity {
                    names.clear();
                }
                names.insert(id, name);
            }
        }
    }

    pub fn clear(&self) {
        if let Ok(mut names) = self.names.write() {
            names.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_and_reports_the_rest() {
        let cache = NameCache::new(10);
        cache.insert_many([(1, Arc::from("one")), (2, Arc::from("two"))]);
        let (found, missing) = cache.lookup(&[2, 3, 1]);
        assert_eq!(found.get(&1).map(|n| &**n), Some("one"));
        assert_eq!(missing, [3]);
        cache.clear();
        assert_eq!(cache.lookup(&[1]).1, [1]);
    }

    #[test]
    fn stays_bounded() {
        let cache = NameCache::new(3);
        cache.insert_many((0..10).map(|i| (i, Arc::from("x"))));
        assert!(cache.names.read().unwrap().len() <= 3);
    }
}
