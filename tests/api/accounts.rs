//! Registration, login, logout, sessions and `/api/me`.

use reqwest::StatusCode;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app, Backend, PASSWORD};

backend_tests!(
    register_returns_me_token_and_cookie,
    login_names_are_unique_case_insensitively,
    registration_validates_every_field,
    login_and_wrong_credentials,
    logout_kills_the_token_at_once,
    the_session_cookie_works_like_the_bearer_token,
    me_requires_a_live_session,
    tokens_are_stored_hashed,
);

async fn register_returns_me_token_and_cookie(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;

    let response =
        app.register_raw(&json!({"login_name": "Alice", "password": PASSWORD, "display_name": "Zoë 🎮"})).await;
    let cookie =
        response.headers().get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_owned).expect("set-cookie");
    let (status, body) = json_of(response).await;

    assert_eq!(status, StatusCode::CREATED, "{body}");
    let user = &body["user"];
    assert_eq!(user["login_name"], "Alice");
    assert_eq!(user["display_name"], "Zoë 🎮");
    let id = user["id"].as_i64().unwrap();
    assert_eq!(user["image"], id % 10 + 1);
    assert_eq!(user["best_score"], 0);
    assert_eq!(user["total_score"], 0);
    assert_eq!(user["play_count"], 0);
    assert!(user["best_at"].is_null() && user["best_rank"].is_null() && user["total_rank"].is_null());
    assert!(user["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(user.get("password").is_none() && user.get("password_hash").is_none());
    let token = body["token"].as_str().unwrap();
    assert!(token.len() >= 22, "at least 128 bits");
    assert!(cookie.starts_with(&format!("session={token}")), "{cookie}");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(flag), "{cookie} lacks {flag}");
    }

    // The default display name is the login name.
    let (_, body) = json_of(app.register_raw(&json!({"login_name": "bob_1", "password": PASSWORD})).await).await;
    assert_eq!(body["user"]["display_name"], "bob_1");
}

async fn login_names_are_unique_case_insensitively(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    app.register("Alice").await;

    for taken in ["Alice", "alice", "ALICE"] {
        let (status, body) = json_of(app.register_raw(&json!({"login_name": taken, "password": PASSWORD})).await).await;
        assert_error(status, &body, 409, "login_name_taken");
    }
    // Logging in works with any case.
    let (status, body) = app.login("aLiCe", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["login_name"], "Alice");
}

async fn registration_validates_every_field(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let cases = [
        (json!({"password": PASSWORD}), "invalid_login_name"),
        (json!({"login_name": "ab", "password": PASSWORD}), "invalid_login_name"),
        (json!({"login_name": "has space", "password": PASSWORD}), "invalid_login_name"),
        (json!({"login_name": "x".repeat(33), "password": PASSWORD}), "invalid_login_name"),
        (json!({"login_name": 12345, "password": PASSWORD}), "invalid_login_name"),
        (json!({"login_name": "carol"}), "invalid_password"),
        (json!({"login_name": "carol", "password": "short"}), "invalid_password"),
        (json!({"login_name": "carol", "password": "x".repeat(73)}), "invalid_password"),
        (json!({"login_name": "carol", "password": PASSWORD, "display_name": ""}), "invalid_display_name"),
        (json!({"login_name": "carol", "password": PASSWORD, "display_name": "x".repeat(33)}), "invalid_display_name"),
        (json!({"login_name": "carol", "password": PASSWORD, "display_name": "tab\there"}), "invalid_display_name"),
        (json!({"login_name": "carol", "password": PASSWORD, "display_name": 7}), "invalid_display_name"),
    ];
    for (body, code) in cases {
        let (status, response) = json_of(app.register_raw(&body).await).await;
        assert_error(status, &response, 422, code);
    }
    // Nothing was created by the rejected requests.
    let (status, _) = app.login("carol", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn login_and_wrong_credentials(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;

    let (status, body) = app.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], alice.id);
    let new_token = body["token"].as_str().unwrap();
    assert_ne!(new_token, alice.token);
    let (status, me) = app.get_authed("/api/me", new_token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["login_name"], "alice");

    let (status, wrong_password) = app.login("alice", "not the password").await;
    assert_error(status, &wrong_password, 401, "invalid_credentials");
    let (status, unknown_user) = app.login("nobody", "not the password").await;
    assert_error(status, &unknown_user, 401, "invalid_credentials");
    assert_eq!(wrong_password, unknown_user, "the two failures must be indistinguishable");

    let (status, body) = json_of(app.post_json("/api/sessions", &json!({"login_name": "alice"})).await).await;
    assert_error(status, &body, 422, "invalid_password");
}

async fn logout_kills_the_token_at_once(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let (_, second) = app.login("alice", PASSWORD).await;
    let second = second["token"].as_str().unwrap().to_owned();

    assert_eq!(app.logout(&alice.token).await, StatusCode::NO_CONTENT);

    let (status, body) = app.get_authed("/api/me", &alice.token).await;
    assert_error(status, &body, 401, "invalid_session");
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 1}), None).await;
    assert_error(status, &body, 401, "invalid_session");
    // Other sessions of the same player live on.
    let (status, _) = app.get_authed("/api/me", &second).await;
    assert_eq!(status, StatusCode::OK);
    // Logging out without a session is a 401.
    let (status, body) = json_of(app.client.delete(app.url("/api/sessions")).send().await.unwrap()).await;
    assert_error(status, &body, 401, "session_required");
}

async fn the_session_cookie_works_like_the_bearer_token(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;

    let me = |cookie: String| app.client.get(app.url("/api/me")).header("cookie", cookie).send();
    let (status, body) = json_of(me(format!("session={}", alice.token)).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], alice.id);

    let (status, body) = json_of(me("session=forged".to_owned()).await.unwrap()).await;
    assert_error(status, &body, 401, "invalid_session");
}

async fn me_requires_a_live_session(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let (status, body) = app.get_json("/api/me").await;
    assert_error(status, &body, 401, "session_required");
    let (status, body) = app.get_authed("/api/me", "made-up-token").await;
    assert_error(status, &body, 401, "invalid_session");
}

async fn tokens_are_stored_hashed(backend: Backend) {
    let (app, db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let pool = db.connect().await;
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM sessions").fetch_all(&pool).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0], alice.token);
    assert!(!stored[0].contains(&alice.token));
    assert_eq!(stored[0].len(), 64, "hex SHA-256");
}

backend_tests!(a_player_keeps_at_most_twenty_live_sessions);

/// A new login beyond 20 live sessions ends the oldest (in Redis too).
async fn a_player_keeps_at_most_twenty_live_sessions(backend: Backend) {
    let db = crate::helpers::TestDatabase::new(&backend).await;
    let app = crate::helpers::spawn_app_on(&db, &["--rate-login-per-account", "0"]).await;
    let first = app.register("sessions").await.token;
    assert_eq!(app.get_authed("/api/me", &first).await.0, StatusCode::OK); // cached, with Redis
    let mut tokens = vec![first];
    for _ in 0..21 {
        let (status, body) = app.login("sessions", PASSWORD).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        tokens.push(body["token"].as_str().unwrap().to_owned());
        actix_web::rt::time::sleep(std::time::Duration::from_millis(2)).await; // distinct creation times
    }
    let mut alive = Vec::new();
    for token in &tokens {
        alive.push(app.get_authed("/api/me", token).await.0 == StatusCode::OK);
    }
    assert_eq!(alive.iter().filter(|a| **a).count(), 20, "{alive:?}");
    assert_eq!(&alive[..2], [false, false], "the two oldest ended: {alive:?}");
}
