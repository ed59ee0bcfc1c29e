//! Counters written on every request, split in a shard per thread: a
//! counter both worker threads write moves its cache line between the
//! cores on each write, which a cached page, answered in a few
//! microseconds, felt (issue 43). Each thread writes its own shard; a
//! reader sums them (a scrape). The in-flight count of `drain` was tried
//! this way too and measured no faster: it stays one counter.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Shards per counter: threads beyond this many share one (still exact).
pub const SHARDS: usize = 8;

/// A value on cache lines of its own (two lines: adjacent-line prefetch).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

/// The calling thread's shard.
pub fn this_thread() -> usize {
    thread_local! {
        static SHARD: usize = {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
        };
    }
    SHARD.with(|shard| *shard)
}
