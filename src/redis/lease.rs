//! Page leases: how long an instance may serve a kept ranking page on the
//! word of its last check against Redis, without asking again (issue 43:
//! that round trip on every read held shared mode to half of embedded).
//!
//! Exact, not merely fresh enough: a read that begins after a write was
//! answered, on any instance, still shows the write. A reader trusts a
//! check for `length` from the moment it sent it; every instance, before
//! it answers a request that may have changed a board, waits until
//! `length` has passed since its last write to Redis returned. A check
//! sent before the write reached Redis has run out by the time the
//! write's answer leaves; a check sent after it saw the write. Only clock
//! rates matter (each side measures its own interval), never clock
//! readings; every instance must run with the same length.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where a check stands in its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Fresh,
    /// In its second half: the first request to see it has Redis asked
    /// again beside its answer, and every request is still answered, so
    /// that no request waits on a check while the page is read often
    /// (with 1 ms leases that all ran out at once, 75k–90k req/s against
    /// 102k–106k with 4 ms: BENCHMARKS.md, "Page leases").
    Due,
    Over,
}

pub struct PageLease {
    length: Duration,
    /// When this instance's last write to Redis returned, in nanoseconds
    /// after `origin` (0: none yet).
    last_write: AtomicU64,
    origin: Instant,
}

impl PageLease {
    /// Leases of `length`; zero turns them off (every read asks Redis,
    /// and no write waits).
    pub fn new(length: Duration) -> Self {
        Self { length, last_write: AtomicU64::new(0), origin: Instant::now() }
    }

    /// Whether leases are given at all.
    fn is_on(&self) -> bool {
        !self.length.is_zero()
    }

    /// What a check sent at `checked` is worth now: it vouches for its
    /// page for the first half of the length as it is, and for the rest
    /// while one request asks Redis again (see [`Standing::Due`]).
    pub fn standing(&self, checked: Instant) -> Standing {
        let age = checked.elapsed();
        if age >= self.length {
            Standing::Over
        } else if age >= self.length / 2 {
            Standing::Due
        } else {
            Standing::Fresh
        }
    }

    /// Notes a write to Redis that may move a board's stamp: called once
    /// it returned (or failed: it may have reached Redis all the same).
    pub fn wrote(&self) {
        if !self.is_on() {
            return;
        }
        let since = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1);
        self.last_write.fetch_max(since, Ordering::AcqRel);
    }

    /// Waits until every lease another instance took before this
    /// instance's writes so far has run out: before the answer to a
    /// request that may have written.
    pub async fn settle(&self) {
        let last = self.last_write.load(Ordering::Acquire);
        if last == 0 {
            return;
        }
        let until = self.origin + Duration::from_nanos(last) + self.length;
        if until > Instant::now() {
            actix_web::rt::time::sleep_until(until.into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_fresh_for_half_the_length_and_due_for_the_rest() {
        let lease = PageLease::new(Duration::from_secs(60));
        let ago = |secs| Instant::now() - Duration::from_secs(secs);
        assert_eq!(lease.standing(Instant::now()), Standing::Fresh);
        assert_eq!(lease.standing(ago(31)), Standing::Due);
        assert_eq!(lease.standing(ago(61)), Standing::Over);
        assert_eq!(
            PageLease::new(Duration::ZERO).standing(Instant::now()),
            Standing::Over,
            "a zero length holds nothing"
        );
    }

    #[actix_web::test]
    async fn settling_waits_only_after_a_write() {
        use actix_web::rt::time::timeout;
        let lease = PageLease::new(Duration::from_secs(600));
        let settled = timeout(Duration::from_secs(5), lease.settle()).await;
        assert!(settled.is_ok(), "nothing written: nothing to wait for");
        lease.wrote();
        let settled = timeout(Duration::from_millis(200), lease.settle()).await;
        assert!(settled.is_err(), "answered while another instance's lease could still hold");
        let off = PageLease::new(Duration::ZERO);
        off.wrote();
        assert!(timeout(Duration::from_secs(5), off.settle()).await.is_ok(), "no leases: no wait");
    }
}
