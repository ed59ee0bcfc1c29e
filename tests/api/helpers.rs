//! `spawn_app()` and friends: a real server on a fresh database per test.

use std::time::Duration;

use actix_web::dev::ServerHandle;
use hiscore::config::Settings;
use hiscore::startup::Application;
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

/// Runs each listed `async fn name(backend: Backend)` once per backend:
/// `name::sqlite` always, `name::mariadb` when `TEST_MYSQL_URL` is set, and
/// `name::mariadb_redis` (the shared rank engine) when `TEST_REDIS_URL` is
/// set too, and `name::mariadb_redis_cluster` then as well, on a Redis
/// Cluster the run starts (see [`crate::external::RedisCluster`]). A
/// variant whose services are not configured is ignored, with the variable
/// to set as the reason (`build.rs` reads them when the tests are built).
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[actix_web::test]
                async fn sqlite() {
                    super::$name($crate::helpers::Backend::Sqlite).await
                }

                #[actix_web::test]
                #[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL to run the MariaDB variants")]
                async fn mariadb() {
                    super::$name($crate::helpers::Backend::mariadb()).await
                }

                #[actix_web::test]
                #[cfg_attr(
                    not(all(hiscore_test_mysql, hiscore_test_redis)),
                    ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL to run the MariaDB + Redis variants"
                )]
                async fn mariadb_redis() {
                    super::$name($crate::helpers::Backend::mariadb_redis()).await
                }

                #[actix_web::test]
                #[cfg_attr(
                    not(all(hiscore_test_mysql, hiscore_test_redis)),
                    ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL to run the Redis Cluster variants"
                )]
                async fn mariadb_redis_cluster() {
                    super::$name($crate::helpers::Backend::mariadb_redis_cluster()).await
                }
            }
        )*
    };
}

#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite,
    MariaDb { server_url: String },
    MariaDbRedis { server_url: String, redis_url: String },
}

fn env_url(variable: &str) -> Option<String> {
    std::env::var(variable).ok().filter(|url| !url.is_empty())
}

impl Backend {
    /// MariaDB with the shared (Redis) rank engine. Tests that need it are
    /// ignored unless `TEST_MYSQL_URL` and `TEST_REDIS_URL` are set.
    pub fn mariadb_redis() -> Self {
        match (env_url("TEST_MYSQL_URL"), env_url("TEST_REDIS_URL")) {
            (Some(server_url), Some(redis_url)) => Self::MariaDbRedis { server_url, redis_url },
            _ => panic!("this test needs TEST_MYSQL_URL and TEST_REDIS_URL (it is ignored without them)"),
        }
    }

    /// MariaDB with the shared rank engine on a Redis Cluster the run
    /// starts (where Redis is installed, so is its cluster mode).
    pub fn mariadb_redis_cluster() -> Self {
        let Self::MariaDbRedis { server_url, .. } = Self::mariadb_redis() else { unreachable!() };
        let redis_url = crate::external::shared_redis_cluster().url();
        Self::MariaDbRedis { server_url, redis_url }
    }

    /// The MariaDB backend. Tests that need it are ignored unless
    /// `TEST_MYSQL_URL` is set.
    pub fn mariadb() -> Self {
        match env_url("TEST_MYSQL_URL") {
            Some(server_url) => Self::MariaDb { server_url },
            None => panic!("this test needs TEST_MYSQL_URL (it is ignored without it)"),
        }
    }
}

/// A database of its own for one test (and a Redis key prefix of its own
/// when the backend has Redis), removed afterwards.
pub struct TestDatabase {
    pub url: String,
    pub redis: Option<TestRedis>,
    cleanup: Cleanup,
}

/// A Redis URL and a key prefix no other test uses.
#[derive(Debug, Clone)]
pub struct TestRedis {
    pub url: String,
    pub prefix: String,
}

impl TestRedis {
    fn new(url: &str) -> Self {
        Self { url: url.to_owned(), prefix: format!("hiscore-test-{:016x}", rand::random::<u64>()) }
    }

    /// Deletes every key of this prefix: what a FLUSHALL does to this test.
    pub async fn flush(&self) {
        use hiscore::redis::RedisClient;
        let redis = RedisClient::new(&self.url, &self.prefix, 1).expect("redis pool");
        redis
            .delete_matching(&redis.keys().everything())
            .await
            .expect("TEST_REDIS_URL is set but Redis is not reachable");
    }
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    MariaDb { server_url: String, name: String },
}

impl TestDatabase {
    pub async fn new(backend: &Backend) -> Self {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}/hiscore.db", dir.path().display());
                Self { url, redis: None, cleanup: Cleanup::Sqlite(dir) }
            }
            Backend::MariaDb { server_url } => Self::mariadb(server_url, None).await,
            Backend::MariaDbRedis { server_url, redis_url } => {
                let redis = TestRedis::new(redis_url);
                redis.flush().await; // also proves Redis answers
                Self::mariadb(server_url, Some(redis)).await
            }
        }
    }

    async fn mariadb(server_url: &str, redis: Option<TestRedis>) -> Self {
        let name = format!("hiscore_test_{:016x}", rand::random::<u64>());
        run_mysql(server_url, &format!("CREATE DATABASE {name} CHARACTER SET utf8mb4")).await;
        let url = replace_database(server_url, &name);
        Self { url, redis, cleanup: Cleanup::MariaDb { server_url: server_url.to_owned(), name } }
    }

    /// A direct connection, for asserting on what is stored (an SQLite
    /// file is created if no server made it yet).
    pub async fn connect(&self) -> sqlx::AnyPool {
        sqlx::any::install_default_drivers();
        let url = if self.url.starts_with("sqlite:") { format!("{}?mode=rwc", self.url) } else { self.url.clone() };
        sqlx::AnyPool::connect(&url).await.expect("connect to the test database")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let database = match &self.cleanup {
            Cleanup::MariaDb { server_url, name } => {
                Some((server_url.clone(), format!("DROP DATABASE IF EXISTS {name}")))
            }
            Cleanup::Sqlite(_) => None,
        };
        let redis = self.redis.clone();
        // Drop cannot await; a thread with its own runtime can.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                if let Some((server_url, sql)) = database {
                    run_mysql(&server_url, &sql).await;
                }
                if let Some(redis) = redis {
                    redis.flush().await;
                }
            });
            Some(())
        })
        .join();
    }
}

async fn run_mysql(server_url: &str, sql: &str) {
    use sqlx::Connection as _;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(server_url)
        .await
        .unwrap_or_else(|e| panic!("TEST_MYSQL_URL is set but MariaDB is not reachable: {e}"));
    // A DROP behind a lock that is never released (a leaked transaction:
    // RELIABILITY.md) fails after a while instead of hanging the suite.
    sqlx::query("SET SESSION lock_wait_timeout = 120").execute(&mut conn).await.ok();
    sqlx::query(sql).execute(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// `mysql://user@host:port/db?x` with the database replaced.
fn replace_database(server_url: &str, database: &str) -> String {
    let (base, query) = match server_url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (server_url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_part = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{host_part}/{database}?{query}"),
        None => format!("{host_part}/{database}"),
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    handle: ServerHandle,
}

/// Whether a test switch (`TEST_REQUIRE_BROWSER`, `TEST_SERVICE_OUTAGES`, …)
/// is on, in the usual spellings of the service's own settings: `1`,
/// `true`, `yes`, `on`.
pub fn switch_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// The seed of a randomized model test: its own fixed seed, so CI replays
/// the same cases; `MODEL_SEED=<n>` moves every such test to other cases
/// (each still its own: the fixed seed is mixed in).
pub fn model_seed(fixed: u64) -> u64 {
    match std::env::var("MODEL_SEED").ok().and_then(|seed| seed.parse::<u64>().ok()) {
        Some(seed) => fixed ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        None => fixed,
    }
}

/// A server with the test defaults on a fresh database.
pub async fn spawn_app(backend: &Backend) -> (TestApp, TestDatabase) {
    let db = TestDatabase::new(backend).await;
    let app = spawn_app_on(&db, &[]).await;
    (app, db)
}

/// A server on an existing database, with extra `hiscore serve` flags.
pub async fn spawn_app_on(db: &TestDatabase, extra_args: &[&str]) -> TestApp {
    spawn_app_at(&db.url, db.redis.as_ref(), extra_args).await
}

/// A server on a database URL (and a Redis), with extra `hiscore serve` flags.
pub async fn spawn_app_at(database_url: &str, redis: Option<&TestRedis>, extra_args: &[&str]) -> TestApp {
    let mut args = vec![
        "hiscore",
        "--bind",
        "127.0.0.1:0",
        "--database-url",
        database_url,
        "--bcrypt-cost",
        "4",
        "--workers",
        "2",
        "--db-max-connections",
        "8",
        "--static-dir",
        "/nonexistent",
        // Tests post in bursts far beyond a game's pace; the limits have
        // their own tests (limits.rs), which set them explicitly.
        "--rate-posts-per-player",
        "0",
    ];
    if let Some(redis) = redis {
        args.extend_from_slice(&["--redis-url", &redis.url, "--redis-prefix", &redis.prefix]);
    }
    args.extend_from_slice(extra_args);
    let settings = Settings::try_parse_from(args).expect("test settings");
    let app = Application::build(settings).await.expect("build the app");
    let address = format!("http://127.0.0.1:{}", app.port());
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());
    // Idle connections are dropped before the server's keep-alive (5 s)
    // closes them: a request sent on one just as the server closes it
    // fails (`IncompleteMessage`), which a test that waited a few seconds
    // between requests met once.
    let client = reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(2)).build().unwrap();
    TestApp { address, client, handle }
}

/// A registered player.
pub struct Player {
    pub id: i64,
    pub token: String,
    pub login_name: String,
}

pub const PASSWORD: &str = "correct horse battery";

/// The admin token of `spawn_admin_app`.
pub const ADMIN: &str = "test-admin-token-that-is-long-enough";

/// The bench as the chaos tests run it against `target` while they break
/// something: a small dataset, two clients, one-second steps, generous
/// time limits (a failover stalls requests for seconds), its report in `out`.
pub fn chaos_bench(target: &str, duration: u64, seed: u64, out: &tempfile::TempDir) -> hiscore_bench::BenchArgs {
    hiscore_bench::BenchArgs {
        admin_token: Some(ADMIN.into()),
        duration,
        concurrency: 2,
        users: 300,
        scores: 3_000,
        seed,
        json: Some(out.path().join("bench.json")),
        slow_ms: 10_000,
        timeout_ms: 30_000,
        step_secs: Some(1),
        ..hiscore_bench::BenchArgs::against(target)
    }
}

/// A server with an admin token on a fresh database.
/// The instances a test reads through: one, or `shared` of them where
/// the backend lets instances share the boards (MariaDB + Redis), all on
/// `db` and started with `flags`.
pub async fn spawn_instances(backend: &Backend, db: &TestDatabase, shared: usize, flags: &[&str]) -> Vec<TestApp> {
    let count = if matches!(backend, Backend::MariaDbRedis { .. }) { shared } else { 1 };
    let mut apps = Vec::with_capacity(count);
    for _ in 0..count {
        apps.push(spawn_app_on(db, flags).await);
    }
    apps
}

/// A custom board's definition: `id` (also its name), `desc`, `best`, and
/// the fields of `extra` over those.
pub fn board_definition(id: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut definition = serde_json::json!({"id": id, "name": id, "order": "desc", "operator": "best"});
    for (field, value) in extra.as_object().expect("extra fields are an object") {
        definition[field] = value.clone();
    }
    definition
}

pub async fn spawn_admin_app(backend: &Backend) -> (TestApp, TestDatabase) {
    let db = TestDatabase::new(backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    (app, db)
}

impl TestApp {
    pub async fn stop(self) {
        self.handle.stop(true).await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub async fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    pub async fn get_json(&self, path: &str) -> (StatusCode, Value) {
        json_of(self.get(path).await).await
    }

    pub async fn get_authed(&self, path: &str, token: &str) -> (StatusCode, Value) {
        json_of(self.client.get(self.url(path)).bearer_auth(token).send().await.expect("request")).await
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.client.post(self.url(path)).json(body).send().await.expect("request")
    }

    pub async fn register_raw(&self, body: &Value) -> Response {
        self.post_json("/api/users", body).await
    }

    pub async fn register(&self, login_name: &str) -> Player {
        let response = self.register_raw(&json!({"login_name": login_name, "password": PASSWORD})).await;
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        Player {
            id: body["user"]["id"].as_i64().expect("id"),
            token: body["token"].as_str().expect("token").to_owned(),
            login_name: login_name.to_owned(),
        }
    }

    pub async fn login(&self, login_name: &str, password: &str) -> (StatusCode, Value) {
        json_of(self.post_json("/api/sessions", &json!({"login_name": login_name, "password": password})).await).await
    }

    pub async fn logout(&self, token: &str) -> StatusCode {
        self.client.delete(self.url("/api/sessions")).bearer_auth(token).send().await.expect("request").status()
    }

    pub async fn post_score_raw(
        &self,
        token: &str,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.post(self.url("/api/scores")).bearer_auth(token).json(body);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        json_of(request.send().await.expect("request")).await
    }

    /// Posts a score that must be accepted; returns the ScoreResult.
    pub async fn post_score(&self, player: &Player, score: i64) -> Value {
        let (status, body) = self.post_score_raw(&player.token, &json!({"score": score}), None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body
    }

    /// A ranking page; `query` is appended as is (e.g. "limit=3&offset=3").
    pub async fn ranking(&self, board: &str, query: &str) -> Value {
        let (status, body) = self.get_json(&format!("/api/rankings/{board}?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// An admin request with `ADMIN` as the token (`spawn_admin_app` sets it).
    pub async fn admin(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut request = self.client.request(method, self.url(path)).bearer_auth(ADMIN);
        if let Some(body) = body {
            request = request.json(body);
        }
        json_of(request.send().await.expect("request")).await
    }

    /// Creates a custom board that must be accepted; returns the Board.
    pub async fn create_board(&self, definition: &Value) -> Value {
        let (status, body) = self.admin(reqwest::Method::POST, "/api/admin/boards", Some(definition)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body
    }

    pub async fn post_board_score_raw(
        &self,
        token: &str,
        board: &str,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request =
            self.client.post(self.url(&format!("/api/boards/{board}/scores"))).bearer_auth(token).json(body);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        json_of(request.send().await.expect("request")).await
    }

    /// Posts a score to a custom board that must be accepted.
    pub async fn post_board_score(&self, player: &Player, board: &str, score: i64) -> Value {
        let (status, body) = self.post_board_score_raw(&player.token, board, &json!({"score": score}), None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body
    }

    pub async fn initialize(&self, admin_token: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .client
            .post(self.url("/api/admin/initialize"))
            .bearer_auth(admin_token)
            .json(body)
            .send()
            .await
            .expect("request");
        json_of(response).await
    }

    /// A series of /metrics, by its name and labels as written there
    /// (`hiscore_job_failures_total{job="close_period"}`); panics when absent.
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.expect("metrics body");
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{series} ")))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} in /metrics"))
    }

    /// The server's count of SQL statements (from /metrics) run so far for requests: all of them less those of
    /// the periodic jobs (closing periods, the outbox), which run beside
    /// any request a test measures.
    pub async fn statements_so_far(&self) -> i64 {
        let text = self.get("/metrics").await.text().await.expect("metrics body");
        let counter = |name: &str| -> i64 {
            text.lines()
                .find_map(|line| line.strip_prefix(&format!("{name} ")))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} in /metrics"))
        };
        counter("hiscore_db_statements_total") - counter("hiscore_db_job_statements_total")
    }
}

pub async fn json_of(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.expect("body");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"))
    };
    (status, value)
}

/// Asserts the contract's error envelope with `status` and `code`.
pub fn assert_error(status: StatusCode, body: &Value, expected_status: u16, expected_code: &str) {
    assert_eq!(status.as_u16(), expected_status, "{body}");
    assert_eq!(body["error"]["code"], expected_code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

/// (rank, user id) of every entry of a page.
pub fn ranks_and_ids(page: &Value) -> Vec<(i64, i64)> {
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["rank"].as_i64().expect("rank"), e["user"]["id"].as_i64().expect("user id")))
        .collect()
}

/// A live page's events, read with the bench's reader (a client of the
/// contract).
pub struct Events(hiscore_bench::live::LiveEvents);

impl Events {
    pub async fn open(app: &TestApp, path: &str, last_event_id: Option<&str>) -> Self {
        Self::open_url(&app.client, &app.url(path), last_event_id).await
    }

    /// A live page at any URL (through nginx, say).
    pub async fn open_url(client: &reqwest::Client, url: &str, last_event_id: Option<&str>) -> Self {
        let mut request = client.get(url);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        assert_eq!(response.headers()["content-type"], "text/event-stream", "{url}");
        Self(hiscore_bench::live::LiveEvents::new(response))
    }

    /// The next event (pings skipped), or `None` if none came within `wait`
    /// or the stream ended.
    pub async fn next(&mut self, wait: Duration) -> Option<hiscore_bench::live::LiveEvent> {
        let next = tokio::time::timeout(wait, self.0.next()).await.ok()?;
        next.expect("a well-formed stream")
    }
}

/// Waits until the final standings of the board row `board` (a board's
/// id, or a partition's row id `<board number>:<value>`) hold for
/// `period` (the job looks every 2 s at periods ended 2 s ago; a loaded
/// machine gets the rest of 30 s).
pub async fn settle(pool: &sqlx::AnyPool, board: &str, period: i64) {
    for _ in 0..300 {
        let (changes, standings): (i64, Option<i64>) = sqlx::query_as(
            "SELECT p.changes, p.standings_changes FROM board_periods p JOIN boards b ON b.number = p.board \
             WHERE b.id = ? AND p.period = ?",
        )
        .bind(board)
        .bind(period)
        .fetch_one(pool)
        .await
        .unwrap();
        if standings == Some(changes) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the standings of {board} period {period} were never written");
}

#[cfg(test)]
mod tests {
    use super::replace_database;

    #[test]
    fn replaces_the_database_in_a_url() {
        assert_eq!(replace_database("mysql://root@127.0.0.1:3306/test", "x"), "mysql://root@127.0.0.1:3306/x");
        assert_eq!(replace_database("mysql://root@localhost", "x"), "mysql://root@localhost/x");
        assert_eq!(replace_database("mysql://u:p@h/db?ssl-mode=disabled", "x"), "mysql://u:p@h/x?ssl-mode=disabled");
    }
}
