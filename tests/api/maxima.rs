//! Every v3 write path at the contract's maxima, on every backend (issue
//! 39): the longest names in four-byte characters, tier names that double
//! when escaped, 1 KiB of metadata, the longest idempotency key and
//! webhook URL, the largest cohorts and ladders. Each is accepted (never a
//! 500: a column too short for what the contract allows is a MariaDB-only
//! failure), reads back exactly, and lands in the audit log. The next
//! surface whose column is too short is caught here, not by a player.
//! And a batch at v4's: posts fed to ten partitioned boards, each opening
//! partitions of its own, hundreds committed together.

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{json_of, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};
use crate::webhooks::largest_metadata;

backend_tests!(every_v3_write_takes_the_contracts_maxima, a_batch_of_fed_posts_at_the_maxima_is_taken_whole);

/// `n` four-byte characters (the most bytes a character can take).
fn wide(n: usize) -> String {
    "\u{1D400}".repeat(n)
}

/// `n` characters that JSON escapes to two each.
fn escaped(n: usize) -> String {
    "\"\\".repeat(n / 2) + if n % 2 == 1 { "\"" } else { "" }
}

async fn created(app: &TestApp, path: &str, body: &Value) -> Value {
    let (status, answer) = app.admin(Method::POST, path, Some(body)).await;
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer
}

async fn every_v3_write_takes_the_contracts_maxima(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;

    // Accounts: the longest login name, display name and password.
    let login = "l".repeat(32);
    let password = "p".repeat(72);
    let body = json!({"login_name": login, "password": password, "display_name": wide(32)});
    let (status, registered) = json_of(app.register_raw(&body).await).await;
    assert_eq!(status, StatusCode::CREATED, "{registered}");
    let token = registered["token"].as_str().unwrap().to_owned();
    let user_id = registered["user"]["id"].as_i64().unwrap();
    assert_eq!(registered["user"]["display_name"], wide(32));

    // A board with every field at its longest or largest.
    let board_id = "b".repeat(64);
    let board = created(
        &app,
        "/api/admin/boards",
        &json!({"id": board_id, "name": wide(128), "order": "desc", "operator": "best",
            "reset": "0 0 0 * * 1", "timezone": "America/Argentina/ComodRivadavia", "archive_periods": 1000,
            "min_score": 0, "max_score": 1_000_000_000, "min_interval_ms": 86_400_000, "hold_beyond": 999_999_999,
            "hold_jump": 1_000_000.0, "join_required": true, "max_entrants": 10_000_000, "max_attempts": 1_000_000,
            "starts_at": "2026-01-01T00:00:00.000Z", "ends_at": "2099-12-31T23:59:59.999Z"}),
    )
    .await;
    assert_eq!(board["name"], wide(128));
    let (status, renamed) =
        app.admin(Method::PATCH, &format!("/api/admin/boards/{board_id}"), Some(&json!({"name": escaped(128)}))).await;
    assert_eq!((status, &renamed["name"]), (StatusCode::OK, &json!(escaped(128))), "{renamed}");
    let join = app.client.post(app.url(&format!("/api/boards/{board_id}/entrants"))).bearer_auth(&token);
    assert_eq!(join.send().await.unwrap().status(), StatusCode::CREATED);
    // The highest score (held: beyond `hold_beyond`), the longest key, 1 KiB of metadata.
    let key = "k".repeat(64);
    let post = json!({"score": 1_000_000_000, "metadata": largest_metadata(1)});
    let (status, held) = app.post_board_score_raw(&token, &board_id, &post, Some(&key)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    assert_eq!(held["score"]["metadata"], largest_metadata(1));
    let (status, replayed) = app.post_board_score_raw(&token, &board_id, &post, Some(&key)).await;
    assert_eq!((status, &replayed), (StatusCode::OK, &held), "the stored answer replays whole");
    let score_id = held["score"]["id"].as_i64().unwrap();
    let decision = json!({"decision": "accept", "note": wide(500)});
    let (status, decided) = app.admin(Method::POST, &format!("/api/admin/held/{score_id}"), Some(&decision)).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    assert_eq!(decided["entry"]["metadata"], largest_metadata(1));

    // A league with 20 tiers of 64 characters that double when escaped,
    // the largest cohort, and a post with 1 KiB of metadata.
    let tiers: Vec<String> = (0..20).map(|_| escaped(64)).collect();
    let league_id = "g".repeat(64);
    let league = created(
        &app,
        "/api/admin/leagues",
        &json!({"id": league_id, "name": wide(128), "tiers": tiers, "cohort_size": 200, "promote": 200,
            "demote": 200, "reset": "0 0 * * 1", "timezone": "America/Argentina/ComodRivadavia", "archive_periods": 1000}),
    )
    .await;
    assert_eq!(league["tiers"], json!(tiers));
    let (_, listed) = app.get_json(&format!("/api/leagues/{league_id}")).await;
    assert_eq!(listed["tiers"], json!(tiers), "the ladder reads back exactly");
    let url = app.url(&format!("/api/leagues/{league_id}/scores"));
    let league_post = json!({"score": 1_000_000_000, "metadata": largest_metadata(2)});
    let response =
        app.client.post(url).bearer_auth(&token).header("Idempotency-Key", "m".repeat(64)).json(&league_post);
    let (status, placed) = json_of(response.send().await.unwrap()).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    assert_eq!(placed["tier"]["name"], escaped(64));

    // The built-in log, a key, a webhook at the longest URL, a ban and a rename.
    let (status, scored) = app.post_score_raw(&token, &json!({"score": 1_000_000_000}), Some(&"s".repeat(64))).await;
    assert_eq!(status, StatusCode::CREATED, "{scored}");
    let key_made = created(&app, "/api/admin/keys", &json!({"name": wide(128)})).await;
    assert_eq!(key_made["name"], wide(128));
    let long_url = format!("https://93.184.215.14/{}", "u".repeat(2048 - "https://93.184.215.14/".len()));
    let hook = created(
        &app,
        "/api/admin/webhooks",
        &json!({"url": long_url, "events": ["period.closed", "period.amended", "league.closed", "score.held"]}),
    )
    .await;
    assert_eq!(hook["url"], long_url);
    let rename = json!({"display_name": escaped(32)});
    let (status, profile) = app.admin(Method::PATCH, &format!("/api/admin/users/{user_id}"), Some(&rename)).await;
    assert_eq!((status, &profile["display_name"]), (StatusCode::OK, &json!(escaped(32))), "{profile}");
    let ban = format!("/api/admin/users/{user_id}/ban");
    let (status, banned) = app.admin(Method::POST, &ban, Some(&json!({"reason": wide(500)}))).await;
    assert_eq!(status, StatusCode::OK, "{banned}");
    assert_eq!(app.admin(Method::DELETE, &ban, None).await.0, StatusCode::OK);

    // Every one of those changes is in the audit log, whole.
    let (_, audit) = app.admin(Method::GET, "/api/admin/audit?limit=100", None).await;
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "create_board",
        "update_board",
        "accept_score",
        "create_league",
        "create_key",
        "create_webhook",
        "rename",
        "ban",
        "unban",
    ] {
        assert!(actions.contains(&action), "{action} is not in the audit log: {actions:?}");
    }
    let webhook_record = audit["entries"].as_array().unwrap().iter().find(|e| e["action"] == "create_webhook").unwrap();
    assert_eq!(webhook_record["detail"]["url"], long_url);

    // Erased at the end (logged in again: the ban ended their sessions):
    // everything of theirs goes, whatever its size.
    let (status, session) = app.login(&login, &password).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    let token = session["token"].as_str().unwrap();
    let erase = app.client.delete(app.url("/api/me")).bearer_auth(token).json(&json!({"password": password}));
    assert_eq!(erase.send().await.unwrap().status(), StatusCode::NO_CONTENT);
    let (status, _) = app.login(&login, &password).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Posts the writer commits together.
const POSTS: usize = 300;

/// Partition values the posts name (each opens one on eleven boards).
const VALUES: usize = 100;

/// A post to a board feeding ten boards, every one partitioned, is 22
/// posts and entries; 300 of them in one batch, over 100 partition values
/// and with 1 KiB of metadata each, are 6,600 rows, 1,100 partitions
/// opened and ~100,000 values to bind: more than one statement takes on
/// any backend (SQLite refused the batch's `… OR …` of 1,111 board
/// periods, MariaDB its placeholders), so the writer cuts its statements.
/// Every post is taken, on every board and partition.
async fn a_batch_of_fed_posts_at_the_maxima_is_taken_whole(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let args = ["--admin-token", ADMIN, "--write-batch-max", "2000", "--write-batch-delay-us", "1000000"];
    let app = spawn_app_on(&db, &args).await;
    let (status, body) = app.initialize(ADMIN, &json!({"users": POSTS, "scores": 0, "seed": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let partitioned = json!({"partition_by": "c", "max_partitions": 10_000, "reset": "0 0 * * *"});
    let mut feeds = Vec::new();
    for n in 1..=10 {
        let id = format!("fed{n}");
        let mut definition = partitioned.clone();
        definition["id"] = json!(id);
        definition["name"] = json!(id);
        created(&app, "/api/admin/boards", &definition).await;
        feeds.push(id);
    }
    created(
        &app,
        "/api/admin/boards",
        &json!({"id": "family", "name": "family", "partition_by": "c", "max_partitions": 10_000, "feeds": feeds}),
    )
    .await;
    let key =
        created(&app, "/api/admin/keys", &json!({"name": "match servers"})).await["key"].as_str().unwrap().to_owned();

    let batches_over = |bound: &'static str| {
        let app = &app;
        async move {
            app.metric("hiscore_write_batch_size_count").await
                - app.metric(&format!("hiscore_write_batch_size_bucket{{le=\"{bound}\"}}")).await
        }
    };
    let before = batches_over("256").await;
    let value = |n: usize| format!("{:0>32}", n % VALUES);
    let posts = (1..=POSTS).map(|n| {
        let filler = "x".repeat(1024 - json!({"c": value(n), "m": ""}).to_string().len());
        let body = json!({"score": n, "user_id": n, "metadata": {"c": value(n), "m": filler}});
        let (key, app) = (&key, &app);
        async move { (n, app.post_board_score_raw(key, "family", &body, None).await) }
    });
    for (n, (status, answer)) in join_all(posts).await {
        assert_eq!(status, StatusCode::CREATED, "post {n}: {answer}");
        assert_eq!(answer["partition"]["value"], value(n), "post {n}");
        let fed = answer["feeds"].as_array().unwrap();
        assert_eq!(fed.len(), 10, "post {n}: {answer}");
        for item in fed {
            assert_eq!(
                (&item["status"], &item["partition"]["value"]),
                (&json!("accepted"), &json!(value(n))),
                "{item}"
            );
        }
    }
    assert!(batches_over("256").await > before, "the posts went in a batch of more than 256");

    for board in ["family", "fed1", "fed10"] {
        let page = app.ranking(board, "limit=1").await;
        assert_eq!(page["total_players"], POSTS, "{board}: {page}");
        let (_, partitions) = app.get_json(&format!("/api/boards/{board}/partitions?limit=100")).await;
        assert_eq!(partitions["partitions"].as_array().unwrap().len(), 100, "{board}: {partitions}");
        let one = app.ranking(board, &format!("partition={}&limit=10", value(VALUES))).await;
        let ids: Vec<&Value> = one["entries"].as_array().unwrap().iter().map(|entry| &entry["user"]["id"]).collect();
        assert_eq!(ids, [&json!(300), &json!(200), &json!(100)], "{board}: {one}");
    }
}
