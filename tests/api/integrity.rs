//! Score integrity (v3): a board's minimum interval between a player's
//! posts, server-only boards, and the server keys that post for players.

use std::time::Duration;

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

backend_tests!(
    a_minimum_interval_admits_one_of_many_concurrent_posts,
    server_keys_post_for_players_and_die_on_every_instance_at_once,
);

/// Instances on one database: two where they share Redis (a change
/// reaches the other within a second), else one.
async fn instances(backend: &Backend, db: &TestDatabase) -> (TestApp, Option<TestApp>) {
    let first = spawn_app_on(db, &["--admin-token", ADMIN]).await;
    let second = match backend {
        Backend::MariaDbRedis { .. } => Some(spawn_app_on(db, &["--admin-token", ADMIN]).await),
        _ => None,
    };
    (first, second)
}

/// Waits until `app` shows the board with `field` = `value` (another
/// instance reloads the catalog within a second of a change).
async fn await_rule(app: &TestApp, board: &str, field: &str, value: &Value) {
    for _ in 0..50 {
        let (_, shown) = app.get_json(&format!("/api/boards/{board}")).await;
        if &shown[field] == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{board}.{field} never became {value} on {}", app.address);
}

fn retry_after(response: &reqwest::Response) -> u64 {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After")
}

async fn a_minimum_interval_admits_one_of_many_concurrent_posts(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let (first, second) = instances(&backend, &db).await;
    let apps: Vec<&TestApp> = std::iter::once(&first).chain(second.as_ref()).collect();
    let board = first.create_board(&json!({"id": "paced", "name": "Paced", "min_interval_ms": 60_000})).await;
    assert_eq!(board["min_interval_ms"], 60_000);
    assert_eq!(board["writers"], "players");
    let ann = first.register("ann").await;

    // Twenty posts at once, spread over the instances: one lands.
    let posts = (0..20).map(|i| {
        let app = apps[i % apps.len()];
        let request = app.client.post(app.url("/api/boards/paced/scores")).bearer_auth(&ann.token);
        async move { request.json(&json!({"score": i})).send().await.expect("post") }
    });
    let answers = join_all(posts).await;
    let created = answers.iter().filter(|r| r.status() == StatusCode::CREATED).count();
    assert_eq!(created, 1, "{:?}", answers.iter().map(|r| r.status()).collect::<Vec<_>>());
    for refused in answers.into_iter().filter(|r| r.status() != StatusCode::CREATED) {
        // Counted from when the writer took the batch: a moment over 60 s.
        let wait = retry_after(&refused);
        assert!((1..=61).contains(&wait), "Retry-After {wait}");
        let (status, body) = json_of(refused).await;
        assert_error(status, &body, 429, "too_many_requests");
    }
    let (_, history) = first.get_json(&format!("/api/users/{}/scores?board=paced", ann.id)).await;
    assert_eq!(history["scores"].as_array().map(Vec::len), Some(1), "a refused post is not recorded: {history}");

    // A replay of the accepted post is its answer again, not a refusal.
    let key = Some("run-1");
    let bob = first.register("bob").await;
    let (status, body) = first.post_board_score_raw(&bob.token, "paced", &json!({"score": 5}), key).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, replay) = first.post_board_score_raw(&bob.token, "paced", &json!({"score": 5}), key).await;
    assert_eq!((status, &replay), (StatusCode::OK, &body));
    // A refused post gives its key back: the same key posts once the wait is over.
    let (status, _) = first.post_board_score_raw(&bob.token, "paced", &json!({"score": 6}), Some("run-2")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);

    // A short interval: too soon, then in time.
    let (status, _) =
        first.admin(Method::PATCH, "/api/admin/boards/paced", Some(&json!({"min_interval_ms": 400}))).await;
    assert_eq!(status, StatusCode::OK);
    for app in &apps {
        await_rule(app, "paced", "min_interval_ms", &json!(400)).await;
    }
    let cee = first.register("cee").await;
    first.post_board_score(&cee, "paced", 1).await;
    let (status, _) = first.post_board_score_raw(&cee.token, "paced", &json!({"score": 2}), None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    tokio::time::sleep(Duration::from_millis(450)).await;
    apps[apps.len() - 1].post_board_score(&cee, "paced", 3).await;
    let (status, _) = first.post_board_score_raw(&bob.token, "paced", &json!({"score": 6}), Some("run-2")).await;
    assert_eq!(status, StatusCode::CREATED, "the key refused before is free");

    // The built-in boards take the rule by PATCH; `/api/scores` obeys it.
    let (status, best) =
        first.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"min_interval_ms": 60_000}))).await;
    assert_eq!((status, &best["min_interval_ms"]), (StatusCode::OK, &json!(60_000)), "{best}");
    for app in &apps {
        await_rule(app, "best", "min_interval_ms", &json!(60_000)).await;
    }
    let posts = (0..10).map(|i| {
        let app = apps[i % apps.len()];
        let request = app.client.post(app.url("/api/scores")).bearer_auth(&ann.token);
        async move { request.json(&json!({"score": i})).send().await.expect("post").status() }
    });
    let statuses = join_all(posts).await;
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CREATED).count(), 1, "{statuses:?}");
    let (status, total) = first.admin(Method::GET, "/api/boards/total", None).await;
    assert_eq!((status, &total["min_interval_ms"]), (StatusCode::OK, &Value::Null), "each board has its own rules");

    // Bad rules are refused; a built-in board takes nothing else.
    for (body, code) in [
        (json!({"min_interval_ms": 0}), "invalid_min_interval_ms"),
        (json!({"min_interval_ms": 86_400_001}), "invalid_min_interval_ms"),
        (json!({"min_interval_ms": "1000"}), "invalid_min_interval_ms"),
        (json!({"writers": "nobody"}), "invalid_writers"),
    ] {
        let (status, answer) = first.admin(Method::PATCH, "/api/admin/boards/paced", Some(&body)).await;
        assert_error(status, &answer, 422, code);
    }
    let (status, answer) = first.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"name": "Mine"}))).await;
    assert_error(status, &answer, 403, "builtin_board");
}

async fn server_keys_post_for_players_and_die_on_every_instance_at_once(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let (first, second) = instances(&backend, &db).await;
    let other = second.as_ref().unwrap_or(&first);
    first.create_board(&json!({"id": "arena", "name": "Arena", "writers": "server"})).await;
    let ann = first.register("ann").await;
    let bob = first.register("bob").await;

    let (status, created) = first.admin(Method::POST, "/api/admin/keys", Some(&json!({"name": "match servers"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let key = created["key"].as_str().expect("the key, shown once").to_owned();
    let key_id = created["id"].as_i64().expect("id");
    let (_, listed) = first.admin(Method::GET, "/api/admin/keys", None).await;
    assert_eq!(listed["keys"], json!([{"id": key_id, "name": "match servers", "created_at": created["created_at"]}]));

    // A player's session may not post to a server board; the key posts for anyone.
    let (status, body) = first.post_board_score_raw(&ann.token, "arena", &json!({"score": 10}), None).await;
    assert_error(status, &body, 403, "server_only");
    let (status, body) =
        other.post_board_score_raw(&key, "arena", &json!({"score": 30, "user_id": bob.id}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!((body["entry"]["user"]["id"].as_i64(), body["entry"]["rank"].as_i64()), (Some(bob.id), Some(1)));
    let (status, body) =
        first.post_board_score_raw(&key, "arena", &json!({"score": 20, "user_id": ann.id}), Some("match-7")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) =
        first.post_board_score_raw(&key, "arena", &json!({"score": 20, "user_id": ann.id}), Some("match-7")).await;
    assert_eq!(status, StatusCode::OK, "a key's posts replay like a player's");
    let page = first.ranking("arena", "").await;
    assert_eq!(page["total_players"], 2, "{page}");

    // The player the key names must exist and not be banned.
    for (body, status_code, code) in [
        (json!({"score": 1}), 422, "invalid_user_id"),
        (json!({"score": 1, "user_id": "2"}), 422, "invalid_user_id"),
        (json!({"score": 1, "user_id": 999_999}), 404, "user_not_found"),
    ] {
        let (status, answer) = first.post_board_score_raw(&key, "arena", &body, None).await;
        assert_error(status, &answer, status_code, code);
    }
    let (status, _) =
        first.admin(Method::POST, &format!("/api/admin/users/{}/ban", bob.id), Some(&json!({"reason": "bot"}))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) =
        first.post_board_score_raw(&key, "arena", &json!({"score": 1, "user_id": bob.id}), None).await;
    assert_error(status, &answer, 404, "user_not_found");

    // The built-in boards: server-only by PATCH; the key posts there too.
    let (status, best) =
        first.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"writers": "server"}))).await;
    assert_eq!((status, &best["writers"]), (StatusCode::OK, &json!("server")), "{best}");
    await_rule(other, "best", "writers", &json!("server")).await;
    let (status, body) = other.post_score_raw(&ann.token, &json!({"score": 5}), None).await;
    assert_error(status, &body, 403, "server_only");
    let (status, body) = other.post_score_raw(&key, &json!({"score": 5, "user_id": ann.id}), None).await;
    assert_eq!((status, &body["user"]["id"]), (StatusCode::CREATED, &json!(ann.id)), "{body}");

    let metrics = first.get("/metrics").await.text().await.expect("metrics");
    assert!(metrics.contains(&format!("hiscore_server_key_posts_total{{key=\"{key_id}\"}}")), "{metrics}");

    // Revoked: refused at once, on the instance that revoked it and on the other.
    let (status, _) = first.admin(Method::DELETE, &format!("/api/admin/keys/{key_id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for app in [&first, other] {
        let (status, answer) =
            app.post_board_score_raw(&key, "arena", &json!({"score": 9, "user_id": ann.id}), None).await;
        assert_error(status, &answer, 401, "invalid_server_key");
    }
    let (status, answer) = first.admin(Method::DELETE, &format!("/api/admin/keys/{key_id}"), None).await;
    assert_error(status, &answer, 404, "key_not_found");
    let (_, listed) = first.admin(Method::GET, "/api/admin/keys", None).await;
    assert_eq!(listed["keys"], json!([]));

    // The audit log names every change, never the key itself.
    let (_, audit) = first.admin(Method::GET, "/api/admin/audit?limit=100", None).await;
    let actions: Vec<&str> =
        audit["entries"].as_array().expect("entries").iter().filter_map(|e| e["action"].as_str()).collect();
    for action in ["create_key", "revoke_key", "update_board"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    assert!(!audit.to_string().contains(&key), "the key is never logged");

    // Initialize wipes the keys and the built-in boards' rules.
    let (status, _) = first.initialize(ADMIN, &json!({"users": 0, "scores": 0})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, best) = first.get_json("/api/boards/best").await;
    assert_eq!(best["writers"], "players");
}
