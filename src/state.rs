//! The state every handler shares (one instance per server, behind `web::Data`).

use crate::auth::PasswordHasher;
use crate::cache::{NameCache, PageCache, PageKey, SingleFlight, UserCache};
use crate::config::Settings;
use std::sync::Arc;

use crate::limits::RateLimits;
use crate::rank::{RankEngine, RedisBoard};
use crate::scoring::ScoreWriter;
use crate::store::Store;
use crate::telemetry::Metrics;

pub struct AppState {
    /// The configuration the server started with.
    pub settings: Settings,
    /// The database: the source of truth for everything.
    pub store: Store,
    /// Ranks and pages for both boards; the only way handlers get a rank.
    pub ranks: RankEngine,
    /// Rendered ranking pages, valid while the rank engine's version holds.
    pub pages: PageCache,
    /// One build per page key at a time (a hot page expiring under load).
    pub page_builds: SingleFlight<PageKey, Option<(u64, actix_web::web::Bytes)>>,
    /// Display names for ranking pages (they never change once registered).
    pub names: NameCache,
    /// User rows in Redis for every instance, when Redis is configured.
    pub users: Option<Arc<UserCache>>,
    /// 429s for brute force and floods.
    pub limits: RateLimits,
    /// Group-commits score posts (the only way scores are written).
    pub writer: ScoreWriter,
    /// Hashes and verifies passwords off the async workers.
    pub passwords: PasswordHasher,
    /// Request and database counters exported at `/metrics`.
    pub metrics: Metrics,
    /// Redis, when configured: the shared board (inside `ranks`), sessions,
    /// and the data generation every instance watches.
    pub redis: Option<Arc<RedisBoard>>,
}
