//! One loader per key: concurrent misses for the same key wait for the
//! first caller's result instead of all doing the same work (a stampede
//! when a hot page expires under load).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

pub struct SingleFlight<K, V> {
    in_flight: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    pub fn new() -> Self {
        Self { in_flight: Mutex::new(HashMap::new()) }
    }

    /// Runs `load` unless a load of `key` is already under way, in which
    /// case its result is shared.
    pub async fn run<F, Fut>(&self, key: K, load: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let cell = match self.in_flight.lock() {
            Ok(mut in_flight) => Arc::clone(in_flight.entry(key.clone()).or_default()),
            // A poisoned map only costs the sharing.
            Err(_) => Arc::new(OnceCell::new()),
        };
        let value = cell.get_or_init(load).await.clone();
        if let Ok(mut in_flight) = self.in_flight.lock() {
            if in_flight.get(&key).is_some_and(|current| Arc::ptr_eq(current, &cell)) {
                in_flight.remove(&key);
            }
        }
        value
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
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn concurrent_callers_share_one_load() {
        let flight: Arc<SingleFlight<&str, usize>> = Arc::new(SingleFlight::new());
        let loads = Arc::new(AtomicUsize::new(0));
        let calls = (0..10).map(|_| {
            let (flight, loads) = (Arc::clone(&flight), Arc::clone(&loads));
            tokio::spawn(async move {
                flight
                    .run("page", || async {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        loads.fetch_add(1, Ordering::SeqCst) + 100
                    })
                    .await
            })
        });
        let results: Vec<usize> = futures_util::future::join_all(calls).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(results.iter().all(|r| *r == 100));
        // Once done, the next call loads again.
        assert_eq!(flight.run("page", || async { 7 }).await, 7);
    }
}
