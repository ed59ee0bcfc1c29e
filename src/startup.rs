//! Builds the application: store, state, routes, listener. Binding happens
//! here so that tests can start the real server on port 0 and ask `port()`.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_cors::Cors;
use actix_web::dev::{Server, ServerHandle};
use actix_web::http::header;
use actix_web::middleware::{from_fn, Condition, DefaultHeaders};
use actix_web::{web, App, HttpServer};

use crate::auth::{HashPolicy, PasswordHasher};
use crate::cache::{NameCache, PageCache, SingleFlight, UserCache};
use crate::config::Settings;
use crate::domain::Timestamp;
use crate::limits::RateLimits;
use crate::rank::{RankEngine, RedisBoard};
use crate::routes;
use crate::scoring::{BatchPolicy, ScoreWriter};
use crate::state::AppState;
use crate::store::Store;
use crate::telemetry::{observe, Metrics};

/// Idempotency keys are kept twice as long as the contract's 24 hours.
const IDEMPOTENCY_KEY_RETENTION_MS: i64 = 48 * 3600 * 1000;
const JANITOR_INTERVAL: Duration = Duration::from_secs(600);
/// Redis connections per instance.
const REDIS_POOL_SIZE: usize = 16;
/// The Redis counter bumped by every initialize.
pub const DATA_GENERATION: &str = "data-generation";
/// Rendered page bodies kept, in bytes (the top pages of both boards in
/// practice; every post makes the rest stale).
const PAGE_CACHE_BYTES: usize = 4 << 20;
/// Display names kept in memory: about 10 MB at most.
const NAME_CACHE_ENTRIES: usize = 200_000;

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let metrics = Metrics::new()?;
        let store =
            Store::connect(&settings.database_url, settings.db_max_connections, metrics.db_statements.clone()).await?;
        let passwords = PasswordHasher::new(HashPolicy::from_settings(&settings), settings.hash_concurrency())?;
        let listener = TcpListener::bind(&settings.bind)?;
        let port = listener.local_addr()?.port();
        let workers = settings.workers();
        let static_dir = settings.static_dir.clone();
        let serve_static = static_dir.join("index.html").is_file();
        if !serve_static {
            tracing::warn!(dir = %static_dir.display(), "no index.html in STATIC_DIR; the ranking page is not served");
        }
        let redis = match &settings.redis_url {
            Some(url) => Some(Arc::new(RedisBoard::new(url, &settings.redis_prefix, REDIS_POOL_SIZE)?)),
            None => None,
        };
        let ranks = RankEngine::new(store.clone(), redis.clone());
        let warm_up = ranks.warm_up(false).await?;
        tracing::info!(players = warm_up.players, millis = warm_up.elapsed.as_millis() as u64, "rank engine warmed up");
        let users = redis.clone().map(|redis| Arc::new(UserCache::new(redis)));
        let policy = BatchPolicy {
            max_posts: settings.write_batch_max as usize,
            max_delay: Duration::from_micros(settings.write_batch_delay_us),
            queue: settings.write_queue as usize,
        };
        let writer = ScoreWriter::start(store.clone(), ranks.clone(), users.clone(), policy);
        let limits = RateLimits::new(&settings.rates(), redis.clone());
        let state = web::Data::new(AppState {
            settings,
            ranks,
            store,
            // Rendered pages only for a single instance (see cache::pages).
            pages: PageCache::new(if redis.is_some() { 0 } else { PAGE_CACHE_BYTES }),
            page_builds: SingleFlight::new(),
            names: NameCache::new(NAME_CACHE_ENTRIES),
            limits,
            users,
            writer,
            passwords,
            metrics,
            redis,
        });
        spawn_janitor(state.clone());
        spawn_shared_monitor(state.clone());

        let cors_origins: Vec<String> = state
            .settings
            .cors_allowed_origins
            .split(',')
            .map(str::trim)
            .filter(|origin| !origin.is_empty())
            .map(str::to_owned)
            .collect();
        let server = HttpServer::new(move || {
            let app = App::new()
                .app_data(state.clone())
                // Browsers must not guess content types (JSON read as HTML);
                // set here so it holds without nginx too.
                .wrap(DefaultHeaders::new().add(("X-Content-Type-Options", "nosniff")))
                .wrap(Condition::new(!cors_origins.is_empty(), cors(&cors_origins)))
                .wrap(from_fn(observe))
                .configure(routes::configure);
            if serve_static {
                app.service(
                    actix_files::Files::new("/", &static_dir)
                        .index_file("index.html")
                        .default_handler(web::to(routes::not_found)),
                )
            } else {
                app.default_service(web::to(routes::not_found))
            }
        })
        .workers(workers)
        .shutdown_timeout(30)
        // Files go out as headers then body chunks: with Nagle on, the body
        // waited for the client's delayed ACK, 40 ms per asset (measured:
        // 43 ms median, 631 req/s for a 7 KB script before, see BENCHMARKS.md).
        .on_connect(|connection, _| {
            if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
            }
        })
        .listen(listener)?
        .run();
        tracing::info!(port, workers, "listening");
        Ok(Self { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server gracefully (tests use it to restart on the same database).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until SIGINT/SIGTERM (actix drains in-flight requests first).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

/// Cross-origin access for the configured origins only: the methods and
/// headers the API uses, no cookies (cross-origin clients send the bearer
/// token), and the headers a client needs to read back.
fn cors(origins: &[String]) -> Cors {
    let cors = origins.iter().fold(Cors::default(), |cors, origin| cors.allowed_origin(origin));
    cors.allowed_methods(["GET", "POST", "DELETE"])
        .allowed_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::HeaderName::from_static("idempotency-key"),
        ])
        .expose_headers([header::RETRY_AFTER, header::HeaderName::from_static("x-request-id")])
        .max_age(3600)
}

/// Every second: is the shared board still built, and did another
/// instance replace the data (initialize)? Then cached names are wrong.
fn spawn_shared_monitor(state: web::Data<AppState>) {
    let Some(redis) = state.redis.clone() else { return };
    actix_web::rt::spawn(async move {
        let mut generation = redis.counter(DATA_GENERATION).await.unwrap_or(0);
        if let Some(users) = &state.users {
            users.set_generation(generation);
        }
        let mut interval = actix_web::rt::time::interval(Duration::from_secs(1));
        loop {
            interval.tick().await;
            state.ranks.check_shared().await;
            if let Ok(now) = redis.counter(DATA_GENERATION).await {
                if now != generation {
                    generation = now;
                    state.names.clear();
                    if let Some(users) = &state.users {
                        users.set_generation(generation);
                    }
                    if let Err(error) = state.ranks.warm_up(false).await {
                        tracing::warn!(%error, "reloading the local index after an initialize elsewhere");
                    }
                }
            }
        }
    });
}

/// Deletes expired sessions and old idempotency keys now and then.
fn spawn_janitor(state: web::Data<AppState>) {
    actix_web::rt::spawn(async move {
        let mut interval = actix_web::rt::time::interval(JANITOR_INTERVAL);
        loop {
            interval.tick().await;
            state.limits.shrink();
            let now = Timestamp::now();
            let result = async {
                let mut conn = state.store.conn().await?;
                state.store.purge_expired(&mut conn, now, now.plus_millis(-IDEMPOTENCY_KEY_RETENTION_MS)).await
            }
            .await;
            match result {
                Ok(purged) => tracing::debug!(purged, "janitor"),
                Err(error) => tracing::warn!(%error, "janitor failed"),
            }
        }
    });
}
