//! What operators and load balancers ask: is the service healthy, and its
//! metrics.

use serde::Serialize;

use crate::error::{ApiError, ErrorCode};
use crate::rank::SharedState;
use crate::state::AppState;
use crate::telemetry::{Gauges, Metrics};

/// `/healthz`: the database answers; Redis is reported, never fatal
/// (without it the service degrades to the database).
#[derive(Debug, Serialize)]
pub struct Health {
    pub status: &'static str,
    pub redis: &'static str,
}

pub async fn health(state: &AppState) -> Result<Health, ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok(Health { status: "ok", redis: state.ranks.shared_state().as_str() }),
        Err(error) => {
            tracing::warn!(%error, "health check: database not answering");
            Err(ErrorCode::DatabaseUnavailable.into())
        }
    }
}

/// `/readyz`: not draining, and the database answers.
pub async fn readiness(state: &AppState) -> Result<(), ApiError> {
    if state.drain.is_draining() {
        return Err(ApiError::with_message(
            ErrorCode::ShuttingDown,
            "draining: in-flight requests finish, then it stops",
        ));
    }
    health(state).await.map(|_| ())
}

/// The Prometheus text exposition, with the gauges read now.
pub fn metrics_text(state: &AppState, metrics: &Metrics) -> String {
    let pool = state.store.pool();
    metrics.render(&Gauges {
        pool_size: pool.size(),
        pool_idle: pool.num_idle(),
        limiter_keys: state.limits.tracked_keys(),
        page_cache_bytes: state.caches.pages.bytes(),
        write_queue: state.writer.queued(),
        hashing_queue: state.passwords.waiting(),
        live_streams: state.live.open_streams() as usize,
        live_watchers: state.live.watchers(),
        redis_state: match state.ranks.shared_state() {
            SharedState::Disabled => 0,
            SharedState::Ok => 1,
            SharedState::Degraded => 2,
        },
    })
}
