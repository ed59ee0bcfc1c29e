//! Concurrent posts: aggregates stay exact on every backend.

use futures_util::future::join_all;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{model_seed, spawn_app, Backend};

backend_tests!(
    concurrent_posts_for_one_player_are_exact,
    concurrent_replays_of_one_key_count_once,
    the_player_count_stays_exact_when_many_first_scores_arrive_at_once
);

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

backend_tests!(hundreds_of_concurrent_posts_across_players_with_replays_are_exact);

/// Group commit puts many of these in one transaction, several for the
/// same player, and replays of one key in the same batch as its first use.
async fn hundreds_of_concurrent_posts_across_players_with_replays_are_exact(backend: Backend) {
    use rand::{Rng, SeedableRng};
    let (app, db) = spawn_app(&backend).await;
    let mut players = Vec::new();
    for i in 0..4 {
        players.push(app.register(&format!("burst{i}")).await);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(model_seed(3));
    // (player, score, key): every fourth post has a key used up to three
    // times, with the same score each time, but every 24th with another
    // (the same key for another request: 422 unless it came first).
    let mut posts = Vec::new();
    for i in 0..300 {
        let player = rng.gen_range(0..players.len());
        let key = (i % 4 == 0).then(|| format!("k{}", i / 12));
        let score = match &key {
            Some(_) => (i / 12 % 50) * 100 + i64::from(i % 24 == 0),
            None => rng.gen_range(0..50) * 100,
        };
        posts.push((player, score, key));
    }
    let bodies: Vec<_> = posts.iter().map(|(_, score, _)| json!({"score": score})).collect();
    let requests = posts
        .iter()
        .zip(&bodies)
        .map(|((player, _, key), body)| app.post_score_raw(&players[*player].token, body, key.as_deref()));
    let results = join_all(requests).await;

    // The model: a key counts the first time it is used by that player.
    let mut expected: Vec<(i64, i64, i64)> = vec![(0, 0, 0); players.len()]; // (best, total, plays)
    let mut first_answers = std::collections::HashMap::new();
    let mut created_ids = Vec::new();
    for ((player, _, key), (status, body)) in posts.iter().zip(&results) {
        match status.as_u16() {
            201 => {
                let score = body["score"]["score"].as_i64().unwrap();
                let e = &mut expected[*player];
                e.0 = e.0.max(score);
                e.1 += score;
                e.2 += 1;
                created_ids.push(body["score"]["id"].as_i64().unwrap());
                if let Some(key) = key {
                    assert!(
                        first_answers.insert((*player, key.clone()), body.clone()).is_none(),
                        "{key} created twice"
                    );
                }
            }
            200 | 422 => {}
            other => panic!("unexpected {other}: {body}"),
        }
    }
    // Every replay got exactly the first answer of its (player, key), and
    // every other request with that key was refused.
    for ((player, score, key), (status, body)) in posts.iter().zip(&results) {
        let Some(key) = key else { continue };
        let first = &first_answers[&(*player, key.clone())];
        match status.as_u16() {
            200 => assert_eq!(body, first, "a replay differs"),
            422 => {
                assert_eq!(body["error"]["code"], "idempotency_key_reused");
                assert_ne!(first["score"]["score"], *score, "the same request was refused");
            }
            _ => {}
        }
    }
    for (index, (player, (best, total, plays))) in players.iter().zip(&expected).enumerate() {
        let (_, me) = app.get_authed("/api/me", &player.token).await;
        // best_at: when the first post (lowest id) reaching the best was made.
        let first_best = posts
            .iter()
            .zip(&results)
            .filter(|((p, _, _), (status, body))| {
                *p == index && status.as_u16() == 201 && body["score"]["score"] == *best
            })
            .min_by_key(|(_, (_, body))| body["score"]["id"].as_i64().unwrap())
            .map(|(_, (_, body))| body["score"]["created_at"].clone());
        assert_eq!(Some(me["best_at"].clone()), first_best, "best_at of {}", player.login_name);
        assert_eq!(
            (me["best_score"].as_i64(), me["total_score"].as_i64(), me["play_count"].as_i64()),
            (Some(*best), Some(*total), Some(*plays))
        );
    }
    let pool = db.connect().await;
    let logged: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM scores").fetch_one(&pool).await.unwrap();
    assert_eq!(logged, created_ids.len() as i64, "every 201 is in the log, and nothing else");
}

/// `board_stats` counts players in the transactions that give them their
/// first score: 30 new players posting 3 scores each, all at once, leave it
/// equal to a count over the users, and pages report it.
async fn the_player_count_stays_exact_when_many_first_scores_arrive_at_once(backend: Backend) {
    let (app, db) = spawn_app(&backend).await;
    let mut players = Vec::new();
    for i in 0..30 {
        players.push(app.register(&format!("first{i}")).await);
    }
    let _bystander = app.register("nevers").await; // registered, never posts
    let bodies: Vec<_> = (0..90).map(|i| json!({"score": i % 7})).collect();
    let posts = bodies.iter().enumerate().map(|(i, body)| app.post_score_raw(&players[i % 30].token, body, None));
    for (status, body) in join_all(posts).await {
        assert_eq!(status.as_u16(), 201, "{body}");
    }
    let pool = db.connect().await;
    let counted: i64 =
        sqlx::query_scalar("SELECT players FROM board_stats WHERE id = 1").fetch_one(&pool).await.unwrap();
    let players_by_rows: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE play_count > 0").fetch_one(&pool).await.unwrap();
    assert_eq!((counted, players_by_rows), (30, 30));
    for board in ["best", "total"] {
        assert_eq!(app.ranking(board, "limit=1").await["total_players"], 30);
    }
}
