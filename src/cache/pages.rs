//! Rendered ranking pages (JSON bytes), each tagged with the rank engine's
//! version when it was built. Any recorded post bumps the version, so a
//! page is served from here only while the board is exactly as it was:
//! invalidation on write, with no timer to tune.

use std::collections::HashMap;
use std::sync::RwLock;

use actix_web::web::Bytes;

use crate::domain::Board;

/// What identifies a page request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub board: Board,
    pub limit: i64,
    /// `o<offset>` or `c<cursor>`.
    pub start: String,
}

/// Used only by a single instance: with several instances (Redis) other
/// instances' posts do not bump the local version, and even a page a few
/// hundred milliseconds old lets "load more" contradict the page before it
/// (the bench caught exactly that), so the shared setup runs with capacity 0.
pub struct PageCache {
    pages: RwLock<HashMap<PageKey, (u64, Bytes)>>,
    /// Pages kept at most; 0 turns the cache off.
    capacity: usize,
}

impl PageCache {
    pub fn new(capacity: usize) -> Self {
        Self { pages: RwLock::new(HashMap::new()), capacity }
    }

    /// The page if it was built at `version`.
    pub fn get(&self, key: &PageKey, version: u64) -> Option<Bytes> {
        let pages = self.pages.read().ok()?;
        pages.get(key).filter(|(built_at, _)| *built_at == version).map(|(_, bytes)| bytes.clone())
    }

    pub fn put(&self, key: PageKey, version: u64, bytes: Bytes) {
        if self.capacity == 0 {
            return;
        }
        if let Ok(mut pages) = self.pages.write() {
            if pages.len() >= self.capacity {
                // Stale versions are worthless; drop them first, everything if need be.
                pages.retain(|_, (built_at, _)| *built_at == version);
                if pages.len() >= self.capacity {
                    pages.clear();
                }
            }
            pages.insert(key, (version, bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: &str) -> PageKey {
        PageKey { board: Board::Best, limit: 10, start: start.to_owned() }
    }

    #[test]
    fn serves_only_the_version_it_was_built_at() {
        let cache = PageCache::new(8);
        cache.put(key("o0"), 5, Bytes::from_static(b"page"));
        assert_eq!(cache.get(&key("o0"), 5).as_deref(), Some(&b"page"[..]));
        assert!(cache.get(&key("o0"), 6).is_none());
        assert!(cache.get(&key("o10"), 5).is_none());
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let cache = PageCache::new(0);
        cache.put(key("o0"), 1, Bytes::from_static(b"page"));
        assert!(cache.get(&key("o0"), 1).is_none());
    }

    #[test]
    fn stays_bounded() {
        let cache = PageCache::new(2);
        for i in 0..10 {
            cache.put(key(&format!("o{i}")), 1, Bytes::new());
        }
        assert!(cache.pages.read().unwrap().len() <= 2);
    }
}
