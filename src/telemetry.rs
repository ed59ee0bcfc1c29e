//! Logs, request ids, metrics, and the last line of defence against panics.
//!
//! Per-request logging is at `debug` (it costs real CPU at tens of thousands
//! of requests per second); errors and 5xx are logged where they happen.
//! Never log a request body, a password or a token.

use std::time::Instant;

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::Method;
use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use crate::error::{ApiError, ErrorCode, Rejection};
use crate::request_metrics::RequestMetrics;

/// Installs the global tracing subscriber (`RUST_LOG` filters, default
/// `info`): one JSON object per line with `LOG_FORMAT=json` (for a log
/// collector), else text, coloured only when stdout is a terminal.
pub fn init_logging() {
    use std::io::IsTerminal as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    // A second init (tests start many servers) is harmless, so its error is ignored.
    let _ = if std::env::var("LOG_FORMAT").is_ok_and(|format| format.eq_ignore_ascii_case("json")) {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.with_ansi(std::io::stdout().is_terminal()).try_init()
    };
}

/// Prometheus metrics, one registry per server (tests run many servers in one process).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// Requests and their latencies, by method, route and status.
    requests: RequestMetrics,
    /// Every SQL statement the store runs.
    pub db_statements: IntCounter,
    pub db_job_statements: IntCounter,
    /// Posts per batch the score writer commits.
    pub write_batch_size: Histogram,
    /// Score batches rolled back by a conflict and run again.
    pub write_conflicts: IntCounter,
    /// Ranking pages served from the page cache (`hit`), read (`miss`), or
    /// by another request's read (`shared`).
    pub page_cache: IntCounterVec,
    db_connections: IntGauge,
    db_idle_connections: IntGauge,
    limiter_keys: IntGauge,
    page_cache_bytes: IntGauge,
    write_queue: IntGauge,
    hashing_queue: IntGauge,
    live_streams: IntGauge,
    live_watchers: IntGauge,
    redis_state: IntGauge,
    resident_bytes: IntGauge,
    open_fds: IntGauge,
    /// 429 and 503 answers by reason (a limit's name, or the 503's code).
    rejections: IntCounterVec,
    /// Score posts made with each server key (by the key's id).
    pub server_key_posts: IntCounterVec,
    /// Posts held for review, and the decisions on them (`held`, `accepted`, `rejected`).
    pub reviews: IntCounterVec,
    /// Live pages' reads: `page` (a watcher asked its question again),
    /// `stamp` (a board's stamp read in Redis for its watchers).
    pub live_reads: IntCounterVec,
    /// Failures of the periodic jobs' units of work, by job (`close_period`:
    /// one period's close, retried with backoff while the others go on).
    pub job_failures: IntCounterVec,
}

/// The `job` labels of `hiscore_job_failures_total`.
pub const JOBS: [&str; 2] = ["close_period", "deliver_webhook"];

/// What `/metrics` reads at each scrape.
pub struct Gauges {
    pub pool_size: u32,
    pub pool_idle: usize,
    /// Keys the in-process rate limiters track (addresses, accounts, players).
    pub limiter_keys: usize,
    pub page_cache_bytes: usize,
    /// Score posts waiting for the writer.
    pub write_queue: usize,
    /// Password hashes waiting for a hashing thread.
    pub hashing_queue: usize,
    /// Live pages open, and the distinct questions they watch.
    pub live_streams: usize,
    pub live_watchers: usize,
    /// 0: no Redis, 1: reads from Redis, 2: degraded (reads from the database).
    pub redis_state: i64,
}

impl Metrics {
    pub fn new() -> anyhow::Result<Self> {
        let registry = Registry::new();
        let requests = RequestMetrics::new()?;
        let db_statements = IntCounter::new("hiscore_db_statements_total", "SQL statements executed")?;
        let db_job_statements = IntCounter::new(
            "hiscore_db_job_statements_total",
            "SQL statements of the periodic jobs (closing periods, the webhook outbox, purges), part of hiscore_db_statements_total",
        )?;
        let page_cache = IntCounterVec::new(
            Opts::new("hiscore_page_cache_total", "Ranking pages served from the page cache (hit), read (miss) or by a concurrent request's read (shared)"),
            &["outcome"],
        )?;
        let db_connections = IntGauge::new("hiscore_db_pool_connections", "Open database connections")?;
        let db_idle_connections = IntGauge::new("hiscore_db_pool_idle_connections", "Idle database connections")?;
        let limiter_keys = IntGauge::new("hiscore_limiter_keys", "Keys the in-process rate limiters track")?;
        let page_cache_bytes = IntGauge::new("hiscore_page_cache_bytes", "Bytes of rendered pages kept")?;
        let write_queue = IntGauge::new("hiscore_write_queue_depth", "Score posts waiting for the writer")?;
        let hashing_queue =
            IntGauge::new("hiscore_hashing_queue_depth", "Password hashes waiting for a hashing thread")?;
        let live_streams = IntGauge::new("hiscore_live_streams", "Live pages (server-sent event streams) open")?;
        let live_watchers = IntGauge::new(
            "hiscore_live_watchers",
            "Distinct pages the live streams watch (each read once per change)",
        )?;
        let redis_state = IntGauge::new(
            "hiscore_redis_state",
            "0: no Redis, 1: boards read from Redis, 2: degraded to the database",
        )?;
        let resident_bytes = IntGauge::new("hiscore_process_resident_memory_bytes", "Resident memory (Linux)")?;
        let open_fds = IntGauge::new("hiscore_process_open_fds", "Open file descriptors (Linux)")?;
        let write_batch_size = Histogram::with_opts(
            HistogramOpts::new("hiscore_write_batch_size", "Posts per batch the score writer commits")
                .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0]),
        )?;
        let write_conflicts = IntCounter::new(
            "hiscore_write_conflicts_total",
            "Score batches rolled back by a conflict (a deadlock, a Galera certification failure) and run again",
        )?;
        let rejections = IntCounterVec::new(
            Opts::new("hiscore_rejections_total", "Requests told to come back later (429, 503), by reason"),
            &["reason"],
        )?;
        let server_key_posts = IntCounterVec::new(
            Opts::new("hiscore_server_key_posts_total", "Score posts made with a live server key, by the key's id"),
            &["key"],
        )?;
        let reviews = IntCounterVec::new(
            Opts::new(
                "hiscore_reviews_total",
                "Score posts held for review (held), and the decisions on them (accepted, rejected)",
            ),
            &["outcome"],
        )?;
        for outcome in ["held", "accepted", "rejected"] {
            reviews.with_label_values(&[outcome]);
        }
        let live_reads = IntCounterVec::new(
            Opts::new(
                "hiscore_live_reads_total",
                "Live pages' reads: a watcher's question asked again (page), a board's stamp read in Redis (stamp)",
            ),
            &["what"],
        )?;
        for what in ["page", "stamp"] {
            live_reads.with_label_values(&[what]);
        }
        let job_failures = IntCounterVec::new(
            Opts::new(
                "hiscore_job_failures_total",
                "Units of the periodic jobs' work that failed and will be tried again (close_period, deliver_webhook)",
            ),
            &["job"],
        )?;
        for job in JOBS {
            job_failures.with_label_values(&[job]);
        }
        let build_info = IntGaugeVec::new(Opts::new("hiscore_build_info", "The running version"), &["version"])?;
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(db_statements.clone()))?;
        registry.register(Box::new(db_job_statements.clone()))?;
        registry.register(Box::new(page_cache.clone()))?;
        registry.register(Box::new(db_connections.clone()))?;
        registry.register(Box::new(db_idle_connections.clone()))?;
        registry.register(Box::new(limiter_keys.clone()))?;
        registry.register(Box::new(page_cache_bytes.clone()))?;
        registry.register(Box::new(write_queue.clone()))?;
        registry.register(Box::new(hashing_queue.clone()))?;
        registry.register(Box::new(live_streams.clone()))?;
        registry.register(Box::new(live_watchers.clone()))?;
        registry.register(Box::new(redis_state.clone()))?;
        registry.register(Box::new(resident_bytes.clone()))?;
        registry.register(Box::new(open_fds.clone()))?;
        // Every reason at 0 from the start, so that a rate over it exists
        // before the first rejection (dashboards, alerts).
        let unavailable = ErrorCode::ALL.iter().filter(|code| code.status() == 503).map(|code| code.as_str());
        for reason in crate::limits::Limit::ALL.iter().map(|limit| limit.name()).chain(unavailable) {
            rejections.with_label_values(&[reason]);
        }
        registry.register(Box::new(rejections.clone()))?;
        registry.register(Box::new(server_key_posts.clone()))?;
        registry.register(Box::new(reviews.clone()))?;
        registry.register(Box::new(live_reads.clone()))?;
        registry.register(Box::new(job_failures.clone()))?;
        registry.register(Box::new(write_batch_size.clone()))?;
        registry.register(Box::new(write_conflicts.clone()))?;
        registry.register(Box::new(build_info))?;
        Ok(Self {
            registry,
            requests,
            db_statements,
            db_job_statements,
            page_cache,
            db_connections,
            db_idle_connections,
            limiter_keys,
            page_cache_bytes,
            write_queue,
            hashing_queue,
            live_streams,
            live_watchers,
            redis_state,
            resident_bytes,
            open_fds,
            rejections,
            server_key_posts,
            reviews,
            live_reads,
            job_failures,
            write_batch_size,
            write_conflicts,
        })
    }

    /// The Prometheus text exposition, with the gauges read now.
    pub fn render(&self, gauges: &Gauges) -> String {
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.db_connections.set(i64::from(gauges.pool_size));
        self.db_idle_connections.set(gauge(gauges.pool_idle));
        self.limiter_keys.set(gauge(gauges.limiter_keys));
        self.page_cache_bytes.set(gauge(gauges.page_cache_bytes));
        self.write_queue.set(gauge(gauges.write_queue));
        self.hashing_queue.set(gauge(gauges.hashing_queue));
        self.live_streams.set(gauge(gauges.live_streams));
        self.live_watchers.set(gauge(gauges.live_watchers));
        self.redis_state.set(gauges.redis_state);
        if let Some((resident, fds)) = process_usage() {
            self.resident_bytes.set(resident);
            self.open_fds.set(fds);
        }
        let mut out = String::new();
        if let Err(error) = prometheus::TextEncoder::new().encode_utf8(&self.registry.gather(), &mut out) {
            tracing::error!(%error, "encoding metrics");
        }
        out
    }

    /// Counts a request. Labels come from fixed sets only, whatever the
    /// client sends: a method the API does not use is `other`; the route is
    /// one of `routes::ROUTES` (a [`RouteName`]) or `panicked`, and a path
    /// that is no route is `static` (a file served) or `unmatched`;
    /// otherwise every odd method or path would add series that are never
    /// freed.
    fn observe(&self, method: &Method, route: Option<&'static str>, status: u16, seconds: f64) {
        const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
        let method = METHODS.iter().find(|known| **known == method.as_str()).copied().unwrap_or("other");
        let route = match route {
            Some(route) => route,
            None if (200..400).contains(&status) && matches!(method, "GET" | "HEAD") => "static",
            None => "unmatched",
        };
        self.requests.observe((method, route, status), seconds);
    }
}

/// Resident memory in bytes and open descriptors, read from `/proc` (Linux;
/// `None` elsewhere). The soak measured the same two by hand.
fn process_usage() -> Option<(i64, i64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let resident_kib: i64 =
        status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    let fds = std::fs::read_dir("/proc/self/fd").ok()?.count();
    Some((resident_kib * 1024, i64::try_from(fds).unwrap_or(i64::MAX)))
}

static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The route (its path in OpenAPI's spelling, one of `routes::ROUTES`) a
/// request was routed to: the router's resources carry it, so the label
/// needs no second match.
#[derive(Debug, Clone, Copy)]
pub struct RouteName(pub &'static str);

/// What is known of a request when it arrives, for its answer: its id
/// (taken from `X-Request-Id` when the proxy sent one), a tracing span,
/// and when it started, for the metrics by route pattern.
pub struct Observation {
    started: Instant,
    request_id: HeaderValue,
    method: Method,
    span: tracing::Span,
}

impl Observation {
    pub fn begin(req: &ServiceRequest) -> Self {
        let request_id = req
            .headers()
            .get(&REQUEST_ID)
            .filter(|v| !v.is_empty() && v.len() <= 64 && v.as_bytes().iter().all(u8::is_ascii_graphic))
            .cloned()
            .unwrap_or_else(new_request_id);
        let method = req.method().clone();
        let id = request_id.to_str().unwrap_or_default();
        let span = tracing::debug_span!("request", id, method = %method, path = %req.path());
        Self { started: Instant::now(), request_id, method, span }
    }

    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Counts the answer in `metrics` and names it with the request id. A
    /// panic becomes a JSON 500 instead of a dropped connection. Holding a
    /// clone of the request would break routing (it needs the request
    /// uniquely), so failures stay errors, which actix renders with
    /// `ApiError`'s JSON envelope. `named` is the route when the answer was
    /// given before routing (a kept answer, `routes::kept_answer`);
    /// otherwise the router's resource names it.
    pub fn finish(
        self,
        outcome: std::thread::Result<Result<ServiceResponse, actix_web::Error>>,
        named: Option<RouteName>,
        metrics: &Metrics,
    ) -> Result<ServiceResponse, actix_web::Error> {
        let mut response = match outcome {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                let status = error.as_response_error().status_code().as_u16();
                self.count(metrics, None, status);
                return Err(error);
            }
            Err(_panic) => {
                tracing::error!(parent: &self.span, "handler panicked");
                self.count(metrics, Some("panicked"), 500);
                return Err(ApiError::internal(anyhow::anyhow!("handler panicked")).into());
            }
        };
        let status = response.status().as_u16();
        let route = named.or_else(|| response.request().app_data::<RouteName>().copied()).map(|name| name.0);
        self.count(metrics, route, status);
        if let Some(Rejection(reason)) = response.response().extensions().get::<Rejection>().copied() {
            metrics.rejections.with_label_values(&[reason]).inc();
        }
        tracing::debug!(parent: &self.span, status, micros = self.started.elapsed().as_micros() as u64, "served");
        response.headers_mut().insert(REQUEST_ID.clone(), self.request_id);
        Ok(response)
    }

    fn count(&self, metrics: &Metrics, route: Option<&'static str>, status: u16) {
        metrics.observe(&self.method, route, status, self.started.elapsed().as_secs_f64());
    }
}

/// 16 random hex digits.
fn new_request_id() -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut bits = rand::random::<u64>();
    for digit in digits.iter_mut().rev() {
        *digit = HEX[(bits & 0xf) as usize];
        bits >>= 4;
    }
    HeaderValue::from_bytes(&digits).expect("hex digits are a valid header value")
}
