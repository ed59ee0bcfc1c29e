//! An instance's stop. Actix runs each HTTP worker on a runtime of its own,
//! and a pooled database connection stays bound to the runtime that opened
//! it (tokio's I/O driver): once a worker stops, every connection it opened
//! fails ("A Tokio 1.x context was found, but it is being shutdown"), in
//! the hands of a request still running on another worker or of the score
//! writer, whose batch then answers 503 `write_failed` (the drain test saw
//! it). So a stop first takes no new connections and waits until no
//! request is in flight while every worker still runs; only then do the
//! workers stop.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Whether the instance drains, and the requests it is answering.
#[derive(Default)]
pub struct Drain {
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
}

impl Drain {
    /// Set when a stop signal came: `/readyz` answers 503 from then on.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub fn begin(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Resolves when no request is in flight, or after `limit`; true when idle.
    pub async fn until_idle(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            loop {
                let idle = self.idle.notified();
                if self.in_flight.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        })
        .await
        .is_ok()
    }

    /// Counts a request in flight until the guard drops (when its
    /// response is ready: see `front`).
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self)
    }
}

/// One request being answered; leaving wakes a drain waiting for idle.
pub struct InFlight<'a>(&'a Drain);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn idle_comes_when_the_last_request_leaves() {
        let drain = std::sync::Arc::new(Drain::default());
        assert!(drain.until_idle(Duration::from_millis(10)).await, "no request: idle at once");
        let request = drain.enter();
        assert!(!drain.until_idle(Duration::from_millis(50)).await, "a request in flight holds it");
        let waiting = {
            let drain = std::sync::Arc::clone(&drain);
            actix_web::rt::spawn(async move { drain.until_idle(Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(request);
        assert!(waiting.await.unwrap(), "its end wakes the waiter");
    }
}
