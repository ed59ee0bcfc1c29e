//! The open model (`--rate N`): requests leave on a fixed schedule, N per
//! second, whatever the server's answers do to the virtual users. A request
//! whose slot came while every user was still waiting for an answer leaves
//! late, and its latency counts from its slot, not from when it left:
//! coordinated omission corrected (a closed loop hides exactly that wait).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Pacer {
    interval: Duration,
    /// Set while the load phase runs; the quiet and final checks are not paced.
    started: Mutex<Option<Instant>>,
    slots: AtomicU64,
}

impl Pacer {
    pub fn new(per_second: u32) -> Self {
        Self {
            interval: Duration::from_secs(1) / per_second.max(1),
            started: Mutex::new(None),
            slots: AtomicU64::new(0),
        }
    }

    pub fn start(&self) {
        if let Ok(mut started) = self.started.lock() {
            *started = Some(Instant::now());
        }
        self.slots.store(0, Ordering::Relaxed);
    }

    pub fn stop(&self) {
        if let Ok(mut started) = self.started.lock() {
            *started = None;
        }
    }

    /// Waits for the next free slot and returns when it was due (in the
    /// past when the users fell behind); `None` while not pacing.
    pub async fn slot(&self) -> Option<Instant> {
        let started = (*self.started.lock().ok()?)?;
        let slot = self.slots.fetch_add(1, Ordering::Relaxed);
        let due = started + self.interval.saturating_mul(u32::try_from(slot).unwrap_or(u32::MAX));
        tokio::time::sleep_until(due.into()).await;
        Some(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_due_on_the_schedule_and_never_early() {
        let pacer = Pacer::new(1000);
        assert_eq!(pacer.slot().await, None, "not pacing before the load starts");
        pacer.start();
        let first = pacer.slot().await.unwrap();
        for n in 1..20u32 {
            let due = pacer.slot().await.unwrap();
            assert_eq!(due - first, Duration::from_millis(1) * n, "slot {n}");
            assert!(Instant::now() >= due, "a request never leaves before its slot");
        }
        pacer.stop();
        assert_eq!(pacer.slot().await, None);
    }
}
