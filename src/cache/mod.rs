//! Caches in front of the database, never the source of truth: each entry
//! can be rebuilt from the store and the rank engine at any time. In
//! process: rendered pages, windows and profiles, and display names; user
//! rows in process on a single instance, in Redis when instances share it.
//! [`Caches::reset`] is the one place an initialize invalidates them.

mod names;
mod pages;
mod single_flight;
mod user_rows;
mod users;

use std::sync::Arc;

pub use names::NameCache;
pub use pages::{
    AddressClock, AddressTerm, CutoffKey, Leased, PageCache, PageKey, PageVersion, Rendered, Renewal, WindowKey,
};
pub use single_flight::SingleFlight;
pub use user_rows::UserRows;
pub use users::UserCache;

use prometheus::{IntCounter, IntCounterVec};

use crate::redis::RedisClient;

/// Rendered page bodies kept, in bytes (the top pages of both boards in
/// practice; every post makes the rest stale).
const PAGE_CACHE_BYTES: usize = 4 << 20;
/// Rendered cut-off lists kept, in bytes (each is under 1 KB).
const CUTOFF_CACHE_BYTES: usize = 256 << 10;
/// Rendered windows and friends boards kept, in bytes (2 KB to 18 KB each).
const WINDOW_CACHE_BYTES: usize = 4 << 20;
/// Rendered player profiles kept, in bytes (about 230 each).
const PROFILE_CACHE_BYTES: usize = 2 << 20;
/// Display names kept in memory: about 10 MB at most.
const NAME_CACHE_ENTRIES: usize = 200_000;

/// How a ranking page was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageOutcome {
    /// A kept page, still exact.
    Hit,
    /// Read from the rank engine (and kept).
    Miss,
    /// The result of another request's read, begun after this one arrived.
    Shared,
}

/// Every cache of one instance.
pub struct Caches {
    /// Rendered ranking pages, each kept with what it was built at (see
    /// [`PageCache`]).
    pub pages: PageCache,
    /// Pages served per [`PageOutcome`] (in its order), for `/metrics`:
    /// the series looked up once, not by label on every page served.
    page_outcomes: [IntCounter; 3],
    /// One read per page at a time, shared by the requests that arrived
    /// before it began (a hot page under load).
    pub page_reads: SingleFlight<PageKey, Option<Rendered>>,
    /// Rendered cut-off lists of a single instance, kept like pages (with
    /// Redis every request reads them: no stamp names them there).
    pub cutoffs: PageCache<CutoffKey>,
    /// Rendered around-me windows and friends boards of a single instance,
    /// kept like pages.
    pub windows: PageCache<WindowKey>,
    /// Rendered player profiles of a single instance, each kept at the
    /// rank engine's version and the user rows' count of changes.
    pub profiles: PageCache<i64>,
    /// Display names for ranking pages (they never change once registered).
    pub names: NameCache,
    /// User rows: in process, or in Redis for every instance when Redis is
    /// configured.
    pub users: UserRows,
}

impl Caches {
    pub fn new(redis: Option<Arc<RedisClient>>, page_outcomes: IntCounterVec) -> Self {
        Self {
            pages: PageCache::new(PAGE_CACHE_BYTES),
            page_outcomes: ["hit", "miss", "shared"].map(|label| page_outcomes.with_label_values(&[label])),
            page_reads: SingleFlight::new(),
            cutoffs: PageCache::new(CUTOFF_CACHE_BYTES),
            windows: PageCache::new(WINDOW_CACHE_BYTES),
            profiles: PageCache::new(PROFILE_CACHE_BYTES),
            names: NameCache::new(NAME_CACHE_ENTRIES),
            users: match redis {
                Some(redis) => UserRows::Shared(UserCache::new(redis)),
                None => UserRows::Local(Default::default()),
            },
        }
    }

    pub fn count_page(&self, outcome: PageOutcome) {
        let index = match outcome {
            PageOutcome::Hit => 0,
            PageOutcome::Miss => 1,
            PageOutcome::Shared => 2,
        };
        self.page_outcomes[index].inc();
    }

    /// Forgets everything cached in process about the data that an
    /// initialize replaced with `generation` (user rows in Redis carry
    /// their generation and need nothing: see `cache::users`).
    pub fn reset(&self, generation: i64) {
        self.users.replaced(generation);
        self.names.clear();
        self.renderings_changed();
    }

    /// Forgets every rendered answer: for a change the rank engine's
    /// version does not show (a period that ended, a board deleted, a
    /// player renamed or banned).
    pub fn renderings_changed(&self) {
        self.pages.clear();
        self.cutoffs.clear();
        self.windows.clear();
        self.profiles.clear();
    }
}
