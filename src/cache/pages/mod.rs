//! Rendered ranking pages (JSON bytes and their entity tag, computed once
//! when the page is built), each tagged with what it was built
//! at: the rank engine's version on a single instance (any recorded post
//! bumps it), or with Redis the board's stamp there, which the next
//! request checks in the round trip that would otherwise read the page. A page is served from here only while its board
//! is exactly as it was: invalidation on write, with no timer to tune.

mod worker_copies;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use actix_web::http::header::HeaderValue;
use actix_web::web::Bytes;
use sha2::{Digest, Sha256};

use crate::domain::{BoardPeriod, Hundredths, Timestamp};
use crate::rank::PageStart;
use crate::redis::{PageLease, Standing};
use worker_copies::Origin;

/// What identifies a page request: parsed values, so that `0`, `00` and
/// `+0` are one entry, not three.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub board: BoardPeriod,
    pub limit: i64,
    pub start: PageStart,
}

/// What identifies a cut-off list (`/cutoffs`): the board's period and the
/// percents, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CutoffKey {
    pub board: BoardPeriod,
    pub percents: Vec<Hundredths>,
}

/// What identifies a player's window (around-me) or a friends board, kept
/// by a single instance like a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WindowKey {
    Around { board: BoardPeriod, user_id: i64, radius: i64 },
    Friends { board: BoardPeriod, ids: Vec<i64> },
}

/// What a page was built at; it is served only at exactly the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageVersion {
    /// The local rank engine's version (a single instance).
    Local(u64),
    /// With Redis: the board's stamp there (which a rename moves too).
    Shared(Arc<str>),
    /// A single instance's player profile: the rank engine's version (its
    /// ranks) and the count of changes to the kept user rows (its row),
    /// both read before the profile was.
    Profile { ranks: u64, rows: u64 },
}

/// A rendered page and its entity tag: a digest of the body and of the
/// board's version when it was read, so it changes whenever the page or
/// its board changes (a change anywhere on the board, even below the
/// page), and a client polling with `If-None-Match` gets 304 until then.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    /// As a header value: a served copy is a reference, not a new string
    /// checked again on each answer.
    pub etag: HeaderValue,
}

impl Rendered {
    /// A page built at `version`, tagged by it and its bytes: computed once
    /// per built page (a kept copy keeps its tag), and the same on every
    /// instance for the same board state where Redis names that state.
    pub fn new(body: Bytes, version: &PageVersion) -> Self {
        let mut digest = Sha256::new();
        match version {
            PageVersion::Local(version) => digest.update(version.to_le_bytes()),
            PageVersion::Shared(stamp) => digest.update(stamp.as_bytes()),
            PageVersion::Profile { ranks, rows } => {
                digest.update(ranks.to_le_bytes());
                digest.update(rows.to_le_bytes());
            }
        }
        digest.update(&body);
        let hex: String = digest.finalize()[..10].iter().map(|byte| format!("{byte:02x}")).collect();
        let etag = HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex digits in quotes are a header value");
        Self { body, etag }
    }

    /// A body kept for an answer served without an entity tag (cut-off
    /// lists, friends boards): no digest to compute.
    pub fn untagged(body: Bytes) -> Self {
        Self { body, etag: HeaderValue::from_static("") }
    }
}

/// With several instances (Redis) other instances' posts do not bump the
/// local version, and even a page a few hundred milliseconds old lets
/// "load more" contradict the page before it (the bench caught exactly
/// that): there a page is served only after Redis said its board is still
/// at the page's stamp, or while that word holds under a [`PageLease`].
pub struct PageCache<K = PageKey> {
    pages: RwLock<Pages<K>>,
    /// This cache's id among the process's, and its count of clears: what
    /// a worker's own copy of an answer is checked against
    /// (`worker_copies`).
    id: u64,
    generation: AtomicU64,
    /// What kept pages' checks are counted from (`Kept::checked`).
    origin: Instant,
    /// Bytes of page bodies kept at most (pages run from ~0.3 KB to ~13 KB,
    /// so a byte budget, not an entry count, is what bounds memory); 0
    /// turns the cache off.
    budget: usize,
}

/// Addresses remembered at most (each a path and query, under 200 bytes):
/// enough for every page a game asks for by a fixed address; past it the
/// map starts again, and an address forgotten is answered by the router.
const MAX_ADDRESSES: usize = 1024;

/// For how long a remembered address names the key it named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressTerm {
    /// Whatever the time and the board catalog: a built-in board's page or
    /// window, a profile.
    Always,
    /// While the board catalog has had no change since `catalog` changes
    /// (`boards::Registry::changes`: the board not amended, deleted or
    /// replaced) and, if the board's period in force ends, until it does:
    /// a custom board's (or partition's) page or window, whose address
    /// names the period in force, or one counted back from it.
    While { catalog: u64, ends_at: Option<Timestamp> },
}

/// What a remembered address's term is checked against: the board
/// catalog's count of changes, and the time, `at` when given, else read
/// from the clock only for a term that ends (most kept answers' terms do
/// not, and a clock read is a measurable part of a kept answer's cost).
#[derive(Debug, Clone, Copy)]
pub struct AddressClock {
    pub catalog: u64,
    pub at: Option<Timestamp>,
}

impl AddressTerm {
    pub(super) fn holds(&self, clock: &AddressClock) -> bool {
        match self {
            Self::Always => true,
            Self::While { catalog, ends_at } => {
                *catalog == clock.catalog && ends_at.is_none_or(|end| clock.at.unwrap_or_else(Timestamp::now) < end)
            }
        }
    }
}

/// A kept page, what it was built at, and with Redis when Redis was last
/// asked whether its board still is, and whether a renewal of that word
/// is under way (see [`Standing::Due`]). Both are atomics, changed under
/// the read lock: a renewal, every half lease, stalls no reader (issue 43).
struct Kept {
    version: PageVersion,
    page: Rendered,
    /// Nanoseconds after the cache's `origin`; 0 for never.
    checked: AtomicU64,
    renewing: AtomicBool,
}

impl Kept {
    fn new(version: PageVersion, page: Rendered) -> Self {
        Self { version, page, checked: AtomicU64::new(0), renewing: AtomicBool::new(false) }
    }

    /// The page while its lease holds; when the lease is due, the first
    /// asker also gets the stamp to renew it with (once: later askers get
    /// the page only).
    fn leased<K: Clone>(&self, key: &K, lease: &PageLease, origin: Instant) -> Option<Leased<K>> {
        let checked = match self.checked.load(Ordering::Acquire) {
            0 => return None,
            nanos => origin + Duration::from_nanos(nanos),
        };
        let renew = match lease.standing(checked) {
            Standing::Fresh => false,
            Standing::Due => !self.renewing.swap(true, Ordering::AcqRel),
            Standing::Over => return None,
        };
        let renewal = match &self.version {
            PageVersion::Shared(stamp) if renew => Some(Renewal { key: key.clone(), stamp: Arc::clone(stamp) }),
            _ => None,
        };
        Some(Leased { page: self.page.clone(), renewal })
    }
}

/// A page served under its lease, and, for the one request that found
/// the lease due, what to ask Redis to renew it: the request is answered
/// from the page all the same (the lease still holds), and the renewal
/// runs beside it (`usecases::rankings::renew_lease`), so that no request
/// waits on one (issue 43: the request that renewed in line held a
/// connection of sixteen through a round trip every millisecond).
pub struct Leased<K = PageKey> {
    pub page: Rendered,
    pub renewal: Option<Renewal<K>>,
}

/// A due lease's page and the stamp it was built at: see [`Leased`].
pub struct Renewal<K = PageKey> {
    pub key: K,
    pub stamp: Arc<str>,
}

/// The maps of kept answers, hashed with foldhash (seeded per process)
/// rather than SipHash: a kept read hashes its address, up to a friends
/// board's hundred ids, and its key on every request (issue 43).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

struct Pages<K> {
    by_key: Map<K, Kept>,
    bytes: usize,
    /// Keys by the request address (path and query) that named them, and
    /// for how long: see [`PageCache::remember_address`].
    by_address: Map<Box<str>, (K, AddressTerm)>,
}

impl<K> Pages<K> {
    /// The key a remembered address names, while its term holds.
    fn named_by(&self, address: &str, clock: &AddressClock) -> Option<&K> {
        let (key, term) = self.by_address.get(address)?;
        term.holds(clock).then_some(key)
    }
}

impl<K> Default for Pages<K> {
    fn default() -> Self {
        Self { by_key: Map::default(), bytes: 0, by_address: Map::default() }
    }
}

impl<K: Clone + Eq + std::hash::Hash> PageCache<K> {
    pub fn new(budget: usize) -> Self {
        static CACHES: AtomicU64 = AtomicU64::new(0);
        let id = CACHES.fetch_add(1, Ordering::Relaxed);
        // An hour back, so that a check dated before the cache was made
        // (as tests date them) still counts.
        let origin = Instant::now().checked_sub(Duration::from_secs(3600)).unwrap_or_else(Instant::now);
        Self { pages: RwLock::new(Pages::default()), id, generation: AtomicU64::new(0), budget, origin }
    }

    /// The page if it was built at `version`.
    pub fn get(&self, key: &K, version: &PageVersion) -> Option<Rendered> {
        let pages = self.pages.read().ok()?;
        let kept = pages.by_key.get(key)?;
        (kept.version == *version).then(|| kept.page.clone())
    }

    /// The page if Redis, asked while `lease` still holds, said its board
    /// was at the page's stamp (see [`PageCache::checked`]), with what to
    /// renew the lease with when it is due (see [`Leased`]).
    pub fn leased(&self, key: &K, lease: &PageLease) -> Option<Leased<K>> {
        self.pages.read().ok()?.by_key.get(key)?.leased(key, lease, self.origin)
    }

    /// The page a remembered address names, if it is leased: as
    /// [`PageCache::get_by_address`], with Redis, and as
    /// [`PageCache::leased`].
    pub fn leased_by_address(&self, address: &str, clock: &AddressClock, lease: &PageLease) -> Option<Leased<K>> {
        let pages = self.pages.read().ok()?;
        let key = pages.named_by(address, clock)?;
        pages.by_key.get(key)?.leased(key, lease, self.origin)
    }

    /// Notes that Redis, asked at `at`, said `key`'s board is at `version`:
    /// the kept page holds under a lease from then, if it is of that version.
    pub fn checked(&self, key: &K, version: &PageVersion, at: Instant) {
        if let Ok(pages) = self.pages.read() {
            if let Some(kept) = pages.by_key.get(key).filter(|kept| kept.version == *version) {
                let nanos = u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX);
                kept.checked.fetch_max(nanos.max(1), Ordering::AcqRel);
                kept.renewing.store(false, Ordering::Release);
            }
        }
    }

    /// The page a remembered address names, if it was built at `version`:
    /// how `front` answers a kept page before the router, its extractors
    /// and its handler run (issue 43), by the same version check as
    /// [`PageCache::get`], from the worker's own copy of it when it has
    /// one (`worker_copies`).
    pub fn get_by_address(&self, address: &str, clock: &AddressClock, version: &PageVersion) -> Option<Rendered> {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(own) = worker_copies::get(self.id, generation, address, clock, version) {
            return Some(own);
        }
        let pages = self.pages.read().ok()?;
        let (key, term) = pages.by_address.get(address)?;
        let kept = pages.by_key.get(key).filter(|kept| term.holds(clock) && kept.version == *version)?;
        // Read under the lock, as `clear` moves it: the copy is of this generation's page.
        let generation = self.generation.load(Ordering::Acquire);
        let origin = Origin { cache: self.id, generation, term: *term, version: version.clone() };
        Some(worker_copies::keep(address, origin, &kept.page))
    }

    /// Remembers that `address` names `key` for `term` (see
    /// `usecases::rankings::address_term`): what it names is checked by
    /// version like any kept answer, and once the term is over the address
    /// goes through the router again, which remembers it anew.
    pub fn remember_address(&self, address: &str, key: &K, term: AddressTerm) {
        let known =
            |pages: &Pages<K>| pages.by_address.get(address).is_some_and(|(named, kept)| named == key && *kept == term);
        if self.budget == 0 || self.pages.read().is_ok_and(|pages| known(&pages)) {
            return;
        }
        if let Ok(mut pages) = self.pages.write() {
            if pages.by_address.len() >= MAX_ADDRESSES {
                pages.by_address.clear();
            }
            pages.by_address.insert(address.into(), (key.clone(), term));
        }
    }

    /// The page kept for `key` and what it was built at, whatever that is.
    pub fn entry(&self, key: &K) -> Option<(PageVersion, Rendered)> {
        let pages = self.pages.read().ok()?;
        let kept = pages.by_key.get(key)?;
        Some((kept.version.clone(), kept.page.clone()))
    }

    /// Bytes of page bodies held.
    pub fn bytes(&self) -> usize {
        self.pages.read().map_or(0, |pages| pages.bytes)
    }

    /// Drops every page, and every worker's copy of one.
    pub fn clear(&self) {
        if let Ok(mut pages) = self.pages.write() {
            *pages = Pages::default();
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub fn put(&self, key: K, version: PageVersion, page: Rendered) {
        let size = page.body.len();
        if self.budget == 0 || size > self.budget {
            return;
        }
        if let Ok(mut pages) = self.pages.write() {
            let pages = &mut *pages;
            if pages.bytes + size > self.budget {
                // Pages of other versions are likely stale; drop them first, everything if need be.
                pages.by_key.retain(|_, kept| kept.version == version);
                pages.bytes = pages.by_key.values().map(|kept| kept.page.body.len()).sum();
                if pages.bytes + size > self.budget {
                    pages.by_key.clear();
                    pages.bytes = 0;
                }
            }
            pages.bytes += size;
            if let Some(replaced) = pages.by_key.insert(key, Kept::new(version, page)) {
                pages.bytes -= replaced.page.body.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &'static [u8]) -> Rendered {
        Rendered::new(Bytes::from_static(body), &PageVersion::Local(0))
    }

    fn key(offset: i64) -> PageKey {
        PageKey { board: BoardPeriod::builtin(crate::domain::Board::Best), limit: 10, start: PageStart::Offset(offset) }
    }

    #[test]
    fn serves_only_the_version_it_was_built_at() {
        let cache = PageCache::new(8);
        cache.put(key(0), PageVersion::Local(5), page(b"page"));
        assert_eq!(cache.get(&key(0), &PageVersion::Local(5)).map(|page| page.body), Some(Bytes::from_static(b"page")));
        assert!(cache.get(&key(0), &PageVersion::Local(6)).is_none());
        assert!(cache.get(&key(10), &PageVersion::Local(5)).is_none());
        cache.put(key(0), shared("e:7"), page(b"page"));
        assert!(cache.get(&key(0), &shared("e:7")).is_some());
        assert!(cache.get(&key(0), &shared("e:8")).is_none(), "a change makes it stale");
        assert!(cache.get(&key(0), &shared("f:7")).is_none(), "so does a rebuild");
    }

    /// A request's clock: no catalog change, the time given.
    fn at(now: i64) -> AddressClock {
        AddressClock { catalog: 0, at: Some(Timestamp::from_millis(now)) }
    }

    #[test]
    fn an_address_finds_its_page_at_the_page_version_only() {
        let cache = PageCache::new(1 << 10);
        let top = "/api/rankings/best?limit=10";
        cache.remember_address(top, &key(0), AddressTerm::Always);
        assert!(cache.get_by_address(top, &at(0), &PageVersion::Local(5)).is_none(), "nothing kept yet");
        cache.put(key(0), PageVersion::Local(5), page(b"page"));
        let found = cache.get_by_address(top, &at(0), &PageVersion::Local(5)).map(|page| page.body);
        assert_eq!(found, Some(Bytes::from_static(b"page")));
        assert!(cache.get_by_address(top, &at(0), &PageVersion::Local(6)).is_none(), "stale once the board moved");
        assert!(cache.get_by_address("/api/rankings/best?limit=010", &at(0), &PageVersion::Local(5)).is_none());
        cache.clear();
        assert!(cache.get_by_address(top, &at(0), &PageVersion::Local(5)).is_none(), "nor this worker's copy");
        // A change the version does not show (a rename) clears the cache:
        // the page rebuilt at the same version is served, not the copy.
        cache.remember_address(top, &key(0), AddressTerm::Always);
        cache.put(key(0), PageVersion::Local(5), page(b"renamed"));
        let found = cache.get_by_address(top, &at(0), &PageVersion::Local(5)).map(|page| page.body);
        assert_eq!(found, Some(Bytes::from_static(b"renamed")));
        // Past the limit the addresses start again, the last one kept.
        for i in 0..=MAX_ADDRESSES {
            cache.remember_address(&format!("/api/rankings/best?offset={i}"), &key(i as i64), AddressTerm::Always);
        }
        assert!(cache.pages.read().unwrap().by_address.len() <= MAX_ADDRESSES);
        let last = format!("/api/rankings/best?offset={MAX_ADDRESSES}");
        cache.put(key(MAX_ADDRESSES as i64), PageVersion::Local(7), page(b"last"));
        assert!(cache.get_by_address(&last, &at(0), &PageVersion::Local(7)).is_some());
    }

    #[test]
    fn a_custom_boards_address_names_its_page_until_the_catalog_changes_or_the_period_ends() {
        let cache = PageCache::new(1 << 10);
        let runs = "/api/rankings/runs?limit=10";
        let term = AddressTerm::While { catalog: 3, ends_at: Some(Timestamp::from_millis(1_000)) };
        cache.remember_address(runs, &key(0), term);
        cache.put(key(0), PageVersion::Local(5), page(b"period 0"));
        let clock = AddressClock { catalog: 3, at: Some(Timestamp::from_millis(999)) };
        assert!(cache.get_by_address(runs, &clock, &PageVersion::Local(5)).is_some());
        let ended = AddressClock { at: Some(Timestamp::from_millis(1_000)), ..clock };
        assert!(cache.get_by_address(runs, &ended, &PageVersion::Local(5)).is_none(), "the address names period 1 now");
        let amended = AddressClock { catalog: 4, ..clock };
        assert!(cache.get_by_address(runs, &amended, &PageVersion::Local(5)).is_none(), "the board may be another");
        // The routed request remembers the address anew, for its new term.
        let next = AddressTerm::While { catalog: 4, ends_at: Some(Timestamp::from_millis(2_000)) };
        cache.remember_address(runs, &key(1), next);
        cache.put(key(1), PageVersion::Local(5), page(b"period 1"));
        let found = cache.get_by_address(
            runs,
            &AddressClock { catalog: 4, at: Some(Timestamp::from_millis(1_000)) },
            &PageVersion::Local(5),
        );
        assert_eq!(found.map(|page| page.body), Some(Bytes::from_static(b"period 1")));
        // A board that never resets: only the catalog ends the term.
        cache.remember_address(runs, &key(0), AddressTerm::While { catalog: 4, ends_at: None });
        let later = AddressClock { catalog: 4, at: Some(Timestamp::from_millis(i64::MAX)) };
        assert!(cache.get_by_address(runs, &later, &PageVersion::Local(5)).is_some());
    }

    fn shared(stamp: &str) -> PageVersion {
        PageVersion::Shared(Arc::from(stamp))
    }

    fn ago(secs: u64) -> Instant {
        Instant::now() - std::time::Duration::from_secs(secs)
    }

    #[test]
    fn a_page_is_leased_from_a_check_of_its_own_stamp_only() {
        let cache = PageCache::new(1 << 10);
        let lease = PageLease::new(std::time::Duration::from_secs(60));
        cache.put(key(0), shared("e:7"), page(b"page"));
        assert!(cache.leased(&key(0), &lease).is_none(), "built, but not yet vouched for");
        cache.checked(&key(0), &shared("e:6"), Instant::now());
        assert!(cache.leased(&key(0), &lease).is_none(), "a check of another stamp vouches for nothing");
        cache.checked(&key(0), &shared("e:7"), Instant::now());
        assert_eq!(cache.leased(&key(0), &lease).map(|leased| leased.page.body), Some(Bytes::from_static(b"page")));
        cache.checked(&key(0), &shared("e:7"), ago(120));
        assert!(cache.leased(&key(0), &lease).is_some(), "an older check does not shorten a newer one");
        cache.put(key(0), shared("e:8"), page(b"next"));
        assert!(cache.leased(&key(0), &lease).is_none(), "a page built again needs a check of its own");
        cache.checked(&key(0), &shared("e:8"), ago(120));
        assert!(cache.leased(&key(0), &lease).is_none(), "run out");
    }

    #[test]
    fn one_request_renews_a_due_lease_and_every_one_is_answered() {
        let cache = PageCache::new(1 << 10);
        let lease = PageLease::new(std::time::Duration::from_secs(60));
        let top = "/api/rankings/best?limit=10";
        let renews = |leased: Option<Leased>| leased.expect("answered while the lease holds").renewal.is_some();
        cache.remember_address(top, &key(0), AddressTerm::Always);
        cache.put(key(0), shared("e:7"), page(b"page"));
        // A check's time set as it is, not as `checked` keeps the latest.
        let checked_at = |at: Instant| {
            let nanos = at.duration_since(cache.origin).as_nanos();
            cache.pages.read().unwrap().by_key[&key(0)].checked.store(u64::try_from(nanos).unwrap(), Ordering::Release);
        };
        cache.checked(&key(0), &shared("e:7"), Instant::now());
        assert!(!renews(cache.leased_by_address(top, &at(0), &lease)), "fresh: nothing to renew");
        checked_at(ago(40));
        let renewal = cache.leased_by_address(top, &at(0), &lease).and_then(|leased| leased.renewal);
        let renewal = renewal.expect("due: the first request to see it renews it");
        assert_eq!((renewal.key, &*renewal.stamp), (key(0), "e:7"), "with the stamp its page was built at");
        assert!(!renews(cache.leased(&key(0), &lease)), "the others are answered, and renew nothing");
        assert!(!renews(cache.leased_by_address(top, &at(0), &lease)), "before the router too");
        cache.checked(&key(0), &shared("e:7"), Instant::now());
        assert!(!renews(cache.leased(&key(0), &lease)), "renewed: fresh again");
        checked_at(ago(40));
        assert!(renews(cache.leased(&key(0), &lease)), "due again: renewed again");
        // A renewal that never comes back: the lease holds to its end only.
        checked_at(ago(61));
        assert!(cache.leased(&key(0), &lease).is_none());
        assert!(cache.leased_by_address(top, &at(0), &lease).is_none());
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let cache = PageCache::new(0);
        cache.put(key(0), PageVersion::Local(1), page(b"page"));
        assert!(cache.get(&key(0), &PageVersion::Local(1)).is_none());
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = PageCache::new(100);
        for i in 0..50 {
            let body = Bytes::from(vec![b'x'; 5 + i as usize]);
            cache.put(key(i % 7), PageVersion::Local((i / 10) as u64), Rendered::new(body, &PageVersion::Local(0)));
            let pages = cache.pages.read().unwrap();
            let held: usize = pages.by_key.values().map(|kept| kept.page.body.len()).sum();
            assert_eq!(pages.bytes, held, "the running total matches after put {i}");
            assert!(held <= 100, "{held} bytes held after put {i}");
        }
        let large = Rendered::new(Bytes::from(vec![b'x'; 101]), &PageVersion::Local(0));
        cache.put(key(999), PageVersion::Local(9), large);
        assert!(cache.get(&key(999), &PageVersion::Local(9)).is_none(), "a page larger than the budget is not kept");
    }
}
