//! `POST /api/admin/initialize`: guarded, wipes, loads deterministically.

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app, spawn_app_on, Backend, TestApp, TestDatabase};

backend_tests!(
    initialize_is_404_without_an_admin_token,
    initialize_checks_the_token,
    initialize_wipes_and_loads_deterministically
);

const ADMIN: [&str; 2] = ["--admin-token", "let-me-in-with-a-token-of-32-characters"];

async fn initialize_is_404_without_an_admin_token(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let (status, body) = app.initialize("anything", &json!({})).await;
    assert_error(status, &body, 404, "not_found");
}

async fn initialize_checks_the_token(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &ADMIN).await;
    let (status, body) = app.initialize("wrong", &json!({})).await;
    assert_error(status, &body, 401, "invalid_admin_token");
    let (status, body) = json_of(app.post_json("/api/admin/initialize", &json!({})).await).await;
    assert_error(status, &body, 401, "admin_token_required");
    let (status, body) = app.initialize("let-me-in-with-a-token-of-32-characters", &json!({"users": -5})).await;
    assert_error(status, &body, 422, "invalid_users");
    // Found by the fuzz test: an oversized body was a plain-text 413.
    let (status, body) = app
        .initialize("let-me-in-with-a-token-of-32-characters", &json!({"users": 1, "padding": "x".repeat(20_000)}))
        .await;
    assert_error(status, &body, 413, "payload_too_large");
}

async fn initialize_wipes_and_loads_deterministically(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &ADMIN).await;
    let alice = app.register("alice").await;

    let spec = json!({"users": 200, "scores": 2000, "seed": 42});
    let (status, body) = app.initialize("let-me-in-with-a-token-of-32-characters", &spec).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["users"], 200);
    assert_eq!(body["scores"], 2000);

    // Everything before is gone, sessions included.
    let (status, _) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(status, 401);
    let page = app.ranking("best", "limit=100").await;
    assert!(page["total_players"].as_i64().unwrap() > 100);
    let total_plays: i64 = {
        let (_, users) = app
            .get_json(&format!("/api/users?ids={}", (1..=100).map(|i| i.to_string()).collect::<Vec<_>>().join(",")))
            .await;
        users["users"].as_array().unwrap().iter().map(|u| u["play_count"].as_i64().unwrap()).sum()
    };
    assert!(total_plays > 0);

    let first = pages(&app).await;
    app.initialize("let-me-in-with-a-token-of-32-characters", &json!({"users": 10, "scores": 10, "seed": 1})).await;
    let (status, _) = app.initialize("let-me-in-with-a-token-of-32-characters", &spec).await;
    assert_eq!(status, 200);
    assert_eq!(pages(&app).await, first, "same seed, byte-identical pages");

    // A new post after initialize lands after the generated ids.
    let bob = app.register("bob").await;
    assert!(bob.id > 200);
    let result = app.post_score(&bob, 5).await;
    assert!(result["score"]["id"].as_i64().unwrap() > 2000);
}

/// The bytes of a few pages whose content depends only on the dataset.
async fn pages(app: &TestApp) -> Vec<String> {
    let mut bytes = Vec::new();
    for path in [
        "/api/rankings/best?limit=100",
        "/api/rankings/total?limit=100&offset=50",
        "/api/users/7/scores?limit=100",
        "/api/users?ids=9,3,7",
    ] {
        bytes.push(app.get(path).await.text().await.unwrap());
    }
    bytes
}

backend_tests!(initialize_ends_every_session_even_cached_ones);

async fn initialize_ends_every_session_even_cached_ones(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &ADMIN).await;
    let alice = app.register("alice").await;
    // Used once, so that a cache (Redis) holds the session too.
    assert_eq!(app.get_authed("/api/me", &alice.token).await.0, 200);
    let (status, _) =
        app.initialize("let-me-in-with-a-token-of-32-characters", &json!({"users": 5, "scores": 5})).await;
    assert_eq!(status, 200);
    let (status, body) = app.get_authed("/api/me", &alice.token).await;
    assert_error(status, &body, 401, "invalid_session");
}

/// Found by reading the code: a request that read a session from the
/// database just before an initialize could cache it in Redis just after
/// the initialize cleared the cached sessions, and the old token then
/// named the generated player with the same id for ten minutes. A cached
/// session now names its data generation, and counts only in it.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_session_cached_across_an_initialize_names_nobody() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &ADMIN).await;
    let alice = app.register("alice").await;
    app.post_score(&alice, 10).await;
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    let redis = db.redis.as_ref().unwrap();
    let key = format!("{}:session:{}", redis.prefix, hiscore::auth::SessionToken::from_client(&alice.token).hash());
    let client = deadpool_redis::redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let cached: String = deadpool_redis::redis::cmd("GET").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(cached.starts_with(&format!("{} ", me["id"])), "the cached session names its generation: {cached}");

    let (status, _) =
        app.initialize("let-me-in-with-a-token-of-32-characters", &json!({"users": 5, "scores": 5})).await;
    assert_eq!(status, 200);
    // The racing request's late write of the old session, after the clearing.
    let _: () = deadpool_redis::redis::cmd("SET").arg(&key).arg(&cached).query_async(&mut conn).await.unwrap();
    let (status, body) = app.get_authed("/api/me", &alice.token).await;
    assert_error(status, &body, 401, "invalid_session");
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 5}), None).await;
    assert_error(status, &body, 401, "invalid_session");
}

/// An empty token (docker-compose's value for an unset variable) leaves the
/// admin routes off; a short one stops the start with a clear message.
#[actix_web::test]
async fn empty_admin_tokens_are_off_and_short_ones_refused() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--admin-token", ""]).await;
    let (status, body) = app.initialize("", &json!({})).await;
    assert_error(status, &body, 404, "not_found");
    let args = ["hiscore", "--database-url", &db.url, "--bind", "127.0.0.1:0", "--admin-token", "short-token"];
    let settings = hiscore::config::Settings::try_parse_from(args).unwrap();
    let refused = hiscore::startup::Application::build(settings).await.err().expect("a short token is refused");
    assert!(refused.to_string().contains("at least 32 characters"), "{refused}");
}
