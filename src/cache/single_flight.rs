//! One load per key at a time, shared by the callers that arrived before
//! it began: concurrent requests for one page wait for a single read
//! instead of all doing the same work (a stampede on a hot page). A load
//! that began before a caller arrived is never shared with it (it may have
//! read the board before a post that caller must see): the caller waits
//! for it to end, and then every caller that arrived meanwhile shares the
//! next load. Under load, one read serves all the requests that arrived
//! during the read before it; a caller waits at most two loads.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

/// A load under way: the ticket taken when it began, and its result.
type Flight<V> = (u64, Arc<OnceCell<V>>);

pub struct SingleFlight<K, V> {
    in_flight: Mutex<HashMap<K, Flight<V>>>,
    /// Orders arrivals and beginnings of loads.
    tickets: AtomicU64,
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    pub fn new() -> Self {
        Self { in_flight: Mutex::new(HashMap::new()), tickets: AtomicU64::new(0) }
    }

    /// A caller's arrival, taken before it looks at anything it may load.
    pub fn arrive(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::SeqCst)
    }

    /// Runs `load` unless a load of `key` that began after `arrived` is
    /// under way (or just done), in which case its result is shared.
    /// Returns the result and whether this caller's `load` produced it.
    pub async fn run<F, Fut>(&self, key: K, arrived: u64, load: F) -> (V, bool)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        // A load under way that began before this caller arrived: wait for
        // its end without taking its result (its own caller may be gone,
        // then the wait ends at once).
        loop {
            let stale = match self.in_flight.lock() {
                Ok(in_flight) => in_flight
                    .get(&key)
                    .filter(|(began, cell)| *began <= arrived && !cell.initialized())
                    .map(|(_, cell)| Arc::clone(cell)),
                Err(_) => None,
            };
            let Some(stale) = stale else { break };
            let abandoned = stale.get_or_try_init(|| async { Err::<V, ()>(()) }).await.is_err();
            if abandoned {
                // Its caller went away before a result: nobody will finish
                // it, so it goes (else this loop would find it again).
                if let Ok(mut in_flight) = self.in_flight.lock() {
                    if in_flight.get(&key).is_some_and(|(_, cell)| Arc::ptr_eq(cell, &stale)) {
                        in_flight.remove(&key);
                    }
                }
            }
        }
        let cell = match self.in_flight.lock() {
            Ok(mut in_flight) => match in_flight.get(&key) {
                Some((began, cell)) if *began > arrived => Arc::clone(cell),
                _ => {
                    let cell = Arc::new(OnceCell::new());
                    // The ticket is taken before `load` starts, so every
                    // caller that shares it arrived before the load began.
                    in_flight.insert(key.clone(), (self.arrive(), Arc::clone(&cell)));
                    cell
                }
            },
            // A poisoned map only costs the sharing.
            Err(_) => Arc::new(OnceCell::new()),
        };
        let mut loaded = false;
        let value = cell
            .get_or_init(|| {
                loaded = true;
                load()
            })
            .await
            .clone();
        if let Ok(mut in_flight) = self.in_flight.lock() {
            if in_flight.get(&key).is_some_and(|(_, current)| Arc::ptr_eq(current, &cell)) {
                in_flight.remove(&key);
            }
        }
        (value, loaded)
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Default for SingleFlight<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[tokio::test]
    async fn concurrent_callers_share_one_load() {
        let flight: Arc<SingleFlight<&str, usize>> = Arc::new(SingleFlight::new());
        let loads = Arc::new(AtomicUsize::new(0));
        let arrived = flight.arrive();
        let calls = (0..10).map(|_| {
            let (flight, loads) = (Arc::clone(&flight), Arc::clone(&loads));
            tokio::spawn(async move {
                flight
                    .run("page", arrived, || async {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        loads.fetch_add(1, Ordering::SeqCst) + 100
                    })
                    .await
            })
        });
        let results: Vec<(usize, bool)> =
            futures_util::future::join_all(calls).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(results.iter().all(|(value, _)| *value == 100));
        assert_eq!(results.iter().filter(|(_, loaded)| *loaded).count(), 1);
        // Once done, the next call loads again.
        assert_eq!(flight.run("page", flight.arrive(), || async { 7 }).await, (7, true));
    }

    #[tokio::test]
    async fn a_caller_after_an_abandoned_load_loads_for_itself() {
        let flight: Arc<SingleFlight<&str, usize>> = Arc::new(SingleFlight::new());
        let abandoned = {
            let flight = Arc::clone(&flight);
            let arrived = flight.arrive();
            tokio::spawn(async move {
                flight
                    .run("page", arrived, || async {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        1
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let arrived = flight.arrive();
        abandoned.abort();
        let late = tokio::time::timeout(Duration::from_secs(5), flight.run("page", arrived, || async { 2 })).await;
        assert_eq!(late.expect("no endless wait for an abandoned load"), (2, true));
    }

    #[tokio::test]
    async fn a_load_that_began_before_a_caller_arrived_is_not_shared_with_it() {
        let flight: Arc<SingleFlight<&str, usize>> = Arc::new(SingleFlight::new());
        let early = {
            let flight = Arc::clone(&flight);
            let arrived = flight.arrive();
            tokio::spawn(async move {
                flight
                    .run("page", arrived, || async {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        1
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Arrive while the first load is under way: they wait for it to
        // end, then share one load of their own.
        let late = (0..5).map(|i| {
            let flight = Arc::clone(&flight);
            let arrived = flight.arrive();
            let load = move || async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                10 + i
            };
            tokio::spawn(async move { flight.run("page", arrived, load).await })
        });
        let late: Vec<(usize, bool)> =
            futures_util::future::join_all(late).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(early.await.unwrap(), (1, true));
        assert_eq!(late.iter().filter(|(_, loaded)| *loaded).count(), 1, "{late:?}");
        assert!(late.iter().all(|(value, _)| *value == late[0].0 && *value >= 10), "{late:?}");
    }
}
