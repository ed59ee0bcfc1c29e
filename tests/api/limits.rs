//! Rate limits and plausibility bounds: the (N+1)th attempt in the window
//! gets 429 with Retry-After, and the window reopens.

use std::time::Duration;

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app_on, Backend, TestDatabase, PASSWORD};

backend_tests!(
    logins_are_limited_per_account,
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
    app.post_score(&alice, 10).await;
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
