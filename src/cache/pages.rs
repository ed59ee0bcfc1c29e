//! Rendered ranking pages (JSON bytes), each tagged with the rank engine's
//! version when it was built. Any recorded post bumps the version, so a
//! page is served from here only while the board is exactly as it was:
//! invalidation on write, with no timer to tune.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

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

pub struct PageCache {
    pages: RwLock<HashMap<PageKey, (u64, Instant, Bytes)>>,
    capacity: usize,
    /// With several instances (Redis), other instances' posts do not bump
    /// the local version: pages then also expire after this long.
    max_age: Option<Duration>,
}

impl PageCache {
    pub fn new(capacity: usize, max_age: Option<Duration>) -> Self {
        Self { pages: RwLock::new(HashMap::new()), capacity, max_age }
    }

    /// The page if it was built at `version` (and is young enough).
    pub fn get(&self, key: &PageKey, version: u64) -> Option<Bytes> {
        let pages = self.pages.read().ok()?;
        let (built_at, at, bytes) = pages.get(key)?;
        let fresh = self.max_age.is_none_or(|max_age| at.elapsed() < max_age);
        (*built_at == version && fresh).then(|| bytes.clone())
    }

    pub fn put(&self, key: PageKey, version: u64, bytes: Bytes) {
        if let Ok(mut pages) = self.pages.write() {
            if pages.len() >= self.capacity {
                // Stale versions are worthless; drop them first, everything if need be.
                pages.retain(|_, (built_at, _, _)| *built_at == version);
                if pages.len() >= self.capacity {
                    pages.clear();
                }
            }
            pages.insert(key, (version, Instant::now(), bytes));
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
        let cache = PageCache::new(8, None);
        cache.put(key("o0"), 5, Bytes::from_static(b"page"));
        assert_eq!(cache.get(&key("o0"), 5).as_deref(), Some(&b"page"[..]));
        assert!(cache.get(&key("o0"), 6).is_none());
        assert!(cache.get(&key("o10"), 5).is_none());
    }

    #[test]
    fn expires_when_given_a_max_age() {
        let cache = PageCache::new(8, Some(Duration::from_millis(20)));
        cache.put(key("o0"), 1, Bytes::from_static(b"page"));
        assert!(cache.get(&key("o0"), 1).is_some());
        std::thread::sleep(Duration::from_millis(30));
        assert!(cache.get(&key("o0"), 1).is_none());
    }

    #[test]
    fn stays_bounded() {
        let cache = PageCache::new(2, None);
        for i in 0..10 {
            cache.put(key(&format!("o{i}")), 1, Bytes::new());
        }
        assert!(cache.pages.read().unwrap().len() <= 2);
    }
}
