//! Outages of the machine's real MariaDB and Redis under a running service:
//! MariaDB stopped (alone, and in the middle of a validating bench run),
//! Redis stopped, started again empty and flushed during a bench run on two
//! instances behind nginx. Requests in a database gap get 503 with
//! Retry-After (no hang, no 500), the service recovers by itself, every
//! acknowledged post survives, and the instances converge.
//!
//! These tests stop the machine's services, so they run only with
//! TEST_SERVICE_OUTAGES=1 (CI sets it; cargo runs this binary after the API
//! suite, never beside it), one at a time, and always start the service
//! again, even on failure.

// Unwrapping is how a test says "this must hold".
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "api/external.rs"]
mod external;
#[allow(dead_code)]
#[path = "api/helpers.rs"]
mod helpers;

use std::process::Command;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hiscore_bench::Outcome;
use serde_json::{json, Value};

use helpers::{chaos_bench, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

/// The outages share the machine's services: one at a time.
static ONE_OUTAGE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `test` alone among the outage tests, on an actix runtime of its
/// own. (Each test is ignored unless the tests were built with
/// TEST_SERVICE_OUTAGES=1, TEST_MYSQL_URL and TEST_REDIS_URL: see build.rs.)
fn outage_test(test: impl std::future::Future<Output = ()>) {
    let _alone = ONE_OUTAGE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    actix_web::rt::System::new().block_on(test);
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

fn mariadb_answers() -> bool {
    succeeds("mysql", &["-h127.0.0.1", "-uroot", "-e", "SELECT 1"])
}

fn redis_answers() -> bool {
    Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", "6379", "ping"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "PONG")
}

fn wait_until(what: &str, limit: Duration, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A stopped service; started again when dropped (also when a test fails).
enum Outage {
    MariaDb,
    Redis,
}

impl Outage {
    fn mariadb() -> Self {
        let stopped = Command::new("start-stop-daemon")
            .args(["--stop", "--oknodo", "--retry", "TERM/30/KILL/5", "--exec", "/usr/sbin/mariadbd"])
            .status()
            .unwrap();
        assert!(stopped.success());
        wait_until("MariaDB stopping", Duration::from_secs(40), || !mariadb_answers());
        Self::MariaDb
    }

    /// Redis keeps nothing on disk here: it comes back empty.
    fn redis() -> Self {
        let _ = Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave"]).status();
        wait_until("Redis stopping", Duration::from_secs(20), || !redis_answers());
        Self::Redis
    }
}

impl Drop for Outage {
    fn drop(&mut self) {
        match self {
            Self::MariaDb => {
                let _ = Command::new("start-stop-daemon")
                    .args(["--start", "--oknodo", "--background", "--exec", "/usr/sbin/mariadbd"])
                    .status();
                wait_until("MariaDB starting again", Duration::from_secs(60), mariadb_answers);
            }
            Self::Redis => {
                // The machine's own start command (/work/.library/env).
                let _ = Command::new("redis-server")
                    .args(["--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379", "--save", ""])
                    .args(["--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"])
                    .status();
                wait_until("Redis starting again", Duration::from_secs(30), redis_answers);
            }
        }
    }
}

/// `/healthz` of an instance, from a plain thread (no runtime there).
fn health_of(address: &str) -> String {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(address.trim_start_matches("http://")) else {
        return String::new();
    };
    let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// Runs `plan` on a thread of its own (it blocks: stopping a service takes
/// seconds) while the bench runs on this one.
fn meanwhile(plan: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::spawn(plan)
}

async fn bench(target: &str, duration: u64) -> Outcome {
    let out = tempfile::tempdir().unwrap();
    hiscore_bench::run(chaos_bench(target, duration, 11, &out)).await.unwrap()
}

/// The bench passed with nothing but waiting: no critical or application
/// error, and every player's outcome known.
fn assert_rode_it_out(outcome: &Outcome) {
    let summary = &outcome.summary;
    eprintln!(
        "bench: {} requests, {} unavailable (503), {} posts applied, errors {:?}",
        summary.requests, summary.unavailable, summary.posts_applied, summary.errors
    );
    assert!(summary.pass, "{}\n{:#?}", outcome.verdict, summary.messages);
    assert_eq!((summary.errors.critical, summary.errors.application), (0, 0), "{:#?}", summary.messages);
    assert_eq!(summary.players_uncertain, 0, "a post's outcome stayed unknown");
    assert!(summary.posts_applied > 0);
}

/// The log holds the dataset's scores plus exactly the posts the bench saw
/// applied, and the denormalized rows and the player count agree with it.
async fn assert_nothing_acknowledged_was_lost(db: &TestDatabase, dataset_scores: i64, outcome: &Outcome) {
    let pool = db.connect().await;
    let (logged, logged_sum): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), CAST(COALESCE(SUM(score), 0) AS SIGNED) FROM scores")
            .fetch_one(&pool)
            .await
            .unwrap();
    let (plays, totals): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(play_count), 0) AS SIGNED), CAST(COALESCE(SUM(total_score), 0) AS SIGNED) FROM users",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(logged, dataset_scores + outcome.summary.posts_applied as i64, "acknowledged posts in the log");
    assert_eq!((plays, totals), (logged, logged_sum), "users rows agree with the score log");
    let (counted, players): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT players FROM board_stats WHERE id = 1), (SELECT COUNT(*) FROM users WHERE play_count > 0)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(counted, players, "board_stats counts the players");
}

/// A whole board, walked by cursor, as (rank, id, score).
async fn board(app: &TestApp, board: &str) -> Vec<(i64, i64, i64)> {
    let mut entries = Vec::new();
    let mut path = format!("/api/rankings/{board}?limit=100");
    loop {
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, 200, "{page}");
        for entry in page["entries"].as_array().unwrap() {
            entries.push((
                entry["rank"].as_i64().unwrap(),
                entry["user"]["id"].as_i64().unwrap(),
                entry["score"].as_i64().unwrap(),
            ));
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/rankings/{board}?limit=100&cursor={cursor}"),
            None => return entries,
        }
    }
}

#[test]
#[cfg_attr(
    not(all(hiscore_test_outages, hiscore_test_mysql, hiscore_test_redis)),
    ignore = "set TEST_SERVICE_OUTAGES=1, TEST_MYSQL_URL and TEST_REDIS_URL (these tests stop the machine's MariaDB and Redis)"
)]
fn a_database_outage_is_503_with_retry_after_and_the_service_recovers() {
    outage_test(async {
        let backend = Backend::mariadb();
        let db = TestDatabase::new(&backend).await;
        let app = spawn_app_on(&db, &[]).await;
        let alice = app.register("alice").await;
        let mut acknowledged = vec![app.post_score(&alice, 10).await["score"]["id"].as_i64().unwrap()];
        assert_eq!(app.get("/api/rankings/best").await.status(), 200); // names now cached

        let outage = Outage::mariadb();
        for _ in 0..3 {
            let started = Instant::now();
            let response = app
                .client
                .post(app.url("/api/scores"))
                .bearer_auth(&alice.token)
                .json(&json!({"score": 20}))
                .send()
                .await
                .unwrap();
            assert!(started.elapsed() < Duration::from_secs(10), "a request hung during the outage");
            assert_eq!(response.status(), 503, "a post during the outage");
            assert!(response.headers().get("retry-after").is_some());
            let body: Value = response.json().await.unwrap();
            assert!(
                body["error"]["code"].is_string() && !body["error"]["message"].as_str().unwrap().contains("sqlx"),
                "{body}"
            );
        }
        let health = app.get("/healthz").await;
        assert_eq!(health.status(), 503);
        assert!(health.headers().get("retry-after").is_some());
        // Pages come from the rank engine and cached names: still served (a
        // page with uncached names would be a 503 like the rest).
        assert_eq!(app.get("/api/rankings/best").await.status(), 200);
        drop(outage);

        // The service recovers by itself: no restart.
        let started = Instant::now();
        loop {
            let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 30}), None).await;
            if status == 201 {
                acknowledged.push(body["score"]["id"].as_i64().unwrap());
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no recovery: {status} {body}");
            actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(app.get("/healthz").await.status(), 200);
        let pool = db.connect().await;
        let logged: Vec<i64> = sqlx::query_scalar("SELECT id FROM scores").fetch_all(&pool).await.unwrap();
        assert_eq!(logged, acknowledged, "the log holds exactly the acknowledged posts");
        let (_, me) = app.get_authed("/api/me", &alice.token).await;
        assert_eq!((me["play_count"].clone(), me["total_score"].clone()), (json!(2), json!(40)));
    });
}

/// MariaDB stopped for a few seconds in the middle of a validating bench
/// run on MariaDB + Redis: the bench waits out the 503s, the run passes,
/// and the log holds every post the bench saw applied.
#[test]
#[cfg_attr(
    not(all(hiscore_test_outages, hiscore_test_mysql, hiscore_test_redis)),
    ignore = "set TEST_SERVICE_OUTAGES=1, TEST_MYSQL_URL and TEST_REDIS_URL (these tests stop the machine's MariaDB and Redis)"
)]
fn a_bench_run_rides_out_a_database_outage() {
    outage_test(async {
        let backend = Backend::mariadb_redis();
        let db = TestDatabase::new(&backend).await;
        let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;

        let plan = meanwhile(|| {
            std::thread::sleep(Duration::from_secs(5));
            let outage = Outage::mariadb();
            std::thread::sleep(Duration::from_secs(3));
            drop(outage);
        });
        let outcome = bench(&app.address, 16).await;
        plan.join().unwrap();

        assert_rode_it_out(&outcome);
        assert!(outcome.summary.unavailable > 0, "the outage never reached the bench");
        assert_eq!(app.get("/healthz").await.status(), 200);
        assert_nothing_acknowledged_was_lost(&db, 3_000, &outcome).await;
    });
}

/// Redis stopped, started again empty, then flushed, during a validating
/// bench run through nginx on two instances: no request fails, and once
/// Redis is back the instances rebuild the shared board and agree.
#[test]
#[cfg_attr(
    not(all(hiscore_test_outages, hiscore_test_mysql, hiscore_test_redis)),
    ignore = "set TEST_SERVICE_OUTAGES=1, TEST_MYSQL_URL and TEST_REDIS_URL (these tests stop the machine's MariaDB and Redis)"
)]
fn a_bench_run_on_two_instances_rides_out_a_redis_restart_and_a_flushall() {
    outage_test(async {
        let backend = Backend::mariadb_redis();
        let db = TestDatabase::new(&backend).await;
        let args = ["--admin-token", ADMIN, "--trust-forwarded-for"];
        let apps = [spawn_app_on(&db, &args).await, spawn_app_on(&db, &args).await];
        let upstreams: Vec<&str> = apps.iter().map(|app| app.address.trim_start_matches("http://")).collect();
        let Some(front) = external::nginx_in_front_of(&upstreams.join(",")).await else { return };

        let addresses: Vec<String> = apps.iter().map(|app| app.address.clone()).collect();
        let plan = meanwhile(move || {
            std::thread::sleep(Duration::from_secs(5));
            let outage = Outage::redis();
            wait_until("both instances serving from the database", Duration::from_secs(5), || {
                addresses.iter().all(|address| health_of(address).contains(r#""redis":"degraded""#))
            });
            std::thread::sleep(Duration::from_secs(3));
            drop(outage); // back, empty
            std::thread::sleep(Duration::from_secs(3));
            assert!(succeeds("redis-cli", &["-h", "127.0.0.1", "-p", "6379", "flushall"]));
        });
        let outcome = bench(&front.site, 16).await;
        plan.join().unwrap();

        assert_rode_it_out(&outcome);
        assert_eq!(outcome.summary.unavailable, 0, "Redis is a cache: its outage makes nothing unavailable");
        assert_nothing_acknowledged_was_lost(&db, 3_000, &outcome).await;
        // Both instances report Redis healthy again and serve the same boards.
        let started = Instant::now();
        for app in &apps {
            while app.get_json("/healthz").await.1["redis"] != "ok" {
                assert!(started.elapsed() < Duration::from_secs(15), "an instance did not get Redis back");
                actix_web::rt::time::sleep(Duration::from_millis(200)).await;
            }
        }
        for name in ["best", "total"] {
            let (first, second) = (board(&apps[0], name).await, board(&apps[1], name).await);
            assert_eq!(first.len(), ranked_players(&db).await, "the {name} board is whole");
            assert_eq!(first, second, "the instances disagree on the {name} board");
        }
    });
}

/// Players with at least one score, by the database.
async fn ranked_players(db: &TestDatabase) -> usize {
    let pool = db.connect().await;
    let ranked: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE play_count > 0").fetch_one(&pool).await.unwrap();
    usize::try_from(ranked).unwrap()
}
