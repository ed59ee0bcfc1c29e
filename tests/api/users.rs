//! Profiles, batched lookups and score history.

use reqwest::Method;
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{assert_error, spawn_admin_app, spawn_app, Backend};

backend_tests!(
    a_profile_is_public_with_ranks,
    a_kept_profile_follows_every_change_at_once,
    batched_lookups_keep_order_and_skip_unknown,
    score_history_pages_newest_first
);

/// A single instance keeps a profile and answers it by its address before
/// the router (`routes::kept_answer`): asked again and again, it still
/// shows at once another player's post that moves its rank, its own post,
/// a rename and a ban, and is counted under its route. (On Redis backends
/// every request is routed; the answers must be the same.)
async fn a_kept_profile_follows_every_change_at_once(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    app.post_score(&alice, 300).await;
    let path = format!("/api/users/{}", alice.id);
    let profile = || async { app.get_json(&path).await };
    let (status, first) = profile().await;
    assert_eq!((status.as_u16(), first["best_rank"].clone()), (200, json!(1)), "{first}");
    for _ in 0..3 {
        let again = app.get(&path).await;
        assert_eq!(again.headers()["content-type"], "application/json");
        assert!(again.headers().contains_key("x-request-id"));
        assert_eq!(again.json::<Value>().await.unwrap(), first);
    }
    let counted = r#"hiscore_http_requests_total{method="GET",route="/api/users/{id}",status="200"}"#;
    assert_eq!(app.metric(counted).await, 4.0);

    app.post_score(&bob, 400).await;
    assert_eq!(profile().await.1["best_rank"], 2, "another player's post moves the rank");
    app.post_score(&alice, 10).await;
    let (_, moved) = profile().await;
    assert_eq!((moved["play_count"].clone(), moved["total_score"].clone()), (json!(2), json!(310)), "{moved}");
    let rename = json!({"display_name": "Alice Renamed"});
    let (status, _) = app.admin(Method::PATCH, &format!("/api/admin/users/{}", alice.id), Some(&rename)).await;
    assert_eq!(status, 200);
    assert_eq!(profile().await.1["display_name"], "Alice Renamed");
    let ban = json!({"reason": "a test"});
    let (status, _) = app.admin(Method::POST, &format!("/api/admin/users/{}/ban", alice.id), Some(&ban)).await;
    assert_eq!(status, 200);
    let (status, body) = profile().await;
    assert_error(status, &body, 404, "user_not_found");
}

async fn a_profile_is_public_with_ranks(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    app.post_score(&alice, 300).await;

    let (status, profile) = app.get_json(&format!("/api/users/{}", alice.id)).await;
    assert_eq!(status, 200);
    assert_eq!(profile["id"], alice.id);
    assert_eq!(profile["best_score"], 300);
    assert_eq!(profile["best_rank"], 1);
    assert!(profile.get("login_name").is_none(), "login names are not public: {profile}");
    assert!(profile.get("password_hash").is_none());

    for path in ["/api/users/999999", "/api/users/abc", "/api/users/0", "/api/users/-1"] {
        let (status, body) = app.get_json(path).await;
        assert_error(status, &body, 404, "user_not_found");
    }
}

async fn batched_lookups_keep_order_and_skip_unknown(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let a = app.register("alpha").await;
    let b = app.register("bravo").await;
    let c = app.register("charlie").await;
    app.post_score(&b, 10).await;

    let (status, body) = app.get_json(&format!("/api/users?ids={},{},999999,{},{}", c.id, a.id, b.id, c.id)).await;
    assert_eq!(status, 200, "{body}");
    let users = body["users"].as_array().unwrap();
    let ids: Vec<i64> = users.iter().map(|u| u["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [c.id, a.id, b.id]);
    assert_eq!(users[2]["best_rank"], 1);
    assert!(users[0]["best_rank"].is_null());
    assert!(users.iter().all(|u| u.get("login_name").is_none()));

    let too_many = (1..=101).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    for query in ["", "?ids=", "?ids=a,b", "?ids=1,,2", &format!("?ids={too_many}")] {
        let (status, body) = app.get_json(&format!("/api/users{query}")).await;
        assert_error(status, &body, 400, "invalid_ids");
    }
}

async fn score_history_pages_newest_first(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    for score in [1, 2, 3, 4, 5] {
        app.post_score(&alice, score).await;
        app.post_score(&bob, 100 + score).await;
    }

    let page = |query: String| {
        let app = &app;
        async move {
            let (status, body) = app.get_json(&format!("/api/users/{}/scores{query}", alice.id)).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let scores_of = |body: &Value| {
        body["scores"].as_array().unwrap().iter().map(|s| s["score"].as_i64().unwrap()).collect::<Vec<_>>()
    };

    let all = page(String::new()).await;
    assert_eq!(scores_of(&all), [5, 4, 3, 2, 1]);
    assert!(all["next_before"].is_null());
    assert!(all["scores"][0]["created_at"].is_string() && all["scores"][0]["id"].is_i64());

    let first = page("?limit=2".to_owned()).await;
    assert_eq!(scores_of(&first), [5, 4]);
    let before = first["next_before"].as_i64().unwrap();
    let second = page(format!("?limit=2&before={before}")).await;
    assert_eq!(scores_of(&second), [3, 2]);
    let before = second["next_before"].as_i64().unwrap();
    let third = page(format!("?limit=2&before={before}")).await;
    assert_eq!(scores_of(&third), [1]);
    assert!(third["next_before"].is_null());

    let (status, body) = app.get_json("/api/users/999999/scores").await;
    assert_error(status, &body, 404, "user_not_found");
    for (query, code) in
        [("?limit=0", "invalid_limit"), ("?limit=101", "invalid_limit"), ("?before=x", "invalid_before")]
    {
        let (status, body) = app.get_json(&format!("/api/users/{}/scores{query}", alice.id)).await;
        assert_error(status, &body, 400, code);
    }
}
