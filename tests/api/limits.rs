//! Rate limits and plausibility bounds: the (N+1)th attempt in the window
//! gets 429 with Retry-After, and the window reopens.

use std::time::Duration;

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app_on, Backend, TestDatabase, PASSWORD};

backend_tests!(
    logins_are_limited_per_account,
    strangers_cannot_lock_the_owner_out_nor_get_more_guesses,
    score_posts_are_limited_per_player_and_the_window_reopens,
    registrations_are_limited_per_address,
    scores_above_the_configured_maximum_are_rejected,
);

fn retry_after(response: &reqwest::Response) -> u64 {
    response.headers()["retry-after"].to_str().unwrap().parse().unwrap()
}

async fn logins_are_limited_per_account(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--rate-login-per-account", "3"]).await;
    app.register("alice").await;
    app.register("bob").await;
    for _ in 0..3 {
        assert_eq!(app.login("alice", "wrong password").await.0, 401);
    }
    let response = app.post_json("/api/sessions", &json!({"login_name": "alice", "password": PASSWORD})).await;
    assert!(retry_after(&response) >= 1);
    let (status, body) = json_of(response).await;
    assert_error(status, &body, 429, "too_many_requests");
    // Other accounts are not affected.
    assert_eq!(app.login("bob", PASSWORD).await.0, 200);
}

/// Found by reading the code: 21 wrong passwords a minute from anyone
/// locked a player out of logging in. Now the failures of strangers hold
/// only strangers back: the owner logs in from an address they used before.
async fn strangers_cannot_lock_the_owner_out_nor_get_more_guesses(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let args = ["--trust-forwarded-for", "--rate-login-per-account", "4", "--rate-login-per-account-address", "3"];
    let app = spawn_app_on(&db, &args).await;
    app.register("victim").await;
    let login_from = |address: &'static str, password: &'static str| {
        let request = reqwest::Client::new()
            .post(app.url("/api/sessions"))
            .header("X-Forwarded-For", address)
            .json(&json!({"login_name": "victim", "password": password}));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    // The owner's usual address, known from an earlier login.
    assert_eq!(login_from("198.51.100.7", PASSWORD).await, 200);

    // One stranger: three guesses from one address, then that address is done.
    let guesses: Vec<u16> =
        futures_util::future::join_all((0..5).map(|_| login_from("203.0.113.1", "wrong guess"))).await;
    assert_eq!(guesses.iter().filter(|status| **status == 401).count(), 3, "concurrent guesses: {guesses:?}");
    assert_eq!(login_from("203.0.113.1", PASSWORD).await, 429, "no fourth guess from the same address");
    // A second address gets one more before the account's allowance (4) is
    // used up; a third gets none, not even with the right password.
    assert_eq!(login_from("203.0.113.2", "wrong guess").await, 401);
    assert_eq!(login_from("203.0.113.3", "wrong guess").await, 429);
    assert_eq!(login_from("203.0.113.3", PASSWORD).await, 429);

    // The owner is not locked out, and their right logins cost nothing.
    for _ in 0..5 {
        assert_eq!(login_from("198.51.100.7", PASSWORD).await, 200);
    }
    // Their own typos count against their address like anyone's.
    for _ in 0..3 {
        assert_eq!(login_from("198.51.100.7", "a typo here").await, 401);
    }
    assert_eq!(login_from("198.51.100.7", PASSWORD).await, 429);
}

async fn score_posts_are_limited_per_player_and_the_window_reopens(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--rate-posts-per-player", "2"]).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    app.post_score(&alice, 1).await;
    app.post_score(&alice, 2).await;
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 3}), None).await;
    assert_error(status, &body, 429, "too_many_requests");
    app.post_score(&bob, 1).await;
    // Nothing of the refused post was applied.
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 2);

    actix_web::rt::time::sleep(Duration::from_millis(1_100)).await;
    let result = app.post_score(&alice, 3).await;
    assert_eq!(result["user"]["play_count"], 3);
}

async fn registrations_are_limited_per_address(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--rate-register-per-address", "2"]).await;
    app.register("first").await;
    app.register("second").await;
    let response = app.register_raw(&json!({"login_name": "third", "password": PASSWORD})).await;
    assert!(retry_after(&response) >= 1);
    let (status, body) = json_of(response).await;
    assert_error(status, &body, 429, "too_many_requests");
    // Operators see which limit turned it away.
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"hiscore_rejections_total{reason="register-address"} 1"#), "{metrics}");
}

async fn scores_above_the_configured_maximum_are_rejected(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--max-score", "1000"]).await;
    let alice = app.register("alice").await;
    app.post_score(&alice, 1000).await;
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 1001}), None).await;
    assert_error(status, &body, 422, "invalid_score");
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 1);
}

backend_tests!(posts_closer_than_the_minimum_interval_are_refused);

async fn posts_closer_than_the_minimum_interval_are_refused(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--min-post-interval-ms", "500"]).await;
    let alice = app.register("alice").await;
    let (status, first) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("game-1")).await;
    assert_eq!(status, 201);
    // A retry of the accepted post gets its answer, whatever the interval says now.
    let (status, replay) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("game-1")).await;
    assert_eq!((status.as_u16(), &replay), (200, &first));
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 20}), None).await;
    assert_error(status, &body, 429, "too_many_requests");
    actix_web::rt::time::sleep(Duration::from_millis(600)).await;
    let result = app.post_score(&alice, 30).await;
    assert_eq!((result["user"]["play_count"].clone(), result["user"]["total_score"].clone()), (json!(2), json!(40)));
}

/// Found by probing: behind nginx, eight registrations with eight made-up
/// `X-Forwarded-For` values all got 201 with a per-address limit of 5 (nginx
/// appended the real address, the app took the client's first entry).
#[actix_web::test]
async fn a_forged_forwarded_for_does_not_escape_the_address_limit_behind_nginx() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let args = ["--trust-forwarded-for", "--rate-register-per-address", "5"];
    let app = spawn_app_on(&db, &args).await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let Some(front) = crate::external::nginx_in_front_of(&upstream).await else { return };
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for i in 0..8 {
        let response = client
            .post(format!("{}/api/users", front.site))
            .header("X-Forwarded-For", format!("203.0.113.{i}"))
            .json(&json!({"login_name": format!("forger{i}"), "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [201, 201, 201, 201, 201, 429, 429, 429]);
    // Straight to the app: only a well-formed address counts, and the last
    // hop (the proxy's), never a client's first entry.
    for forged in ["not-an-address", "203.0.113.9, 127.0.0.1"] {
        let response = client
            .post(app.url("/api/users"))
            .header("X-Forwarded-For", forged)
            .json(&json!({"login_name": "forger9", "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 429, "{forged} escaped the limit");
    }
}

/// Behind a trusted proxy (a TLS terminator, a load balancer) every client
/// arrives from its address: with `TRUSTED_PROXIES` naming it, nginx takes
/// the client's from the proxy's `X-Forwarded-For`, so the per-address
/// limits stay per client (here the test itself is the trusted proxy).
#[actix_web::test]
async fn behind_a_trusted_proxy_the_address_limits_stay_per_client() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let args = ["--trust-forwarded-for", "--rate-register-per-address", "2"];
    let app = spawn_app_on(&db, &args).await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let settings = [("TRUSTED_PROXIES", "127.0.0.1")];
    let Some(front) = crate::external::nginx_with(&upstream, &settings).await else { return };
    let client = reqwest::Client::new();
    let register = |n: usize, address: &str| {
        client
            .post(format!("{}/api/users", front.site))
            .header("X-Forwarded-For", address.to_owned())
            .json(&json!({"login_name": format!("client{n}"), "password": PASSWORD}))
            .send()
    };
    let mut statuses = Vec::new();
    for n in 0..6 {
        statuses.push(register(n, &format!("203.0.113.{n}")).await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [201; 6], "six clients, each under its own limit");
    let mut same = Vec::new();
    for n in 10..13 {
        same.push(register(n, "198.51.100.7").await.unwrap().status().as_u16());
    }
    assert_eq!(same, [201, 201, 429], "one client keeps its own limit");
}

backend_tests!(replays_count_against_the_post_limit_and_never_reach_the_writer);

/// Found by probing: one account replaying one `Idempotency-Key` ran 9,300
/// posts a second with no 429, each through the writer. A replay is now
/// answered from what was stored, without the writer, and counts against
/// the posts-per-player limit like any post.
async fn replays_count_against_the_post_limit_and_never_reach_the_writer(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--rate-posts-per-player", "3"]).await;
    let alice = app.register("alice").await;
    let (status, first) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("game-1")).await;
    assert_eq!(status, 201);
    let batches = |text: String| {
        text.lines()
            .find_map(|line| line.strip_prefix("hiscore_write_batch_size_count "))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .expect("hiscore_write_batch_size_count in /metrics")
    };
    let before = batches(app.get("/metrics").await.text().await.unwrap());
    actix_web::rt::time::sleep(Duration::from_millis(1_100)).await;
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("game-1")).await;
        match status.as_u16() {
            200 => assert_eq!(body, first, "a replay answers the first response"),
            429 => assert_error(status, &body, 429, "too_many_requests"),
            other => panic!("a replay got {other}: {body}"),
        }
        statuses.push(status.as_u16());
    }
    assert!(statuses.contains(&429), "12 replays at once under a limit of 3 a second: {statuses:?}");
    assert_eq!(batches(app.get("/metrics").await.text().await.unwrap()), before, "no replay went through the writer");
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 1);
}

/// A rename refreshes every board's names on every instance: a player's
/// own renames are limited per hour (admins' are not).
#[actix_web::test]
async fn a_players_own_renames_are_limited_per_hour() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--rate-renames-per-player", "2", "--admin-token", crate::helpers::ADMIN]).await;
    let alice = app.register("alice").await;
    let rename = |name: &str| {
        app.client.patch(app.url("/api/me")).bearer_auth(&alice.token).json(&json!({"display_name": name})).send()
    };
    for name in ["Alice 1", "Alice 2"] {
        assert_eq!(rename(name).await.unwrap().status(), 200);
    }
    let (status, body) = json_of(rename("Alice 3").await.unwrap()).await;
    assert_error(status, &body, 429, "too_many_requests");
    assert!(body["error"]["message"].as_str().unwrap().contains("renames"), "{body}");
    // A password change alone is not a rename.
    let change = json!({"password": "a new password 123", "current_password": PASSWORD});
    let response = app.client.patch(app.url("/api/me")).bearer_auth(&alice.token).json(&change).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // The operator's renames are not limited.
    let path = format!("/api/admin/users/{}", alice.id);
    let (status, user) = app.admin(reqwest::Method::PATCH, &path, Some(&json!({"display_name": "Renamed"}))).await;
    assert_eq!((status.as_u16(), user["display_name"].clone()), (200, json!("Renamed")));
}

/// Issue 39: nginx let every private address reach /api/admin/; behind a
/// load balancer in a private subnet every client has one (the balancer's,
/// or, with `TRUSTED_PROXIES`, the clients' own inside the network). Now
/// only this host and the networks `ADMIN_FROM` names do; the others get
/// the app's "no such route", the admin token notwithstanding.
#[actix_web::test]
async fn behind_a_load_balancer_only_named_networks_reach_the_admin_routes() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--trust-forwarded-for", "--admin-token", crate::helpers::ADMIN]).await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let settings = [("TRUSTED_PROXIES", "127.0.0.1"), ("ADMIN_FROM", "10.1.2.0/24")];
    let Some(front) = crate::external::nginx_with(&upstream, &settings).await else { return };
    let client = reqwest::Client::new();
    let audit = |from: Option<&str>| {
        let mut request = client.get(format!("{}/api/admin/audit", front.site)).bearer_auth(crate::helpers::ADMIN);
        if let Some(address) = from {
            request = request.header("X-Forwarded-For", address.to_owned());
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(audit(None).await, 200, "this host");
    assert_eq!(audit(Some("10.1.2.3")).await, 200, "the operators' network");
    for elsewhere in ["10.9.9.9", "192.168.1.20", "172.20.0.5", "203.0.113.7"] {
        assert_eq!(audit(Some(elsewhere)).await, 404, "{elsewhere} reached the admin routes");
    }
}
