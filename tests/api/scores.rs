//! `POST /api/scores`: results, validation and idempotency.

use reqwest::StatusCode;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, spawn_app, Backend};

backend_tests!(
    a_post_updates_best_total_and_count,
    best_at_moves_only_on_a_strictly_greater_score,
    invalid_scores_are_422_and_change_nothing,
    an_idempotent_replay_returns_the_first_response_and_counts_once,
    idempotency_keys_are_per_player_and_validated,
    posting_needs_a_session,
);

async fn a_post_updates_best_total_and_count(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;

    let first = app.post_score(&alice, 100).await;
    assert_eq!(first["new_best"], true);
    assert_eq!(first["score"]["score"], 100);
    assert!(first["score"]["id"].as_i64().unwrap() > 0);
    assert_eq!(first["user"]["best_score"], 100);
    assert_eq!(first["user"]["total_score"], 100);
    assert_eq!(first["user"]["play_count"], 1);
    assert_eq!(first["user"]["best_rank"], 1);
    assert_eq!(first["user"]["total_rank"], 1);
    assert_eq!(first["user"]["login_name"], "alice");
    assert_eq!(first["user"]["best_at"], first["score"]["created_at"]);

    let second = app.post_score(&alice, 40).await;
    assert_eq!(second["new_best"], false);
    assert_eq!(second["user"]["best_score"], 100);
    assert_eq!(second["user"]["total_score"], 140);
    assert_eq!(second["user"]["play_count"], 2);

    let (status, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["total_score"], 140);

    // The ranks in a result already reflect the post.
    let bob = app.register("bob").await;
    let bobs = app.post_score(&bob, 500).await;
    assert_eq!(bobs["user"]["best_rank"], 1);
    assert_eq!(bobs["user"]["total_rank"], 1);
    let (_, alice_now) = app.get_json(&format!("/api/users/{}", alice.id)).await;
    assert_eq!(alice_now["best_rank"], 2);
}

async fn best_at_moves_only_on_a_strictly_greater_score(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let first = app.post_score(&alice, 0).await;
    assert_eq!(first["new_best"], true, "the first play is a best, even at 0");
    let best_at = first["user"]["best_at"].clone();
    assert!(best_at.is_string());

    let equal = app.post_score(&alice, 0).await;
    assert_eq!(equal["new_best"], false);
    assert_eq!(equal["user"]["best_at"], best_at);

    let higher = app.post_score(&alice, 1).await;
    assert_eq!(higher["new_best"], true);
    assert_eq!(higher["user"]["best_at"], higher["score"]["created_at"]);
}

async fn invalid_scores_are_422_and_change_nothing(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let bad = [
        json!({}),
        json!({"score": null}),
        json!({"score": -1}),
        json!({"score": 1_000_000_001_i64}),
        json!({"score": 1.5}),
        json!({"score": 10.0}),
        json!({"score": "10"}),
        json!({"score": true}),
        json!({"score": [1]}),
        json!({"score": 1e300}),
    ];
    for body in bad {
        let (status, response) = app.post_score_raw(&alice.token, &body, None).await;
        assert_error(status, &response, 422, "invalid_score");
    }
    // The edges are valid.
    app.post_score(&alice, 0).await;
    let max = app.post_score(&alice, 1_000_000_000).await;
    assert_eq!(max["user"]["play_count"], 2, "only the two valid posts counted");
    assert_eq!(max["user"]["total_score"], 1_000_000_000);
}

async fn an_idempotent_replay_returns_the_first_response_and_counts_once(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;

    let (status, first) = app.post_score_raw(&alice.token, &json!({"score": 70}), Some("key-1")).await;
    assert_eq!(status, StatusCode::CREATED);
    app.post_score(&alice, 5).await;
    // The same request again: the first response, unchanged.
    let (status, replay) = app.post_score_raw(&alice.token, &json!({"score": 70}), Some("key-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(replay, first);
    // The same key for another request (another score) is refused, not replayed.
    let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 999}), Some("key-1")).await;
    assert_error(status, &body, 422, "idempotency_key_reused");

    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 2);
    assert_eq!(me["total_score"], 75);
    assert_eq!(me["best_score"], 70);
}

async fn idempotency_keys_are_per_player_and_validated(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;

    let (status, _) = app.post_score_raw(&alice.token, &json!({"score": 1}), Some("shared")).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, bobs) = app.post_score_raw(&bob.token, &json!({"score": 2}), Some("shared")).await;
    assert_eq!(status, StatusCode::CREATED, "another player's key is not a replay");
    assert_eq!(bobs["user"]["id"], bob.id);

    for bad in ["has space", &"k".repeat(65)] {
        let (status, body) = app.post_score_raw(&alice.token, &json!({"score": 1}), Some(bad)).await;
        assert_error(status, &body, 400, "invalid_idempotency_key");
    }
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 1);
}

async fn posting_needs_a_session(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let (status, body) = crate::helpers::json_of(app.post_json("/api/scores", &json!({"score": 1})).await).await;
    assert_error(status, &body, 401, "session_required");
}
