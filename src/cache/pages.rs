//! Rendered ranking pages (JSON bytes), each tagged with the rank engine's
//! version when it was built. Any recorded post bumps the version, so a
//! page is served from here only while the board is exactly as it was:
//! invalidation on write, with no timer to tune.

use std::collections::HashMap;
use std::sync::RwLock;

use actix_web::web::Bytes;

use crate::domain::{BoardKey, BoardPeriod};

/// What identifies a page request: parsed values, so that `0`, `00` and
/// `+0` are one entry, not three.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub board: BoardPeriod,
    pub limit: i64,
    pub start: PageStart,
}

/// Where a page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageStart {
    Offset(i64),
    /// After a cursor's key.
    After(BoardKey),
}

/// Used only by a single instance: with several instances (Redis) other
/// instances' posts do not bump the local version, and even a page a few
/// hundred milliseconds old lets "load more" contradict the page before it
/// (the bench caught exactly that), so the shared setup runs with capacity 0.
pub struct PageCache {
    pages: RwLock<Pages>,
    /// Bytes of page bodies kept at most (pages run from ~0.3 KB to ~13 KB,
    /// so a byte budget, not an entry count, is what bounds memory); 0
    /// turns the cache off.
    budget: usize,
}

#[derive(Default)]
struct Pages {
    by_key: HashMap<PageKey, (u64, Bytes)>,
    bytes: usize,
}

impl PageCache {
    pub fn new(budget: usize) -> Self {
        Self { pages: RwLock::default(), budget }
    }

    /// The page if it was built at `version`.
    pub fn get(&self, key: &PageKey, version: u64) -> Option<Bytes> {
        let pages = self.pages.read().ok()?;
        pages.by_key.get(key).filter(|(built_at, _)| *built_at == version).map(|(_, bytes)| bytes.clone())
    }

    /// Drops every page.
    pub fn clear(&self) {
        if let Ok(mut pages) = self.pages.write() {
            *pages = Pages::default();
        }
    }

    pub fn put(&self, key: PageKey, version: u64, bytes: Bytes) {
        if self.budget == 0 || bytes.len() > self.budget {
            return;
        }
        if let Ok(mut pages) = self.pages.write() {
            let pages = &mut *pages;
            if pages.bytes + bytes.len() > self.budget {
                // Stale versions are worthless; drop them first, everything if need be.
                pages.by_key.retain(|_, (built_at, _)| *built_at == version);
                pages.bytes = pages.by_key.values().map(|(_, body)| body.len()).sum();
                if pages.bytes + bytes.len() > self.budget {
                    pages.by_key.clear();
                    pages.bytes = 0;
                }
            }
            pages.bytes += bytes.len();
            if let Some((_, replaced)) = pages.by_key.insert(key, (version, bytes)) {
                pages.bytes -= replaced.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: i64) -> PageKey {
        PageKey { board: BoardPeriod::builtin(crate::domain::Board::Best), limit: 10, start: PageStart::Offset(offset) }
    }

    #[test]
    fn serves_only_the_version_it_was_built_at() {
        let cache = PageCache::new(8);
        cache.put(key(0), 5, Bytes::from_static(b"page"));
        assert_eq!(cache.get(&key(0), 5).as_deref(), Some(&b"page"[..]));
        assert!(cache.get(&key(0), 6).is_none());
        assert!(cache.get(&key(10), 5).is_none());
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let cache = PageCache::new(0);
        cache.put(key(0), 1, Bytes::from_static(b"page"));
        assert!(cache.get(&key(0), 1).is_none());
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = PageCache::new(100);
        for i in 0..50 {
            cache.put(key(i % 7), (i / 10) as u64, Bytes::from(vec![b'x'; 5 + i as usize]));
            let pages = cache.pages.read().unwrap();
            let held: usize = pages.by_key.values().map(|(_, body)| body.len()).sum();
            assert_eq!(pages.bytes, held, "the running total matches after put {i}");
            assert!(held <= 100, "{held} bytes held after put {i}");
        }
        cache.put(key(999), 9, Bytes::from(vec![b'x'; 101]));
        assert!(cache.get(&key(999), 9).is_none(), "a page larger than the budget is not kept");
    }
}
