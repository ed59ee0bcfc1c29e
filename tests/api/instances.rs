//! Several instances on one database and one Redis, and an instance whose
//! Redis is gone.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{ranks_and_ids, spawn_app_on, Backend, TestDatabase, PASSWORD};

#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn two_instances_share_one_board_sessions_and_logouts() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let a = spawn_app_on(&db, &[]).await;
    let b = spawn_app_on(&db, &[]).await;

    let mut players = Vec::new();
    for i in 0..6 {
        let app = if i % 2 == 0 { &a } else { &b };
        let player = app.register(&format!("multi{i}")).await;
        app.post_score(&player, 100 + 10 * (i % 3)).await;
        players.push(player);
    }
    // Every page and rank agrees, whichever instance answers.
    for board in ["best", "total"] {
        let (from_a, from_b) = (a.ranking(board, "limit=100").await, b.ranking(board, "limit=100").await);
        assert_eq!(ranks_and_ids(&from_a), ranks_and_ids(&from_b), "{board}");
        assert_eq!(from_a["total_players"], 6);
    }
    for player in &players {
        let path = format!("/api/users/{}", player.id);
        assert_eq!(a.get_json(&path).await.1["best_rank"], b.get_json(&path).await.1["best_rank"]);
    }

    // A player reads their own post back from the other instance at once
    // (B has read this row before, so a stale cached copy would show).
    let reader = &players[2];
    assert_eq!(b.get_authed("/api/me", &reader.token).await.1["play_count"], 1);
    let result = a.post_score(reader, 5).await;
    let (_, me) = b.get_authed("/api/me", &reader.token).await;
    assert_eq!(
        (me["play_count"].clone(), me["total_score"].clone()),
        (json!(2), result["user"]["total_score"].clone())
    );

    // A post on A shows on B's board within a second.
    let last = &players[5];
    let posted = Instant::now();
    a.post_score(last, 1_000).await;
    loop {
        let top = b.ranking("best", "limit=1").await;
        if top["entries"][0]["user"]["id"] == last.id {
            break;
        }
        assert!(posted.elapsed() < Duration::from_secs(1), "B still shows {top} a second after the post on A");
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }

    // A session made on B works on A, and a logout on A kills it on B at once.
    let (_, session) = b.login("multi0", PASSWORD).await;
    let token = session["token"].as_str().unwrap();
    assert_eq!(a.get_authed("/api/me", token).await.0, StatusCode::OK);
    assert_eq!(b.get_authed("/api/me", token).await.0, StatusCode::OK);
    assert_eq!(a.logout(token).await, StatusCode::NO_CONTENT);
    assert_eq!(b.get_authed("/api/me", token).await.0, StatusCode::UNAUTHORIZED);
}

#[actix_web::test]
async fn without_redis_every_endpoint_still_answers_correctly() {
    // Redis configured at a port where nothing listens.
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--redis-url", "redis://127.0.0.1:1", "--redis-prefix", "dead"]).await;

    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    app.post_score(&alice, 50).await;
    let result = app.post_score(&bob, 70).await;
    assert_eq!(result["user"]["best_rank"], 1);

    let page = app.ranking("best", "limit=10").await;
    assert_eq!(ranks_and_ids(&page), [(1, bob.id), (2, alice.id)]);
    let around = app.ranking(&format!("total/around/{}", alice.id), "radius=1").await;
    assert_eq!(ranks_and_ids(&around), [(1, bob.id), (2, alice.id)]);
    let (status, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!((status, me["best_rank"].clone()), (StatusCode::OK, json!(2)));
    let (_, users) = app.get_json(&format!("/api/users?ids={},{}", alice.id, bob.id)).await;
    assert_eq!(users["users"][1]["total_rank"], 1);
    assert_eq!(app.logout(&alice.token).await, StatusCode::NO_CONTENT);
    assert_eq!(app.get_authed("/api/me", &alice.token).await.0, StatusCode::UNAUTHORIZED);

    let (status, health) = app.get_json("/healthz").await;
    assert_eq!(status, StatusCode::OK, "a missing Redis is not a failed health check");
    assert_eq!(health["redis"], "degraded");
}

#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_flushed_redis_is_rebuilt_while_the_service_answers() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &[]).await;
    let mut players = Vec::new();
    for i in 0..5 {
        let player = app.register(&format!("flush{i}")).await;
        app.post_score(&player, 10 * (i + 1)).await;
        players.push(player);
    }
    let before = ranks_and_ids(&app.ranking("best", "limit=10").await);

    // Every key of this deployment gone, as after a FLUSHALL or a restart.
    db.redis.as_ref().unwrap().flush().await;

    // Answers stay right throughout, and a post in the gap is not lost.
    app.post_score(&players[0], 1_000).await;
    let started = Instant::now();
    let mut healthy = false;
    while started.elapsed() < Duration::from_secs(10) {
        let page = ranks_and_ids(&app.ranking("best", "limit=10").await);
        assert_eq!(page[0], (1, players[0].id), "during the rebuild: {page:?}");
        let shifted: Vec<(i64, i64)> = before[..4].iter().map(|(rank, id)| (rank + 1, *id)).collect();
        assert_eq!(page[1..], shifted[..]);
        if app.get_json("/healthz").await.1["redis"] == "ok" {
            healthy = true;
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(healthy, "the shared board was not rebuilt within 10 s");
    let page = ranks_and_ids(&app.ranking("best", "limit=10").await);
    assert_eq!(page[0], (1, players[0].id), "the post made while Redis was empty survived the rebuild");
    assert_eq!(page.len(), 5);
}

/// The production shape end to end: three instances on one MariaDB and
/// Redis behind nginx, and a validating `hiscore bench` run through nginx.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_bench_run_passes_through_nginx_on_three_instances() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let args =
        ["--admin-token", "test-admin-token-0123456789abcdef", "--static-dir", static_dir, "--trust-forwarded-for"];
    let apps = [spawn_app_on(&db, &args).await, spawn_app_on(&db, &args).await, spawn_app_on(&db, &args).await];
    let upstreams: Vec<String> = apps.iter().map(|app| app.address.trim_start_matches("http://").to_owned()).collect();
    let Some(front) = crate::external::nginx_in_front_of(&upstreams.join(",")).await else { return };
    let out = tempfile::tempdir().unwrap();

    let outcome = hiscore_bench::run(hiscore_bench::BenchArgs {
        admin_token: Some("test-admin-token-0123456789abcdef".into()),
        duration: 4,
        concurrency: 3,
        users: 200,
        scores: 2_000,
        seed: 5,
        json: Some(out.path().join("bench.json")),
        slow_ms: 5_000,
        timeout_ms: 10_000,
        step_secs: Some(1),
        ..hiscore_bench::BenchArgs::against(&front.site)
    })
    .await
    .unwrap();
    assert!(outcome.summary.pass, "{}\n{:#?}", outcome.verdict, outcome.summary.messages);
    // Every instance answered some of it.
    for app in &apps {
        let text = app.get("/metrics").await.text().await.unwrap();
        assert!(text.contains("route=\"/api/rankings/{board}\""), "an instance served no page");
    }
}

#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn moderation_on_one_instance_shows_on_the_other_at_the_next_read() {
    moderation_shows_on_the_other_instance(&[]).await;
}

/// Page leases long enough that B's copy is still vouched for at its next
/// read: every answer that changed a board (a post, a rename, a removal, a
/// ban, a board made) must wait them out first, else these fail.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn under_long_page_leases_every_change_still_shows_at_the_next_read() {
    let lease = ["--page-lease-us", "400000"];
    kept_pages_follow_the_other_instance(&lease).await;
    moderation_shows_on_the_other_instance(&lease).await;
}

/// A page under its lease is served without asking Redis: an instance
/// that does not wait the leases out (one told there are none) leaves B's
/// copy standing until the lease runs out, which is why every instance
/// must run with the same length.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_page_lease_vouches_for_a_kept_page_without_asking_redis() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let (lease, wait_out) = (Duration::from_secs(1), Duration::from_millis(1_100));
    let a = spawn_app_on(&db, &["--page-lease-us", "0"]).await;
    let b = spawn_app_on(&db, &["--page-lease-us", "1000000"]).await;
    let (first, second) = (a.register("lease1").await, a.register("lease2").await);
    a.post_score(&first, 50).await;
    // A machine slow enough to take the whole lease over three requests
    // proves nothing either way; three tries.
    for attempt in 0..3 {
        actix_web::rt::time::sleep(wait_out).await;
        let began = Instant::now();
        // B's earlier leases have run out: it asks Redis, leased from now.
        let before = b.ranking("best", "limit=10").await;
        a.post_score(&second, 100 + attempt).await;
        let after = b.ranking("best", "limit=10").await;
        if began.elapsed() < lease {
            assert_eq!(after, before, "B asked Redis again within its lease");
            actix_web::rt::time::sleep(wait_out).await;
            let top = b.ranking("best", "limit=10").await;
            assert_eq!(top["entries"][0]["score"], 100 + attempt, "the lease ran out, and B still served its copy");
            return;
        }
    }
    panic!("no try took less than the lease");
}

/// A lease found due is renewed beside the request that found it so: that
/// request is answered from the copy like the others (no request waits on
/// a renewal), and the renewal vouches for the copy anew when Redis says
/// its board has not moved, and not when it has. Seen, as above, through
/// an instance that does not wait the leases out.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_due_page_lease_is_renewed_beside_the_answer() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let lease = Duration::from_secs(1);
    let a = spawn_app_on(&db, &["--page-lease-us", "0"]).await;
    let b = spawn_app_on(&db, &["--page-lease-us", "1000000"]).await;
    let (first, second) = (a.register("renew1").await, a.register("renew2").await);
    a.post_score(&first, 50).await;
    let top = || b.ranking("best", "limit=10");
    let until = |at: Instant| actix_web::rt::time::sleep(at.saturating_duration_since(Instant::now()));
    // Each try begins once B's leases have run out: its first read asks
    // Redis, leased from then. A machine too slow to read within the
    // times below proves nothing either way; three tries each.
    let mut renewed = false;
    for attempt in 0..3 {
        until(Instant::now() + 2 * lease).await;
        let checked = Instant::now();
        let before = top().await;
        until(checked + lease * 6 / 10).await;
        let due = Instant::now();
        assert_eq!(top().await, before);
        until(checked + lease * 8 / 10).await;
        a.post_score(&second, 100 + attempt).await;
        until(checked + lease + Duration::from_millis(50)).await;
        let after = top().await;
        if due.elapsed() < lease {
            assert_eq!(after, before, "past the first lease, B asked Redis again: its due lease was not renewed");
            renewed = true;
            break;
        }
    }
    assert!(renewed, "no try read within the renewed lease");
    for attempt in 0..3 {
        until(Instant::now() + 2 * lease).await;
        let checked = Instant::now();
        let before = top().await;
        until(checked + lease * 3 / 10).await;
        a.post_score(&first, 200 + attempt).await;
        until(checked + lease * 6 / 10).await;
        let due = top().await;
        let in_time = checked.elapsed() < lease;
        until(checked + lease + Duration::from_millis(100)).await;
        let after = top().await;
        if in_time {
            assert_eq!(due, before, "the request that found the lease due was not answered from the copy");
            assert_eq!(
                after["entries"][0]["score"],
                200 + attempt,
                "a renewal that found the board moved renewed the lease"
            );
            return;
        }
    }
    panic!("no try read within the lease");
}

async fn moderation_shows_on_the_other_instance(args: &[&str]) {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let args = [&["--admin-token", crate::helpers::ADMIN][..], args].concat();
    let a = spawn_app_on(&db, &args).await;
    let b = spawn_app_on(&db, &args).await;
    a.create_board(&json!({"id": "arena", "name": "Arena"})).await;
    let cheat = a.register("cheat").await;
    let honest = a.register("honest").await;
    a.post_score(&honest, 50).await;
    let huge = a.post_score(&cheat, 900).await["score"]["id"].as_i64().unwrap();
    a.post_score(&cheat, 40).await;
    a.post_board_score(&cheat, "arena", 900).await;
    a.post_board_score(&honest, "arena", 50).await;
    // B has read (and cached) everything before the moderation.
    for board in ["best", "total", "arena"] {
        assert_eq!(b.ranking(board, "").await["entries"][0]["user"]["id"], cheat.id, "{board}");
    }
    b.get_json(&format!("/api/users/{}", cheat.id)).await;

    let (status, _) = a.admin(reqwest::Method::DELETE, &format!("/api/admin/scores/{huge}"), None).await;
    assert_eq!(status, 204);
    assert_eq!(ranks_and_ids(&b.ranking("best", "").await), [(1, honest.id), (2, cheat.id)]);
    let (_, profile) = b.get_json(&format!("/api/users/{}", cheat.id)).await;
    assert_eq!((profile["best_score"].clone(), profile["play_count"].clone()), (json!(40), json!(1)));

    let ban = json!({"reason": "cheating"});
    let (status, _) = a.admin(reqwest::Method::POST, &format!("/api/admin/users/{}/ban", cheat.id), Some(&ban)).await;
    assert_eq!(status, 200);
    for board in ["best", "total", "arena"] {
        let page = b.ranking(board, "").await;
        assert_eq!((ranks_and_ids(&page), page["total_players"].clone()), (vec![(1, honest.id)], json!(1)), "{board}");
    }
    assert_eq!(b.get_authed("/api/me", &cheat.token).await.0, StatusCode::FORBIDDEN);
    assert_eq!(b.get_json(&format!("/api/users/{}", cheat.id)).await.0, StatusCode::NOT_FOUND);

    let rename = json!({"display_name": "Honest Abe"});
    a.admin(reqwest::Method::PATCH, &format!("/api/admin/users/{}", honest.id), Some(&rename)).await;
    for board in ["best", "arena"] {
        assert_eq!(b.ranking(board, "").await["entries"][0]["user"]["display_name"], "Honest Abe", "{board}");
    }
    a.admin(reqwest::Method::DELETE, &format!("/api/admin/users/{}/ban", cheat.id), None).await;
    assert_eq!(ranks_and_ids(&b.ranking("arena", "").await), [(1, cheat.id), (2, honest.id)]);
}

/// With Redis a page is kept on each instance and served again only while
/// Redis says its board and the names are as they were: a post, a rename
/// or a post to a custom board on another instance shows at the next read.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_kept_page_is_served_only_while_its_board_and_names_hold() {
    kept_pages_follow_the_other_instance(&[]).await;
}

async fn kept_pages_follow_the_other_instance(args: &[&str]) {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let args = [&["--admin-token", crate::helpers::ADMIN][..], args].concat();
    let a = spawn_app_on(&db, &args).await;
    let b = spawn_app_on(&db, &args).await;
    let first = a.register("kept1").await;
    let second = a.register("kept2").await;
    a.post_score(&first, 50).await;
    a.post_score(&second, 40).await;

    let page = b.ranking("best", "limit=10").await;
    let hits = page_cache_hits(&b).await;
    assert_eq!(b.ranking("best", "limit=10").await, page);
    assert_eq!(page_cache_hits(&b).await, hits + 1, "an unchanged board is served from B's copy");

    a.post_score(&second, 60).await;
    assert_eq!(ranks_and_ids(&b.ranking("best", "limit=10").await), [(1, second.id), (2, first.id)]);

    let rename = json!({"display_name": "Renamed Elsewhere"});
    let (status, _) = a.admin(reqwest::Method::PATCH, &format!("/api/admin/users/{}", first.id), Some(&rename)).await;
    assert_eq!(status, 200);
    assert_eq!(b.ranking("best", "limit=10").await["entries"][1]["user"]["display_name"], "Renamed Elsewhere");

    a.create_board(&json!({"id": "kept", "name": "Kept", "order": "asc"})).await;
    a.post_board_score(&first, "kept", 30).await;
    let hits = page_cache_hits(&b).await;
    assert_eq!(ranks_and_ids(&b.ranking("kept", "").await), [(1, first.id)]);
    assert_eq!(ranks_and_ids(&b.ranking("kept", "").await), [(1, first.id)]);
    assert_eq!(page_cache_hits(&b).await, hits + 1);
    a.post_board_score(&second, "kept", 20).await;
    assert_eq!(ranks_and_ids(&b.ranking("kept", "").await), [(1, second.id), (2, first.id)]);
}

async fn page_cache_hits(app: &crate::helpers::TestApp) -> i64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("hiscore_page_cache_total{outcome=\"hit\"} "))
        .map_or(0, |n| n.trim().parse().unwrap())
}
