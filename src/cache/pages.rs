//! Rendered ranking pages (JSON bytes), each tagged with what it was built
//! at: the rank engine's version on a single instance (any recorded post
//! bumps it), or with Redis the board's stamp there, which the next
//! request checks in the round trip that would otherwise read the page. A page is served from here only while its board
//! is exactly as it was: invalidation on write, with no timer to tune.

use std::collections::HashMap;
use std::sync::RwLock;

use actix_web::web::Bytes;

use std::sync::Arc;

use crate::domain::BoardPeriod;
use crate::rank::PageStart;

/// What identifies a page request: parsed values, so that `0`, `00` and
/// `+0` are one entry, not three.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub board: BoardPeriod,
    pub limit: i64,
    pub start: PageStart,
}

/// What a page was built at; it is served only at exactly the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageVersion {
    /// The local rank engine's version (a single instance).
    Local(u64),
    /// With Redis: the board's stamp there (which a rename moves too).
    Shared(Arc<str>),
}

/// With several instances (Redis) other instances' posts do not bump the
/// local version, and even a page a few hundred milliseconds old lets
/// "load more" contradict the page before it (the bench caught exactly
/// that): there a page is served only after Redis said its board is still
/// at the page's stamp.
pub struct PageCache {
    pages: RwLock<Pages>,
    /// Bytes of page bodies kept at most (pages run from ~0.3 KB to ~13 KB,
    /// so a byte budget, not an entry count, is what bounds memory); 0
    /// turns the cache off.
    budget: usize,
}

#[derive(Default)]
struct Pages {
    by_key: HashMap<PageKey, (PageVersion, Bytes)>,
    bytes: usize,
}

impl PageCache {
    pub fn new(budget: usize) -> Self {
        Self { pages: RwLock::default(), budget }
    }

    /// The page if it was built at `version`.
    pub fn get(&self, key: &PageKey, version: &PageVersion) -> Option<Bytes> {
        self.entry(key).filter(|(built_at, _)| built_at == version).map(|(_, bytes)| bytes)
    }

    /// The page kept for `key` and what it was built at, whatever that is.
    pub fn entry(&self, key: &PageKey) -> Option<(PageVersion, Bytes)> {
        self.pages.read().ok()?.by_key.get(key).cloned()
    }

    /// Bytes of page bodies held.
    pub fn bytes(&self) -> usize {
        self.pages.read().map_or(0, |pages| pages.bytes)
    }

    /// Drops every page.
    pub fn clear(&self) {
        if let Ok(mut pages) = self.pages.write() {
            *pages = Pages::default();
        }
    }

    pub fn put(&self, key: PageKey, version: PageVersion, bytes: Bytes) {
        if self.budget == 0 || bytes.len() > self.budget {
            return;
        }
        if let Ok(mut pages) = self.pages.write() {
            let pages = &mut *pages;
            if pages.bytes + bytes.len() > self.budget {
                // Pages of other versions are likely stale; drop them first, everything if need be.
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
        cache.put(key(0), PageVersion::Local(5), Bytes::from_static(b"page"));
        assert_eq!(cache.get(&key(0), &PageVersion::Local(5)).as_deref(), Some(&b"page"[..]));
        assert!(cache.get(&key(0), &PageVersion::Local(6)).is_none());
        assert!(cache.get(&key(10), &PageVersion::Local(5)).is_none());
        let shared = |stamp: &str| PageVersion::Shared(Arc::from(stamp));
        cache.put(key(0), shared("e:7"), Bytes::from_static(b"page"));
        assert!(cache.get(&key(0), &shared("e:7")).is_some());
        assert!(cache.get(&key(0), &shared("e:8")).is_none(), "a change makes it stale");
        assert!(cache.get(&key(0), &shared("f:7")).is_none(), "so does a rebuild");
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let cache = PageCache::new(0);
        cache.put(key(0), PageVersion::Local(1), Bytes::from_static(b"page"));
        assert!(cache.get(&key(0), &PageVersion::Local(1)).is_none());
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = PageCache::new(100);
        for i in 0..50 {
            cache.put(key(i % 7), PageVersion::Local((i / 10) as u64), Bytes::from(vec![b'x'; 5 + i as usize]));
            let pages = cache.pages.read().unwrap();
            let held: usize = pages.by_key.values().map(|(_, body)| body.len()).sum();
            assert_eq!(pages.bytes, held, "the running total matches after put {i}");
            assert!(held <= 100, "{held} bytes held after put {i}");
        }
        cache.put(key(999), PageVersion::Local(9), Bytes::from(vec![b'x'; 101]));
        assert!(cache.get(&key(999), &PageVersion::Local(9)).is_none(), "a page larger than the budget is not kept");
    }
}
