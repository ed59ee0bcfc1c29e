//! Concurrent posts: aggregates stay exact on every backend.

use futures_util::future::join_all;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{spawn_app, Backend};

backend_tests!(concurrent_posts_for_one_player_are_exact, concurrent_replays_of_one_key_count_once);

async fn concurrent_posts_for_one_player_are_exact(backend: Backend) {
    let (app, db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let scores: Vec<i64> = (0..60).map(|i| (i * 7919) % 1000).collect();

    let bodies: Vec<_> = scores.iter().map(|score| json!({"score": score})).collect();
    let posts = bodies.iter().map(|body| app.post_score_raw(&alice.token, body, None));
    let results = join_all(posts).await;

    let mut ids = Vec::new();
    for (status, body) in &results {
        assert_eq!(status.as_u16(), 201, "{body}");
        ids.push(body["score"]["id"].as_i64().unwrap());
    }
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 60);
    assert_eq!(me["total_score"], scores.iter().sum::<i64>());
    assert_eq!(me["best_score"], *scores.iter().max().unwrap());
    // best_at is the time of the first post that reached the best.
    let best = *scores.iter().max().unwrap();
    let first_best = results
        .iter()
        .filter(|(_, body)| body["score"]["score"] == best)
        .min_by_key(|(_, body)| body["score"]["id"].as_i64().unwrap())
        .unwrap();
    assert_eq!(me["best_at"], first_best.1["score"]["created_at"]);

    // Every acknowledged post is in the log.
    let pool = db.connect().await;
    let logged: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM scores WHERE user_id = ?")
        .bind(alice.id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(logged, 60);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 60, "every post got its own id");
}

async fn concurrent_replays_of_one_key_count_once(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let body = json!({"score": 42});
    let posts = (0..20).map(|_| app.post_score_raw(&alice.token, &body, Some("same-key")));
    let results = join_all(posts).await;

    let created = results.iter().filter(|(status, _)| status.as_u16() == 201).count();
    let replayed = results.iter().filter(|(status, _)| status.as_u16() == 200).count();
    assert_eq!((created, replayed), (1, 19), "{results:?}");
    let first = &results.iter().find(|(s, _)| s.as_u16() == 201).unwrap().1;
    assert!(results.iter().all(|(_, body)| body == first), "every replay is the first response");

    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 1);
    assert_eq!(me["total_score"], 42);
}
