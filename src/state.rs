//! The state every handler shares (one instance per server, behind `web::Data`).

use std::sync::Arc;

use crate::auth::PasswordHasher;
use crate::boards::Registry;
use crate::cache::Caches;
use crate::config::Settings;
use crate::domain::CursorKeys;
use crate::drain::Drain;
use crate::limits::RateLimits;
use crate::live::LiveHub;
use crate::rank::RankEngine;
use crate::redis::RedisClient;
use crate::scoring::ScoreWriter;
use crate::store::Store;

pub struct AppState {
    /// The configuration the server started with.
    pub settings: Settings,
    /// The database: the source of truth for everything.
    pub store: Store,
    /// The custom boards and their clocks (a cache of the catalog).
    pub boards: Arc<Registry>,
    /// Ranks and pages for every board; the only way anything gets a rank.
    pub ranks: RankEngine,
    /// Rendered pages, display names, user rows: never the truth.
    pub caches: Arc<Caches>,
    /// 429s for brute force and floods.
    pub limits: RateLimits,
    /// Group-commits score posts (the only way scores are written).
    pub writer: ScoreWriter,
    /// Hashes and verifies passwords off the async workers.
    pub passwords: PasswordHasher,
    /// Redis, when configured: shared boards (inside `ranks`), sessions,
    /// rate windows, and the data generation every instance watches.
    pub redis: Option<Arc<RedisClient>>,
    /// One initialize at a time on this instance (two would interleave
    /// their wipes and loads).
    pub initializing: tokio::sync::Mutex<()>,
    /// Whether a stop signal came (`/readyz` answers 503 while in-flight
    /// requests finish) and the requests in flight.
    pub drain: Arc<Drain>,
    /// Live pages' watchers and stream limits.
    pub live: Arc<LiveHub>,
    /// What ranking cursors are signed and checked with.
    pub cursor_keys: CursorKeys,
    /// Posts held for review, accepted and rejected (`hiscore_reviews_total`).
    pub reviews: prometheus::IntCounterVec,
    /// Failed units of the periodic jobs (`hiscore_job_failures_total`).
    pub job_failures: prometheus::IntCounterVec,
    /// Sends webhook deliveries (the outbox job's client).
    pub webhooks: crate::webhooks::Sender,
    /// The exports this instance may stream at once.
    pub exports: crate::export_slots::ExportSlots,
}
