//! Each worker thread's own copies of the kept answers it gave by their
//! address (`PageCache::get_by_address`), in front of the shared cache.
//! A kept answer read from the shared cache takes its lock and counts a
//! reference on its body and its tag: three counters both workers write,
//! whose cache lines then move between the cores on every request (issue
//! 43: with two workers a kept page cost ~0.7 µs more a request than with
//! one). A worker's own copy is read with no lock and counted on its own
//! lines. It is served by the same rule as the shared one (its address's
//! term holds, it was built at the version asked) and only while the
//! shared cache has not been cleared since it was copied (its
//! generation): a change the version does not show clears the shared
//! cache (`Caches::renderings_changed`), and so every copy.

use std::cell::RefCell;
use std::collections::HashMap;

use actix_web::http::header::HeaderValue;
use actix_web::web::Bytes;

use super::{AddressClock, AddressTerm, PageVersion, Rendered};

/// Bytes of bodies a worker keeps copies of; past it they start again.
/// A few hundred pages, profiles and windows: what a game asks for by a
/// fixed address.
const BUDGET: usize = 1 << 20;

/// Where a copy came from and what it was served under there.
pub struct Origin {
    /// The shared cache's id (one per `PageCache`: a process may run
    /// several servers, as the tests do).
    pub cache: u64,
    /// The shared cache's count of clears when the copy was taken.
    pub generation: u64,
    pub term: AddressTerm,
    pub version: PageVersion,
}

struct Copy {
    origin: Origin,
    page: Rendered,
}

#[derive(Default)]
struct Copies {
    by_address: HashMap<Box<str>, Copy, foldhash::fast::RandomState>,
    bytes: usize,
}

thread_local! {
    static COPIES: RefCell<Copies> = RefCell::default();
}

/// This thread's copy of the answer at `address`, if it came from `cache`
/// at `generation` and is served by the same rule there.
pub fn get(
    cache: u64,
    generation: u64,
    address: &str,
    clock: &AddressClock,
    version: &PageVersion,
) -> Option<Rendered> {
    COPIES.with_borrow(|copies| {
        let Copy { origin, page } = copies.by_address.get(address)?;
        let current = origin.cache == cache
            && origin.generation == generation
            && origin.version == *version
            && origin.term.holds(clock);
        current.then(|| page.clone())
    })
}

/// Keeps a copy of `page` (its bytes this thread's own) for `address`,
/// and returns it.
pub fn keep(address: &str, origin: Origin, page: &Rendered) -> Rendered {
    let own = Rendered {
        body: Bytes::copy_from_slice(&page.body),
        etag: HeaderValue::from_bytes(page.etag.as_bytes()).unwrap_or_else(|_| page.etag.clone()),
    };
    COPIES.with_borrow_mut(|copies| {
        let size = own.body.len();
        if copies.bytes + size > BUDGET {
            copies.by_address.clear();
            copies.bytes = 0;
        }
        copies.bytes += size;
        let copy = Copy { origin, page: own.clone() };
        if let Some(replaced) = copies.by_address.insert(address.into(), copy) {
            copies.bytes -= replaced.page.body.len();
        }
    });
    own
}
