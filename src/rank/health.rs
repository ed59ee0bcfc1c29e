//! Whether the boards in Redis can be trusted right now, and the one task
//! that brings them back when they cannot.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::background::Background;
use crate::redis::RedisError;

/// The state of the boards in Redis, for `/healthz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedState {
    /// No Redis configured.
    Disabled,
    Ok,
    /// Reads go to the database while Redis is down, empty or rebuilding.
    Degraded,
}

impl SharedState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Ok => "ok",
            Self::Degraded => "degraded",
        }
    }
}

pub struct RedisHealth {
    /// False while Redis is down, empty or being rebuilt.
    healthy: AtomicBool,
    /// One recovery task at a time.
    recovering: AtomicBool,
    /// Runs the recovery task; stopped with the server.
    background: Background,
}

impl RedisHealth {
    /// Starts degraded: the first check or warm-up says otherwise.
    pub fn new(background: Background) -> Self {
        Self { healthy: AtomicBool::new(false), recovering: AtomicBool::new(false), background }
    }

    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// Redis answered and its boards are built; unless a recovery runs
    /// (it may be rebuilding boards that are there but stale).
    pub fn mark_healthy(&self) {
        if self.recovering.load(Ordering::Acquire) {
            return;
        }
        if !self.healthy.swap(true, Ordering::AcqRel) {
            tracing::info!("boards in Redis are ready; serving from them");
        }
    }

    /// Sends reads to the database and starts `recover` unless a recovery
    /// is running already. `recover` returns once the boards are back.
    pub fn degrade<F>(&self, error: &RedisError, recover: F)
    where
        F: Future<Output = ()> + 'static,
    {
        if self.healthy.swap(false, Ordering::AcqRel) {
            tracing::warn!(%error, "boards in Redis unavailable; serving from the database");
        }
        if self.recovering.swap(true, Ordering::AcqRel) {
            return;
        }
        self.background.spawn(recover);
    }

    /// Called by the recovery task when it is done.
    pub fn recovered(&self) {
        self.recovering.store(false, Ordering::Release);
        self.mark_healthy();
    }
}
