//! What must survive a restart: sessions, and password hashes that follow
//! the configured algorithm and cost at the next login.

use reqwest::StatusCode;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase, PASSWORD};

backend_tests!(
    sessions_survive_a_restart,
    a_login_rehashes_after_a_cost_change,
    bcrypt_and_argon2_hashes_live_side_by_side
);

/// Cheap argon2id parameters so the tests stay fast.
const ARGON2: [&str; 8] = [
    "--password-hash",
    "argon2id",
    "--argon2-memory-kib",
    "256",
    "--argon2-iterations",
    "1",
    "--argon2-parallelism",
    "1",
];

async fn stored_hash(db: &TestDatabase, user_id: i64) -> String {
    let pool = db.connect().await;
    sqlx::query_scalar("SELECT password_hash FROM users WHERE id = ?").bind(user_id).fetch_one(&pool).await.unwrap()
}

async fn sessions_survive_a_restart(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &[]).await;
    let alice = app.register("alice").await;
    let (status, first) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("before-restart")).await;
    assert_eq!(status, StatusCode::CREATED);
    app.stop().await;

    let app = spawn_app_on(&db, &[]).await;
    let (status, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["best_score"], 10);
    // Idempotency keys are in the database too: the replay still counts once.
    let (status, replay) = app.post_score_raw(&alice.token, &json!({"score": 10}), Some("before-restart")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(replay, first);
    let after = app.post_score(&alice, 20).await;
    assert_eq!(after["user"]["play_count"], 2);
}

async fn a_login_rehashes_after_a_cost_change(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--bcrypt-cost", "4"]).await;
    let alice = app.register("alice").await;
    app.stop().await;
    assert!(stored_hash(&db, alice.id).await.starts_with("$2b$04$"));

    let app = spawn_app_on(&db, &["--bcrypt-cost", "5"]).await;
    let (status, _) = app.login("alice", "wrong password!").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(stored_hash(&db, alice.id).await.starts_with("$2b$04$"), "a failed login changes nothing");

    let (status, _) = app.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    assert!(stored_hash(&db, alice.id).await.starts_with("$2b$05$"));
    let (status, _) = app.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "the new hash verifies");
}

async fn bcrypt_and_argon2_hashes_live_side_by_side(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &[]).await;
    let old = app.register("bcrypt_user").await;
    app.stop().await;

    let app = spawn_app_on(&db, &ARGON2).await;
    let new = app.register("argon_user").await;
    assert!(stored_hash(&db, new.id).await.starts_with("$argon2id$"));
    assert!(stored_hash(&db, old.id).await.starts_with("$2b$"));

    for name in ["bcrypt_user", "argon_user"] {
        let (status, body) = app.login(name, PASSWORD).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
    }
    assert!(stored_hash(&db, old.id).await.starts_with("$argon2id$"), "upgraded at login");

    // And back to bcrypt: argon2 hashes still verify.
    app.stop().await;
    let app = spawn_app_on(&db, &[]).await;
    let (status, _) = app.login("argon_user", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    assert!(stored_hash(&db, new.id).await.starts_with("$2b$04$"));
}
