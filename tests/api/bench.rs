//! `hiscore bench` end to end: it passes on hiscore and on an independent
//! server of the contract that answers its choices the other way, and fails
//! in every run on servers with known bugs (the classic "load more restarts
//! at rank 1", a lowest-wins board ranked highest first, dense ranks).

use actix_web::{web, App, HttpResponse, HttpServer};
use hiscore_bench::{self as bench, BenchArgs};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase};

backend_tests!(a_short_bench_passes_on_hiscore);

fn args(target: String, admin_token: Option<&str>, out: &tempfile::TempDir) -> BenchArgs {
    BenchArgs {
        admin_token: admin_token.map(str::to_owned),
        duration: 3,
        concurrency: 3,
        users: 150,
        scores: 1_500,
        seed: 7,
        json: Some(out.path().join("bench.json")),
        html: Some(out.path().join("bench.html")),
        slow_ms: 5_000,
        timeout_ms: 10_000,
        step_secs: Some(1),
        ..BenchArgs::against(&target)
    }
}

async fn a_short_bench_passes_on_hiscore(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let app =
        spawn_app_on(&db, &["--admin-token", "bench-token-long-enough-for-the-check", "--static-dir", static_dir])
            .await;
    let out = tempfile::tempdir().unwrap();

    let outcome =
        bench::run(args(app.address.clone(), Some("bench-token-long-enough-for-the-check"), &out)).await.unwrap();

    assert!(outcome.summary.pass, "{}\n{:#?}", outcome.verdict, outcome.summary.messages);
    assert!(outcome.verdict.starts_with("score: ") && outcome.verdict.ends_with(" pass"), "{}", outcome.verdict);
    assert!(outcome.summary.score > 0);
    assert!(outcome.summary.load_level >= 2, "the load rose while error-free");
    let paths: Vec<&str> = outcome.summary.endpoints.iter().map(|e| e.path.as_str()).collect();
    for expected in [
        "/api/scores",
        "/api/rankings/{board}",
        "/api/users",
        "/api/me",
        "/",
        "/api/boards/{board}/scores",
        "/api/admin/boards",
        "/api/admin/scores/{id}",
        "/api/admin/users/{id}/ban",
    ] {
        assert!(paths.contains(&expected), "{expected} not exercised: {paths:?}");
    }
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("bench.json")).unwrap()).unwrap();
    for key in ["pass", "score", "load_level", "requests", "errors", "endpoints", "messages", "timeline", "phases"] {
        assert!(json.get(key).is_some(), "{key} missing from the JSON summary");
    }
    let phases: Vec<&str> = json["phases"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    for phase in ["initialize", "quiet check", "level 1", "final check"] {
        assert!(phases.contains(&phase), "{phase} not marked: {phases:?}");
    }
    let html = std::fs::read_to_string(out.path().join("bench.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Requests per second"));
}

/// A latency threshold that cannot be met fails an otherwise good run, and
/// says which and by how much; a seeded scenario runs too.
#[actix_web::test]
async fn a_missed_latency_threshold_fails_the_run() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--admin-token", "bench-token-long-enough-for-the-check"]).await;
    let out = tempfile::tempdir().unwrap();
    let outcome = bench::run(BenchArgs {
        duration: 2,
        thresholds: vec![
            bench::Threshold::parse("max<3600s").unwrap(),
            bench::Threshold::parse("p50<0.001ms").unwrap(),
        ],
        scenario_seed: Some(7),
        ..args(app.address.clone(), Some("bench-token-long-enough-for-the-check"), &out)
    })
    .await
    .unwrap();
    assert!(!outcome.summary.pass);
    assert!(outcome.verdict.contains("threshold p50<0.001ms not met"), "{}", outcome.verdict);
    assert_eq!(outcome.summary.errors.critical, 0, "{:#?}", outcome.summary.messages);
}

/// The open model: the run is paced (and says so on its charts) and still
/// checks every answer.
#[actix_web::test]
async fn an_open_model_run_passes() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--admin-token", "bench-token-long-enough-for-the-check"]).await;
    let out = tempfile::tempdir().unwrap();
    let outcome = bench::run(BenchArgs {
        duration: 2,
        rate: Some(200),
        ..args(app.address.clone(), Some("bench-token-long-enough-for-the-check"), &out)
    })
    .await
    .unwrap();
    assert!(outcome.summary.pass, "{}\n{:#?}", outcome.verdict, outcome.summary.messages);
    assert!(outcome.summary.phases.iter().any(|phase| phase.name == "paced at 200/s"), "{:?}", outcome.summary.phases);
}

/// hiscore with a planted bug: posts to a resetting board counted in the
/// period before the one in force. The run must fail and say so.
#[actix_web::test]
async fn the_bench_catches_a_post_counted_in_the_wrong_period() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(
        &db,
        &["--admin-token", "bench-token-long-enough-for-the-check", "--planted-fault", "wrong-period"],
    )
    .await;
    let out = tempfile::tempdir().unwrap();
    // Long enough for the three-second board to reset twice.
    let outcome = bench::run(BenchArgs {
        duration: 8,
        ..args(app.address.clone(), Some("bench-token-long-enough-for-the-check"), &out)
    })
    .await
    .unwrap();
    assert!(!outcome.summary.pass, "the planted bug went unnoticed");
    assert!(outcome.verdict.contains("counted in period"), "the failure names the period: {}", outcome.verdict);
}

/// hiscore with a planted bug: a removed post is recounted everywhere but
/// in the rank engine, whose boards keep the old score. The bench's
/// moderation must notice at its next read.
#[actix_web::test]
async fn the_bench_catches_a_rank_engine_left_stale_by_a_removed_post() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(
        &db,
        &["--admin-token", "bench-token-long-enough-for-the-check", "--planted-fault", "stale-engine-after-delete"],
    )
    .await;
    let out = tempfile::tempdir().unwrap();
    let outcome = bench::run(BenchArgs {
        duration: 4,
        ..args(app.address.clone(), Some("bench-token-long-enough-for-the-check"), &out)
    })
    .await
    .unwrap();
    assert!(!outcome.summary.pass, "the planted bug went unnoticed");
    assert!(outcome.verdict.contains("after a removed post"), "the failure names the removal: {}", outcome.verdict);
}

/// A fake server whose pages rank each page from 1 (the classic bug).
async fn page_local_ranks(board: web::Path<String>, query: web::Query<Vec<(String, String)>>) -> HttpResponse {
    const PLAYERS: i64 = 25;
    let param = |name: &str| query.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.parse::<i64>().ok());
    let limit = param("limit").unwrap_or(10);
    let offset = param("offset").or_else(|| param("cursor")).unwrap_or(0);
    let board = board.into_inner();
    let end = (offset + limit).min(PLAYERS);
    let entries: Vec<Value> = (offset..end)
        .enumerate()
        .map(|(i, position)| {
            let id = position + 1;
            json!({
                "rank": i + 1, // page-local: wrong from page 2 on
                "score": 1000 - position,
                "achieved_at": if board == "best" { json!("2026-01-01T00:00:00.000Z") } else { Value::Null },
                "user": {"id": id, "display_name": format!("p{id}"), "image": id % 10 + 1},
            })
        })
        .collect();
    let more = end < PLAYERS;
    HttpResponse::Ok().json(json!({
        "board": board, "entries": entries, "total_players": PLAYERS,
        "next_offset": if more { json!(end) } else { Value::Null },
        "next_cursor": if more { json!(end.to_string()) } else { Value::Null },
    }))
}

#[actix_web::test]
async fn the_bench_fails_a_server_whose_load_more_restarts_at_rank_one() {
    let server = HttpServer::new(|| {
        App::new()
            .route("/api/admin/initialize", web::post().to(|| async { HttpResponse::Ok().json(json!({})) }))
            .route("/api/rankings/{board}", web::get().to(page_local_ranks))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let address = format!("http://{}", server.addrs()[0]);
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    let out = tempfile::tempdir().unwrap();

    let outcome = bench::run(args(address, Some("any"), &out)).await.unwrap();
    handle.stop(false).await;

    assert!(!outcome.summary.pass);
    assert!(outcome.summary.errors.critical >= 1);
    assert!(outcome.verdict.starts_with("score: 0 fail: "), "{}", outcome.verdict);
    assert!(outcome.verdict.contains("rank"), "the failure names the rank problem: {}", outcome.verdict);
}

/// `tests/fake_server/contract_server.py`: a small server of the contract
/// written independently of hiscore (in Python), which answers where the
/// contract allows a choice the other way from hiscore, and can plant a
/// known fault. Stopped when dropped.
struct ContractServer {
    process: std::process::Child,
    address: String,
}

impl ContractServer {
    const ADMIN_TOKEN: &'static str = "contract-server-admin-token";

    fn start(fault: Option<&str>) -> Self {
        use std::io::BufRead as _;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_server/contract_server.py");
        let mut command = std::process::Command::new("python3");
        command.args([script, "--admin-token", Self::ADMIN_TOKEN]).stdout(std::process::Stdio::piped());
        if let Some(fault) = fault {
            command.args(["--fault", fault]);
        }
        let mut process = command.spawn().expect("python3 runs the contract server");
        let mut first_line = String::new();
        std::io::BufReader::new(process.stdout.take().unwrap()).read_line(&mut first_line).unwrap();
        let address = first_line.trim().strip_prefix("listening on ").expect("the server says where").to_owned();
        Self { process, address }
    }

    async fn bench(&self, duration: u64, out: &tempfile::TempDir) -> bench::Outcome {
        let args = BenchArgs { duration, ..args(self.address.clone(), Some(Self::ADMIN_TOKEN), out) };
        bench::run(args).await.unwrap()
    }
}

impl Drop for ContractServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A correct server that answers the contract's other readings (a banned
/// player's old token is 401, a replay is 200, cursor walks read a
/// snapshot, around has no next page) passes.
#[actix_web::test]
async fn the_bench_passes_an_independent_server_that_reads_the_contract_otherwise() {
    let server = ContractServer::start(None);
    let out = tempfile::tempdir().unwrap();
    let outcome = server.bench(4, &out).await;
    assert!(outcome.summary.pass, "{}\n{:#?}", outcome.verdict, outcome.summary.messages);
    let paths: Vec<&str> = outcome.summary.endpoints.iter().map(|e| e.path.as_str()).collect();
    for expected in [
        "/api/boards/{board}/scores",
        "/api/admin/users/{id}/ban",
        "/api/rankings/{board}/users",
        "/api/rankings/{board}/live",
    ] {
        assert!(paths.contains(&expected), "{expected} not exercised: {paths:?}");
    }
}

/// A server that ranks a lowest-wins board highest first fails every run,
/// however short: every board kind is read and checked before the load.
#[actix_web::test]
async fn the_bench_fails_a_lowest_wins_board_ranked_highest_first_in_every_run() {
    let server = ContractServer::start(Some("lowest-wins-highest-first"));
    let out = tempfile::tempdir().unwrap();
    for run in 1..=3 {
        let outcome = server.bench(1, &out).await;
        assert!(!outcome.summary.pass, "run {run}: the planted fault went unnoticed");
        assert!(
            outcome.verdict.contains("fastest") && outcome.verdict.contains("out of board order"),
            "run {run}: the failure names the board and its order: {}",
            outcome.verdict
        );
    }
}

/// A live page that sends an older page after a newer one fails the run.
/// The fault shows only when a watched page changes while the bench
/// watches it: 10 s, where 4 s once missed it on a loaded CI machine.
#[actix_web::test]
async fn the_bench_fails_a_live_page_that_steps_back() {
    let server = ContractServer::start(Some("live-steps-back"));
    let out = tempfile::tempdir().unwrap();
    let outcome = server.bench(10, &out).await;
    assert!(!outcome.summary.pass, "the planted fault went unnoticed");
    assert!(outcome.verdict.contains("an older page"), "{}", outcome.verdict);
}

/// Dense ranks (1, 2, 2, 3) instead of competition ranks fail every run.
#[actix_web::test]
async fn the_bench_fails_dense_ranks_in_every_run() {
    let server = ContractServer::start(Some("dense-ranks"));
    let out = tempfile::tempdir().unwrap();
    for run in 1..=2 {
        let outcome = server.bench(1, &out).await;
        assert!(!outcome.summary.pass, "run {run}: the planted fault went unnoticed");
        assert!(outcome.verdict.contains("competition ranking"), "run {run}: {}", outcome.verdict);
    }
}
