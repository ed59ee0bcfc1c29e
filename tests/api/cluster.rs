//! hiscore on a Redis Cluster (`REDIS_URL=redis+cluster://…`): the boards
//! spread over the masters (one hash tag per board), and a master killed
//! during a validating bench run through nginx on two instances costs
//! nothing: the replica takes over, the run passes, and afterwards every
//! instance serves the boards the database holds. (Every API test also
//! runs on a cluster: the `mariadb_redis_cluster` variants.)

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use hiscore_bench as bench;
use serde_json::json;

use crate::external::{nginx_in_front_of, shared_redis_cluster, RedisCluster};
use crate::helpers::{chaos_bench, spawn_app_on, Backend, TestApp, TestDatabase, TestRedis, ADMIN};

/// The board numbers (`{b:N}` hash tags) whose keys a master holds.
fn boards_on(port: u16, prefix: &str) -> HashSet<String> {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--scan", "--pattern", &format!("{prefix}:{{b:*")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|key| Some(key[key.find("{b:")?..=key.find('}')?].to_owned()))
        .collect()
}

#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn three_hundred_boards_spread_over_every_master() {
    let backend = Backend::mariadb_redis_cluster();
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    for n in 0..300 {
        app.create_board(&json!({"id": format!("level-{n}"), "name": format!("Level {n}")})).await;
    }
    let cluster = shared_redis_cluster();
    let prefix = &db.redis.as_ref().unwrap().prefix;
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3, "three masters");
    let per_master: Vec<usize> = masters.iter().map(|port| boards_on(*port, prefix).len()).collect();
    assert_eq!(per_master.iter().sum::<usize>(), 300, "every board on exactly one master: {per_master:?}");
    assert!(per_master.iter().all(|boards| *boards >= 60), "boards spread over the masters: {per_master:?}");
}

/// A whole board, walked by cursor, as (id, score).
async fn board(app: &TestApp, board: &str) -> Vec<(i64, i64)> {
    let mut entries = Vec::new();
    let mut path = format!("/api/rankings/{board}?limit=100");
    loop {
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, 200, "{page}");
        for entry in page["entries"].as_array().unwrap() {
            entries.push((entry["user"]["id"].as_i64().unwrap(), entry["score"].as_i64().unwrap()));
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/rankings/{board}?limit=100&cursor={cursor}"),
            None => return entries,
        }
    }
}

/// The built-in boards as the database has them: (id, score) in board order.
async fn truth(db: &TestDatabase, board: &str) -> Vec<(i64, i64)> {
    let sql = match board {
        "best" => {
            "SELECT id, best_score FROM users WHERE play_count > 0 AND banned_at IS NULL \
             ORDER BY best_score DESC, best_at ASC, id ASC"
        }
        _ => "SELECT id, total_score FROM users WHERE play_count > 0 AND banned_at IS NULL ORDER BY total_score DESC, id ASC",
    };
    sqlx::query_as(sql).fetch_all(&db.connect().await).await.unwrap()
}

/// The port of the master holding this prefix's built-in boards.
fn master_of_builtin_boards(cluster: &RedisCluster, prefix: &str) -> u16 {
    let holds = |port: &u16| {
        let output = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "--scan", "--pattern", &format!("{prefix}:{{builtin}}*")])
            .output()
            .unwrap();
        !output.stdout.is_empty()
    };
    cluster.masters().into_iter().find(holds).expect("a master holds the built-in boards")
}

fn sigkill_node(port: u16) {
    let info = Command::new("redis-cli").args(["-p", &port.to_string(), "info", "server"]).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    let pid = info.lines().find_map(|line| line.strip_prefix("process_id:")).unwrap().trim().to_owned();
    assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
}

#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_bench_run_rides_out_a_killed_master() {
    let Backend::MariaDbRedis { server_url, .. } = Backend::mariadb_redis() else { unreachable!() };
    // A cluster of its own: this test kills one of its masters.
    let cluster = RedisCluster::start();
    let backend = Backend::MariaDbRedis { server_url, redis_url: cluster.url() };
    let db = TestDatabase::new(&backend).await;
    let TestRedis { prefix, .. } = db.redis.clone().unwrap();
    let args = ["--admin-token", ADMIN, "--trust-forwarded-for"];
    let apps = [spawn_app_on(&db, &args).await, spawn_app_on(&db, &args).await];
    let upstreams: Vec<&str> = apps.iter().map(|app| app.address.trim_start_matches("http://")).collect();
    let Some(front) = nginx_in_front_of(&upstreams.join(",")).await else { return };

    let out = tempfile::tempdir().unwrap();
    let run = bench::run(chaos_bench(&front.site, 10, 5, &out));
    let killer = async {
        // After the initialize and the quiet check, while the load runs.
        actix_web::rt::time::sleep(Duration::from_secs(6)).await;
        let victim = master_of_builtin_boards(&cluster, &prefix);
        sigkill_node(victim);
        victim
    };
    let (outcome, victim) = futures_util::future::join(run, killer).await;
    let outcome = outcome.unwrap();
    let summary = &outcome.summary;
    assert!(summary.pass, "{}\n{:#?}", outcome.verdict, summary.messages);
    assert_eq!((summary.errors.critical, summary.errors.application), (0, 0), "{:#?}", summary.messages);
    assert_eq!(summary.players_uncertain, 0);
    assert!(!cluster.masters().contains(&victim), "the killed master is gone");
    cluster.wait_until_ok();

    // Redis healthy again on both instances, and both serve the boards
    // the database holds (writes lost with the master were rebuilt).
    let started = Instant::now();
    for app in &apps {
        while app.get_json("/healthz").await.1["redis"] != "ok" {
            assert!(started.elapsed() < Duration::from_secs(30), "an instance did not get Redis back");
            actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for name in ["best", "total"] {
        let expected = truth(&db, name).await;
        assert!(!expected.is_empty());
        for app in &apps {
            assert_eq!(board(app, name).await, expected, "the {name} board differs from the database");
        }
    }
}
