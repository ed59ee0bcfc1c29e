//! Builds the application: store, state, routes, listener. Binding happens
//! here so that tests can start the real server on port 0 and ask `port()`.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_cors::Cors;
use actix_web::dev::{Server, ServerHandle};
use actix_web::http::header;
use actix_web::middleware::Condition;
use actix_web::{guard, web, App, HttpServer};

use crate::auth::{HashPolicy, PasswordHasher};
use crate::background::Background;
use crate::boards::Registry;
use crate::cache::Caches;
use crate::config::{Secret, Settings};
use crate::domain::{derive_secret, CursorKeys};
use crate::drain::Drain;
use crate::front::Front;
use crate::limits::RateLimits;
use crate::live::LiveHub;
use crate::rank::RankEngine;
use crate::redis::RedisClient;
use crate::routes;
use crate::scoring::{BatchPolicy, ScoreWriter, WriterMetrics};
use crate::state::AppState;
use crate::store::{periodic_job, Migrations, Store};
use crate::telemetry::Metrics;
use crate::usecases::{boards, jobs};

/// Redis connections per instance.
const REDIS_POOL_SIZE: usize = 16;

/// How long a stop waits for the requests in flight to be answered...
const DRAIN_TIMEOUT: Duration = Duration::from_secs(15);
/// ...and then for the connections to close (a response being written to
/// a client that reads slowly). Together well inside the 40 s grace
/// docker-compose gives (`stop_grace_period`) and Kubernetes' default 30 s.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Application {
    port: u16,
    server: Server,
    background: Background,
    drain: Arc<Drain>,
    /// Its live pages, ended when it drains (they would hold it open).
    live: Arc<LiveHub>,
}

impl Application {
    pub async fn build(mut settings: Settings) -> anyhow::Result<Self> {
        settings.admin_token = checked_admin_token(settings.admin_token.take())?;
        let metrics = Metrics::new()?;
        let migrations = if settings.database.no_migrate { Migrations::Require } else { Migrations::Apply };
        let store = Store::connect(
            &settings.database.database_url,
            settings.database.db_max_connections,
            metrics.db_statements.clone(),
            migrations,
            settings.database.sqlite_sync,
        )
        .await?
        .counting_job_statements(metrics.db_job_statements.clone())
        .bounding_outbox(crate::webhooks::Event::ScoreHeld.as_str(), settings.webhook_held_backlog);
        let passwords =
            PasswordHasher::new(HashPolicy::from_settings(&settings.hashing), settings.hashing.concurrency())?;
        let listener = TcpListener::bind(&settings.bind)?;
        let local = listener.local_addr()?;
        let port = local.port();
        let store_dialect = store.dialect();
        let workers = settings.workers();
        let write_timeout = Duration::from_secs(settings.write_timeout_secs);
        let static_dir = settings.static_dir.clone();
        let serve_static = static_dir.join("index.html").is_file();
        if !serve_static {
            tracing::warn!(dir = %static_dir.display(), "no index.html in STATIC_DIR; the ranking page is not served");
        }
        let redis = match &settings.redis.redis_url {
            Some(url) => Some(Arc::new(
                RedisClient::new(url, &settings.redis.redis_prefix, REDIS_POOL_SIZE)?
                    .with_page_lease(Duration::from_micros(settings.redis.page_lease_us)),
            )),
            None => None,
        };
        let shared = redis.is_some();
        let background = Background::default();
        let boards = Arc::new(Registry::default());
        let ranks = RankEngine::new(store.clone(), redis.clone(), Arc::clone(&boards), background.clone());
        let caches = Arc::new(Caches::new(redis.clone(), metrics.page_cache.clone()));
        let policy = BatchPolicy {
            max_posts: settings.writer.write_batch_max as usize,
            max_delay: Duration::from_micros(settings.writer.write_batch_delay_us),
            queue: settings.writer.write_queue as usize,
            planted_fault: settings.planted_fault(),
        };
        let writer = ScoreWriter::start(
            store.clone(),
            ranks.clone(),
            Arc::clone(&caches),
            Arc::clone(&boards),
            policy,
            &background,
            WriterMetrics {
                batch_sizes: metrics.write_batch_size.clone(),
                conflicts: metrics.write_conflicts.clone(),
                reviews: metrics.reviews.clone(),
            },
        );
        let limits = RateLimits::new(&crate::limits::rates(&settings.rates), redis.clone());
        let cursor_keys = cursor_keys(&settings, &store).await?;
        let live = Arc::new(LiveHub::new(settings.live_per_address, settings.live_max, metrics.live_reads.clone()));
        let webhook_allow_private = settings.webhook_allow_private;
        let state = web::Data::new(AppState {
            settings,
            boards,
            ranks,
            store,
            caches,
            limits,
            writer,
            passwords,
            redis,
            initializing: tokio::sync::Mutex::new(()),
            drain: Arc::default(),
            live: Arc::clone(&live),
            cursor_keys,
            reviews: metrics.reviews.clone(),
            job_failures: metrics.job_failures.clone(),
            webhooks: crate::webhooks::Sender::new(webhook_allow_private),
            exports: Default::default(),
        });
        let drain = Arc::clone(&state.drain);
        boards::reload_catalog(&state).await.map_err(|error| anyhow::anyhow!("loading the board catalog: {error}"))?;
        let warm_up = state.ranks.warm_up(false).await?;
        tracing::info!(entries = warm_up.entries, millis = warm_up.elapsed.as_millis() as u64, "rank engine warmed up");
        background.spawn(periodic_job(jobs::purge_expired_regularly(state.clone())));
        background.spawn(periodic_job(jobs::watch_shared_state(state.clone())));
        background.spawn(periodic_job(jobs::keep_periods(state.clone())));
        background.spawn(periodic_job(jobs::settle_ended_periods(state.clone())));
        background.spawn(periodic_job(jobs::close_ended_periods(state.clone())));
        background.spawn(periodic_job(jobs::deliver_webhooks(state.clone())));

        let cors_origins: Vec<String> = state.settings.cors_origins().map(str::to_owned).collect();
        let metrics = web::Data::new(metrics);
        let drain_data = web::Data::from(Arc::clone(&drain));
        let server = HttpServer::new(move || {
            let app = App::new()
                .app_data(state.clone())
                .app_data(metrics.clone())
                .wrap(Condition::new(!cors_origins.is_empty(), cors(&cors_origins)))
                .wrap(Front { metrics: metrics.clone(), drain: drain_data.clone() })
                .configure(routes::configure);
            if serve_static {
                // Files answer GET and HEAD only; any other method on any
                // other path gets the contract's envelope (405 or 404).
                // The console first: its page carries its own security policy.
                let page = || web::route().guard(guard::Any(guard::Get()).or(guard::Head()));
                app.service(
                    web::resource(["/admin/", "/admin/index.html"])
                        .route(page().to(routes::console_page))
                        .default_service(web::to(routes::static_method_not_allowed)),
                )
                .service(
                    web::resource("/admin")
                        .route(page().to(routes::console_redirect))
                        .default_service(web::to(routes::static_method_not_allowed)),
                )
                .service(
                    actix_files::Files::new("/", &static_dir)
                        .index_file("index.html")
                        .guard(guard::Any(guard::Get()).or(guard::Head()))
                        .default_handler(web::to(routes::not_found)),
                )
                .default_service(web::to(routes::static_method_not_allowed))
            } else {
                app.default_service(web::to(routes::not_found))
            }
        })
        .workers(workers)
        // Stop signals are handled in `run_until_stopped` (readiness first).
        .disable_signals()
        .shutdown_timeout(SHUTDOWN_TIMEOUT.as_secs())
        // A client that closes its side is gone: drop what it was sent at
        // once. A live page (a stream with nothing to write until the board
        // changes) would otherwise hold its place until a write failed.
        .h1_allow_half_closed(false)
        // Files go out as headers then body chunks: with Nagle on, the body
        // waited for the client's delayed ACK, 40 ms per asset (measured:
        // 43 ms median, 631 req/s for a 7 KB script before, see BENCHMARKS.md).
        .on_connect(move |connection, _| {
            if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
                // A client that stops reading (a live page left open in a
                // stalled tab, a hostile one) holds its place until the
                // kernel gives up on it: after `WRITE_TIMEOUT_SECS`, not
                // never (the stream is not polled while nothing can be
                // written, so only the socket can tell).
                let _ = socket2::SockRef::from(tcp).set_tcp_user_timeout(Some(write_timeout));
            }
        })
        .listen(listener)?
        .run();
        let backend = match store_dialect {
            crate::store::Dialect::Sqlite => "sqlite",
            crate::store::Dialect::MySql => "mysql",
        };
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            url = %format!("http://{local}"),
            backend,
            redis = if shared { "shared" } else { "off" },
            workers,
            "listening"
        );
        Ok(Self { port, server, background, drain, live })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server gracefully (tests use it to restart on the same database).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until SIGINT/SIGTERM or `handle().stop()`, then stops every
    /// background task. A signal first marks the instance as draining
    /// (`/readyz` answers 503), stops accepting connections and waits until
    /// the requests in flight are answered (up to 15 s), and only then
    /// stops the workers (up to 10 s more for connections still writing;
    /// see `drain` for why in this order): 25 s at most.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let handle = self.server.handle();
        let drain = Arc::clone(&self.drain);
        let live = Arc::clone(&self.live);
        let signals = actix_web::rt::spawn(async move {
            stop_signal().await;
            drain.begin();
            live.close();
            tracing::info!("stop signal: draining in-flight requests");
            handle.pause().await;
            if !drain.until_idle(DRAIN_TIMEOUT).await {
                tracing::warn!("requests still in flight after {DRAIN_TIMEOUT:?}; stopping anyway");
            }
            handle.stop(true).await;
        });
        let served = self.server.await;
        signals.abort();
        self.background.stop();
        served
    }
}

/// Admin tokens shorter than this are refused at start.
const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// An empty token (what docker-compose passes for an unset variable) turns
/// the admin routes off; a short one stops the start: it could be guessed.
fn checked_admin_token(token: Option<Secret>) -> anyhow::Result<Option<Secret>> {
    match token {
        Some(token) if token.expose().is_empty() => {
            tracing::warn!("ADMIN_TOKEN is empty: the admin routes are off");
            Ok(None)
        }
        Some(token) if token.expose().chars().count() < MIN_ADMIN_TOKEN_CHARS => anyhow::bail!(
            "ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 24`): \
             a short token can be guessed"
        ),
        token => Ok(token),
    }
}

/// SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Cross-origin access for the configured origins only: the methods and
/// headers the API uses, no cookies (cross-origin clients send the bearer
/// token), and the headers a client needs to read back.
fn cors(origins: &[String]) -> Cors {
    let cors = origins.iter().fold(Cors::default(), |cors, origin| cors.allowed_origin(origin));
    cors.allowed_methods(["GET", "POST", "PATCH", "DELETE"])
        .allowed_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_NONE_MATCH,
            header::HeaderName::from_static("idempotency-key"),
        ])
        .expose_headers([
            header::RETRY_AFTER,
            header::ETAG,
            header::HeaderName::from_static("x-request-id"),
            header::HeaderName::from_static("idempotent-replayed"),
        ])
        .max_age(3600)
}

/// The configured cursor secret, else the one kept in the database (made
/// at its first start: every instance on it signs alike).
async fn cursor_keys(settings: &Settings, store: &Store) -> anyhow::Result<CursorKeys> {
    let current = match &settings.cursor_secret {
        Some(secret) if !secret.expose().is_empty() => derive_secret(secret.expose()),
        _ => store.secret("cursor").await?,
    };
    let previous = settings
        .cursor_secret_previous
        .as_ref()
        .map(Secret::expose)
        .filter(|secret| !secret.is_empty())
        .map(derive_secret);
    Ok(CursorKeys::new(&current, previous.as_deref()))
}
