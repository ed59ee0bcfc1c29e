//! Custom boards: the catalog, every operator in both orders, metadata,
//! pages, cursors, around and friends boards, idempotent posts, histories
//! and a player's entries, periods with exact resets and archives, and
//! every error a client can cause.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, model_seed, ranks_and_ids, spawn_admin_app, spawn_app, spawn_app_on, Backend, Player, TestApp,
    TestDatabase, ADMIN,
};

backend_tests!(
    boards_are_created_listed_renamed_and_deleted,
    bad_board_definitions_are_refused_field_by_field,
    every_operator_in_both_orders_keeps_the_right_entry,
    pages_cursors_around_and_friends_on_a_custom_board,
    a_walk_of_a_latest_board_shows_nobody_twice,
    posts_carry_metadata_and_refuse_bad_input,
    idempotency_keys_are_bound_to_the_board_and_body,
    concurrent_posts_to_custom_boards_are_exact,
    resets_put_each_post_in_exactly_one_period_and_archives_stay_exact,
    a_players_history_and_entries_on_every_board,
);

async fn boards_are_created_listed_renamed_and_deleted(backend: Backend) {
    let (app, db) = spawn_admin_app(&backend).await;
    // Arrange: a board with defaults and one with everything set.
    let plain = app.create_board(&json!({"id": "plain", "name": "Plain"})).await;
    assert_eq!(plain["order"], "desc");
    assert_eq!(plain["operator"], "best");
    assert!(plain["reset"].is_null());
    assert_eq!(plain["timezone"], "UTC");
    assert_eq!(
        (plain["archive_periods"].as_i64(), plain["min_score"].as_i64(), plain["max_score"].as_i64()),
        (Some(10), Some(0), Some(1_000_000_000))
    );
    assert_eq!(plain["period"]["index"], 0);
    assert!(plain["period"]["end"].is_null());
    assert_eq!(plain["period"]["start"], plain["created_at"]);
    let weekly = app
        .create_board(&json!({"id": "level-3", "name": "Level 3: fastest run", "order": "asc", "operator": "best",
            "reset": "0 0 * * 1", "timezone": "Europe/Paris", "archive_periods": 12, "min_score": 0, "max_score": 3_600_000}))
        .await;
    assert!(weekly["period"]["end"].as_str().is_some_and(|end| end > weekly["created_at"].as_str().unwrap()));

    // Act + assert: the list has the built-ins first, then by id.
    let (status, list) = app.get_json("/api/boards").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["boards"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["best", "total", "level-3", "plain"]);
    assert_eq!(list["boards"][1]["operator"], "total");
    assert_eq!(list["boards"][0]["period"], json!({"index": 0, "start": null, "end": null}));
    assert_eq!(app.get_json("/api/boards/level-3").await.1["name"], "Level 3: fastest run");
    assert_error_of(&app, "/api/boards/nope", 404, "board_not_found").await;

    // Only the name changes.
    let (status, renamed) = app.admin(Method::PATCH, "/api/admin/boards/level-3", Some(&json!({"name": "L3"}))).await;
    assert_eq!((status.as_u16(), renamed["name"].as_str(), renamed["order"].as_str()), (200, Some("L3"), Some("asc")));
    assert_eq!(app.get_json("/api/boards/level-3").await.1["name"], "L3");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"name": "x"}))).await;
    assert_error(status, &body, 403, "builtin_board");

    // Deleting takes the entries with it (the rows a little later, in
    // the background); the id is free again.
    let player = app.register("deleter").await;
    app.post_board_score(&player, "plain", 5).await;
    let (status, _) = app.admin(Method::DELETE, "/api/admin/boards/plain", None).await;
    assert_eq!(status, 204);
    assert_error_of(&app, "/api/rankings/plain", 404, "board_not_found").await;
    assert_error_of(&app, &format!("/api/users/{}/scores?board=plain", player.id), 404, "board_not_found").await;
    assert!(!app.get_json(&format!("/api/users/{}/boards", player.id)).await.1.to_string().contains("plain"));
    wait_for_rows_of_deleted_boards_to_go(&db).await;
    let (status, body) = app.admin(Method::DELETE, "/api/admin/boards/plain", None).await;
    assert_error(status, &body, 404, "board_not_found");
    let (status, body) = app.admin(Method::DELETE, "/api/admin/boards/total", None).await;
    assert_error(status, &body, 403, "builtin_board");
    let again = app.create_board(&json!({"id": "plain", "name": "Plain again"})).await;
    assert_eq!(app.ranking("plain", "").await["total_players"], 0, "{again}");

    // The admin routes need the token, and exist only with one.
    let (status, body) =
        crate::helpers::json_of(app.post_json("/api/admin/boards", &json!({"id": "x", "name": "x"})).await).await;
    assert_error(status, &body, 401, "admin_token_required");
    let (app_without, _db2) = spawn_app(&backend).await;
    let response = app_without
        .client
        .post(app_without.url("/api/admin/boards"))
        .bearer_auth(ADMIN)
        .json(&json!({"id": "x", "name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

async fn wait_for_rows_of_deleted_boards_to_go(db: &crate::helpers::TestDatabase) {
    let pool = db.connect().await;
    let mut left = 0;
    for _ in 0..100 {
        left = 0;
        for table in ["board_entries", "board_scores", "board_periods"] {
            let sql = format!("SELECT COUNT(*) FROM {table} WHERE board NOT IN (SELECT number FROM boards)");
            left += sqlx::query_scalar::<_, i64>(&sql).fetch_one(&pool).await.unwrap();
        }
        if left == 0 {
            return;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{left} rows of a deleted board are still stored");
}

async fn assert_error_of(app: &TestApp, path: &str, status: u16, code: &str) {
    let (actual, body) = app.get_json(path).await;
    assert_error(actual, &body, status, code);
}

async fn bad_board_definitions_are_refused_field_by_field(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "taken", "name": "Taken"})).await;
    let cases = [
        (json!({"id": "taken", "name": "Again"}), 409, "board_exists"),
        (json!({"id": "best", "name": "Mine"}), 409, "board_exists"),
        (json!({"id": "Upper", "name": "x"}), 422, "invalid_id"),
        (json!({"id": "x".repeat(65), "name": "x"}), 422, "invalid_id"),
        (json!({"name": "no id"}), 422, "invalid_id"),
        (json!({"id": "a"}), 422, "invalid_name"),
        (json!({"id": "a", "name": "bad\nname"}), 422, "invalid_name"),
        (json!({"id": "a", "name": "a", "order": "up"}), 422, "invalid_order"),
        (json!({"id": "a", "name": "a", "operator": "avg"}), 422, "invalid_operator"),
        (json!({"id": "a", "name": "a", "operator": "total", "order": "asc"}), 422, "invalid_operator"),
        (json!({"id": "a", "name": "a", "reset": "every monday"}), 422, "invalid_reset"),
        (json!({"id": "a", "name": "a", "reset": "* * * *"}), 422, "invalid_reset"),
        (json!({"id": "a", "name": "a", "reset": "0 0 0 * * * 2030"}), 422, "invalid_reset"),
        (json!({"id": "a", "name": "a", "reset": 5}), 422, "invalid_reset"),
        (json!({"id": "a", "name": "a", "timezone": "Mars/Olympus"}), 422, "invalid_timezone"),
        (json!({"id": "a", "name": "a", "archive_periods": 1001}), 422, "invalid_archive_periods"),
        (json!({"id": "a", "name": "a", "archive_periods": -1}), 422, "invalid_archive_periods"),
        (json!({"id": "a", "name": "a", "min_score": 1.5}), 422, "invalid_min_score"),
        (json!({"id": "a", "name": "a", "min_score": 10, "max_score": 5}), 422, "invalid_max_score"),
        (json!({"id": "a", "name": "a", "max_score": 1_000_000_000_000_001_i64}), 422, "invalid_max_score"),
    ];
    for (definition, status, code) in cases {
        let (actual, body) = app.admin(Method::POST, "/api/admin/boards", Some(&definition)).await;
        assert_error(actual, &body, status, code);
    }
    let (status, list) = app.get_json("/api/boards").await;
    assert_eq!((status.as_u16(), list["boards"].as_array().unwrap().len()), (200, 3), "nothing else was created");
}

/// What a board should show after these posts, by the contract's rules.
fn expected_entry(order: &str, operator: &str, scores: &[i64]) -> i64 {
    match operator {
        "latest" => *scores.last().unwrap(),
        "total" => scores.iter().sum(),
        _ if order == "asc" => *scores.iter().min().unwrap(),
        _ => *scores.iter().max().unwrap(),
    }
}

async fn every_operator_in_both_orders_keeps_the_right_entry(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let players = [app.register("op1").await, app.register("op2").await, app.register("op3").await];
    let posts: [&[i64]; 3] = [&[50, 30, 70, 60], &[40, 40, 10], &[65]];
    for (order, operator) in
        [("desc", "best"), ("asc", "best"), ("desc", "latest"), ("asc", "latest"), ("desc", "total")]
    {
        let id = format!("{order}-{operator}");
        app.create_board(&json!({"id": id, "name": id, "order": order, "operator": operator, "min_score": -100})).await;
        let mut achieved = HashMap::new();
        for (player, scores) in players.iter().zip(posts) {
            let mut entry_score = None;
            for (i, score) in scores.iter().enumerate() {
                let result = app.post_board_score(player, &id, *score).await;
                let before = entry_score;
                entry_score = Some(expected_entry(order, operator, &scores[..=i]));
                assert_eq!(result["entry"]["score"].as_i64(), entry_score, "{id} {result}");
                assert_eq!(
                    result["improved"],
                    before != entry_score,
                    "{id} post {i} of {}: {result}",
                    player.login_name
                );
                assert_eq!(result["score"]["score"], *score);
                if result["improved"] == true || operator != "best" {
                    achieved.insert(player.id, result["score"]["created_at"].clone());
                }
            }
        }
        let page = app.ranking(&id, "limit=10").await;
        assert_eq!(page["board"], id.as_str());
        let mut expected: Vec<(i64, i64)> =
            players.iter().zip(posts).map(|(p, scores)| (expected_entry(order, operator, scores), p.id)).collect();
        expected.sort_by(|a, b| if order == "asc" { a.0.cmp(&b.0) } else { b.0.cmp(&a.0) });
        let shown: Vec<(i64, i64)> = page["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["score"].as_i64().unwrap(), e["user"]["id"].as_i64().unwrap()))
            .collect();
        assert_eq!(shown, expected, "{id}");
        // achieved_at: the first post that reached a best; the last post otherwise.
        for entry in page["entries"].as_array().unwrap() {
            assert_eq!(entry["achieved_at"], achieved[&entry["user"]["id"].as_i64().unwrap()], "{id} {entry}");
        }
    }
}

async fn pages_cursors_around_and_friends_on_a_custom_board(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "times", "name": "Fastest", "order": "asc"})).await;
    // Times 10, 20, 20, 20, 30, 40 (posted in that order: ties fall back to achieved_at).
    let mut players: Vec<Player> = Vec::new();
    for (i, time) in [10, 20, 20, 20, 30, 40].iter().enumerate() {
        let player = app.register(&format!("runner{i}")).await;
        app.post_board_score(&player, "times", *time).await;
        players.push(player);
    }
    let ids: Vec<i64> = players.iter().map(|p| p.id).collect();
    let first = app.ranking("times", "limit=3").await;
    assert_eq!(ranks_and_ids(&first), [(1, ids[0]), (2, ids[1]), (2, ids[2])]);
    assert_eq!((first["total_players"].as_i64(), first["next_offset"].as_i64()), (Some(6), Some(3)));
    assert_eq!(first["period"]["index"], 0);
    let second = app.ranking("times", "limit=3&offset=3").await;
    assert_eq!(ranks_and_ids(&second), [(2, ids[3]), (5, ids[4]), (6, ids[5])]);
    // A cursor walk sees everyone once, in order, even when someone moves meanwhile.
    let mut walked = Vec::new();
    let mut page = app.ranking("times", "limit=2").await;
    let mut moved = false;
    loop {
        walked.extend(ranks_and_ids(&page).into_iter().map(|(_, id)| id));
        if !moved {
            // The last runner beats everyone: already behind the walk, not shown again.
            app.post_board_score(&players[5], "times", 5).await;
            moved = true;
        }
        let Some(cursor) = page["next_cursor"].as_str() else { break };
        page = app.ranking("times", &format!("limit=2&cursor={cursor}")).await;
    }
    assert_eq!(walked, ids[..5], "the walk shows every player who did not move, once, in order");
    let (status, body) = app.get_json("/api/rankings/times?cursor=AAAA").await;
    assert_error(status, &body, 400, "invalid_cursor");
    let best_cursor = app.ranking("best", "limit=1").await["next_cursor"].clone();
    if let Some(cursor) = best_cursor.as_str() {
        let (status, body) = app.get_json(&format!("/api/rankings/times?cursor={cursor}")).await;
        assert_error(status, &body, 400, "invalid_cursor");
    }

    // Around a player: ranks are board-wide (the last runner now leads with 5).
    let (status, around) = app.get_json(&format!("/api/rankings/times/around/{}?radius=1", ids[3])).await;
    assert_eq!(status, 200);
    assert_eq!(ranks_and_ids(&around), [(3, ids[2]), (3, ids[3]), (6, ids[4])]);
    let outsider = app.register("outsider").await;
    let (status, body) = app.get_json(&format!("/api/rankings/times/around/{}", outsider.id)).await;
    assert_error(status, &body, 404, "user_not_on_board");

    // A friends board: those of the ids on the board, in order, ranked board-wide.
    let friends = format!("{},{},{},{}", ids[4], outsider.id, ids[1], 999_999);
    let (status, page) = app.get_json(&format!("/api/rankings/times/users?ids={friends}")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(ranks_and_ids(&page), [(3, ids[1]), (6, ids[4])]);
    assert_eq!(page["total_players"], 6);
    assert!(page["next_cursor"].is_null() && page["next_offset"].is_null());
    let (status, page) = app.get_json(&format!("/api/rankings/best/users?ids={}", ids[0])).await;
    assert_eq!((status.as_u16(), page["entries"].as_array().unwrap().len()), (200, 0), "no built-in scores yet");
    let (status, body) = app.get_json("/api/rankings/times/users?ids=0").await;
    assert_error(status, &body, 400, "invalid_ids");
}

/// On a `latest` board a player's score can get worse: one passed by a
/// walk could fall past its cursor and show again. A walk leaves out the
/// entries changed since it began, so it shows everyone else once, in
/// order, with board-wide ranks.
async fn a_walk_of_a_latest_board_shows_nobody_twice(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "mood", "name": "Current mood", "operator": "latest"})).await;
    let mut players: Vec<Player> = Vec::new();
    for i in 0..12 {
        let player = app.register(&format!("moody{i}")).await;
        app.post_board_score(&player, "mood", 120 - 10 * i).await;
        players.push(player);
    }
    let ids: Vec<i64> = players.iter().map(|p| p.id).collect();
    let mut walked: Vec<(i64, i64)> = Vec::new();
    let mut page = app.ranking("mood", "limit=3").await;
    let mut moved = false;
    loop {
        walked.extend(ranks_and_ids(&page));
        if !moved {
            app.post_board_score(&players[0], "mood", 1).await; // seen; falls past the cursor
            app.post_board_score(&players[5], "mood", 115).await; // not seen yet; jumps above it
            app.post_board_score(&players[8], "mood", 55).await; // not seen yet; stays below it
            moved = true;
        }
        let Some(cursor) = page["next_cursor"].as_str() else { break };
        page = app.ranking("mood", &format!("limit=3&cursor={cursor}")).await;
    }
    let walked_ids: Vec<i64> = walked.iter().map(|(_, id)| *id).collect();
    let unmoved = [1, 2, 3, 4, 6, 7, 9, 10, 11].map(|i| ids[i]);
    assert_eq!(walked_ids, [&[ids[0]][..], &unmoved].concat(), "everyone who did not post once, in order");

    // The pages after the moves rank board-wide, as a fresh read does.
    let now: HashMap<i64, i64> =
        ranks_and_ids(&app.ranking("mood", "limit=100").await).into_iter().map(|(rank, id)| (id, rank)).collect();
    for (rank, id) in &walked[3..] {
        assert_eq!(now[id], *rank, "player {id}");
    }
    assert_eq!(now.len(), 12, "a new walk shows everyone: {now:?}");
}

async fn posts_carry_metadata_and_refuse_bad_input(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "runs", "name": "Runs", "min_score": 10, "max_score": 100})).await;
    let alice = app.register("alice").await;
    let metadata = json!({"character": "fox", "replay": "r-17", "items": [1, 2]});
    let (status, result) =
        app.post_board_score_raw(&alice.token, "runs", &json!({"score": 50, "metadata": metadata}), None).await;
    assert_eq!(status, 201, "{result}");
    assert_eq!(result["score"]["metadata"], metadata);
    assert_eq!(result["entry"]["metadata"], metadata);
    assert_eq!((result["entry"]["rank"].as_i64(), result["entry"]["user"]["id"].as_i64()), (Some(1), Some(alice.id)));
    assert_eq!(result["period"]["index"], 0);
    // A lower score leaves the entry (and its metadata) as it was.
    let (_, lower) = app
        .post_board_score_raw(&alice.token, "runs", &json!({"score": 20, "metadata": {"character": "owl"}}), None)
        .await;
    assert_eq!(
        (lower["improved"].as_bool(), lower["entry"]["metadata"]["character"].as_str()),
        (Some(false), Some("fox"))
    );
    let page = app.ranking("runs", "").await;
    assert_eq!(page["entries"][0]["metadata"], metadata);
    assert!(
        app.ranking("best", "").await["entries"].as_array().unwrap().is_empty(),
        "custom posts stay off the built-ins"
    );

    let cases = [
        (json!({"score": 9}), 422, "invalid_score"),
        (json!({"score": 101}), 422, "invalid_score"),
        (json!({"score": 50.5}), 422, "invalid_score"),
        (json!({"score": "50"}), 422, "invalid_score"),
        (json!({"score": 50, "metadata": [1]}), 422, "invalid_metadata"),
        (json!({"score": 50, "metadata": "fox"}), 422, "invalid_metadata"),
        (json!({"score": 50, "metadata": {"pad": "x".repeat(1100)}}), 422, "invalid_metadata"),
    ];
    for (body, status, code) in cases {
        let (actual, answer) = app.post_board_score_raw(&alice.token, "runs", &body, None).await;
        assert_error(actual, &answer, status, code);
    }
    let (status, body) = app.post_board_score_raw(&alice.token, "nope", &json!({"score": 50}), None).await;
    assert_error(status, &body, 404, "board_not_found");
    let (status, body) = app.post_board_score_raw(&alice.token, "best", &json!({"score": 50}), None).await;
    assert_error(status, &body, 403, "builtin_board");
    let (status, body) = app.post_board_score_raw("not-a-token", "runs", &json!({"score": 50}), None).await;
    assert_error(status, &body, 401, "invalid_session");
    let (_, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(me["play_count"], 0, "custom posts do not count on the built-in boards");
}

async fn idempotency_keys_are_bound_to_the_board_and_body(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "one", "name": "One", "operator": "total"})).await;
    app.create_board(&json!({"id": "two", "name": "Two"})).await;
    let alice = app.register("alice").await;
    let body = json!({"score": 7, "metadata": {"run": 1}});
    let (status, first) = app.post_board_score_raw(&alice.token, "one", &body, Some("k1")).await;
    assert_eq!(status, 201);
    let (status, replay) = app.post_board_score_raw(&alice.token, "one", &body, Some("k1")).await;
    assert_eq!((status.as_u16(), &replay), (200, &first));
    for (board, other) in
        [("one", json!({"score": 8, "metadata": {"run": 1}})), ("one", json!({"score": 7})), ("two", body.clone())]
    {
        let (status, answer) = app.post_board_score_raw(&alice.token, board, &other, Some("k1")).await;
        assert_error(status, &answer, 422, "idempotency_key_reused");
    }
    let (status, answer) = app.post_score_raw(&alice.token, &json!({"score": 7}), Some("k1")).await;
    assert_error(status, &answer, 422, "idempotency_key_reused");
    assert_eq!(app.ranking("one", "").await["entries"][0]["score"], 7, "counted once");
    let bob = app.register("bob").await;
    let (status, _) = app.post_board_score_raw(&bob.token, "one", &body, Some("k1")).await;
    assert_eq!(status, 201, "keys are per player");
}

async fn concurrent_posts_to_custom_boards_are_exact(backend: Backend) {
    use rand::{Rng, SeedableRng};
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "sum", "name": "Sum", "operator": "total"})).await;
    app.create_board(&json!({"id": "fast", "name": "Fast", "order": "asc"})).await;
    app.create_board(&json!({"id": "last", "name": "Last", "operator": "latest"})).await;
    let mut players = Vec::new();
    for i in 0..5 {
        players.push(app.register(&format!("crowd{i}")).await);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(model_seed(12));
    let posts: Vec<(usize, &str, i64)> = (0..240)
        .map(|i| (rng.gen_range(0..players.len()), ["sum", "fast", "last"][i % 3], rng.gen_range(1..40) * 10))
        .collect();
    let bodies: Vec<Value> = posts.iter().map(|(_, _, score)| json!({"score": score})).collect();
    let requests = posts
        .iter()
        .zip(&bodies)
        .map(|((player, board, _), body)| app.post_board_score_raw(&players[*player].token, board, body, None));
    let results = join_all(requests).await;
    // The model, in commit order (post ids).
    let mut accepted: Vec<(i64, usize, &str, i64)> = posts
        .iter()
        .zip(&results)
        .map(|((player, board, score), (status, body))| {
            assert_eq!(*status, StatusCode::CREATED, "{body}");
            (body["score"]["id"].as_i64().unwrap(), *player, *board, *score)
        })
        .collect();
    accepted.sort();
    for board in ["sum", "fast", "last"] {
        let mut entries: HashMap<i64, i64> = HashMap::new();
        for (_, player, _, score) in accepted.iter().filter(|(_, _, b, _)| *b == board) {
            let id = players[*player].id;
            let entry = entries.entry(id).or_insert(match board {
                "sum" => 0,
                "fast" => i64::MAX,
                _ => 0,
            });
            *entry = match board {
                "sum" => *entry + score,
                "fast" => (*entry).min(*score),
                _ => *score,
            };
        }
        let page = app.ranking(board, "limit=100").await;
        let shown: HashMap<i64, i64> = page["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["user"]["id"].as_i64().unwrap(), e["score"].as_i64().unwrap()))
            .collect();
        assert_eq!(shown, entries, "{board}");
        assert_eq!(page["total_players"], entries.len());
    }
}

/// Waits until the board's current period is past `index`.
async fn wait_for_period_after(app: &TestApp, board: &str, index: i64) -> Value {
    for _ in 0..100 {
        let (_, body) = app.get_json(&format!("/api/boards/{board}")).await;
        if body["period"]["index"].as_i64().unwrap_or(0) > index {
            return body;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the board did not reset");
}

async fn resets_put_each_post_in_exactly_one_period_and_archives_stay_exact(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    // Resets every second; two ended periods are kept.
    app.create_board(&json!({"id": "tick", "name": "Tick", "reset": "* * * * * *", "archive_periods": 2})).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;

    // Posts in one period; each answer says which, and it is the board's period then.
    let first = app.post_board_score(&alice, "tick", 10).await;
    let index = first["period"]["index"].as_i64().unwrap();
    let start = first["period"]["start"].as_str().unwrap().to_owned();
    let end = first["period"]["end"].as_str().unwrap().to_owned();
    assert!(start.as_str() <= first["score"]["created_at"].as_str().unwrap());
    assert!(first["score"]["created_at"].as_str().unwrap() < end.as_str());
    let in_same = app.post_board_score(&bob, "tick", 20).await;
    let bob_index = in_same["period"]["index"].as_i64().unwrap();

    // After the reset: an empty board, the old period readable as it was.
    let now = wait_for_period_after(&app, "tick", index.max(bob_index)).await;
    let current = now["period"]["index"].as_i64().unwrap();
    let fresh = app.ranking("tick", "").await;
    assert_eq!((fresh["total_players"].as_i64(), fresh["period"]["index"].as_i64()), (Some(0), Some(current)));
    let later = app.post_board_score(&alice, "tick", 5).await;
    let later_index = later["period"]["index"].as_i64().unwrap();
    assert!(later_index > index, "a post after the reset counts in a new period");
    assert_eq!(later["entry"]["rank"], 1);
    assert_eq!(later["improved"], true, "a new period starts a new entry");

    let archived = app.ranking("tick", &format!("period={index}")).await;
    assert_eq!(archived["period"], json!({"index": index, "start": start, "end": end}));
    let mine: Vec<i64> = archived["entries"].as_array().unwrap().iter().map(|e| e["score"].as_i64().unwrap()).collect();
    assert!(mine.contains(&10) && !mine.contains(&5), "{archived}");
    let (status, around) =
        app.get_json(&format!("/api/rankings/tick/around/{}?period={index}&radius=0", alice.id)).await;
    assert_eq!((status.as_u16(), around["entries"][0]["score"].as_i64()), (200, Some(10)), "{around}");

    // The periods list: newest first, the current one included, players counted.
    let (_, periods) = app.get_json("/api/boards/tick/periods?limit=100").await;
    let listed: Vec<i64> =
        periods["periods"].as_array().unwrap().iter().map(|p| p["index"].as_i64().unwrap()).collect();
    assert!(listed.windows(2).all(|w| w[0] > w[1]), "{periods}");
    assert!(listed.contains(&later_index) && listed.contains(&index), "{periods}");
    let players_of =
        |i: i64| periods["periods"].as_array().unwrap().iter().find(|p| p["index"] == i).unwrap()["players"].clone();
    assert_eq!(players_of(index), if bob_index == index { 2 } else { 1 });

    // Periods that never began, or are no longer kept, are 404; bad ones 400.
    let (status, body) = app.get_json(&format!("/api/rankings/tick?period={}", current + 100)).await;
    assert_error(status, &body, 404, "period_not_found");
    let (status, body) = app.get_json("/api/rankings/tick?period=soon").await;
    assert_error(status, &body, 400, "invalid_period");
    let (status, body) = app.get_json("/api/rankings/best?period=1").await;
    assert_error(status, &body, 404, "period_not_found");
    assert_eq!(app.ranking("best", "period=0").await["period"], json!({"index": 0, "start": null, "end": null}));
    // Every post is in exactly one period: the history says which.
    let (_, history) = app.get_json(&format!("/api/users/{}/scores?board=tick", alice.id)).await;
    let periods_of_posts: Vec<i64> =
        history["scores"].as_array().unwrap().iter().map(|s| s["period"]["index"].as_i64().unwrap()).collect();
    assert_eq!(periods_of_posts, [later_index, index], "{history}");

    // Once no longer kept, a period and its posts are gone.
    wait_for_period_after(&app, "tick", later_index + 3).await;
    let (status, body) = app.get_json(&format!("/api/rankings/tick?period={index}")).await;
    assert_error(status, &body, 404, "period_not_found");
    for _ in 0..50 {
        let (_, history) = app.get_json(&format!("/api/users/{}/scores?board=tick", alice.id)).await;
        if history["scores"] == json!([]) {
            return;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the posts of expired periods were not deleted");
}

async fn a_players_history_and_entries_on_every_board(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "a-board", "name": "A"})).await;
    app.create_board(&json!({"id": "b-board", "name": "B", "order": "asc"})).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    app.post_score(&alice, 300).await;
    app.post_board_score(&bob, "a-board", 90).await;
    for score in [40, 70] {
        let (status, _) = app
            .post_board_score_raw(&alice.token, "a-board", &json!({"score": score, "metadata": {"s": score}}), None)
            .await;
        assert_eq!(status, 201);
    }
    app.post_board_score(&alice, "b-board", 12).await;

    let (status, history) = app.get_json(&format!("/api/users/{}/scores?board=a-board&limit=1", alice.id)).await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["scores"][0]["score"], 70);
    assert_eq!(history["scores"][0]["metadata"], json!({"s": 70}));
    assert_eq!(history["scores"][0]["period"]["index"], 0);
    let before = history["next_before"].as_i64().unwrap();
    let (_, older) = app.get_json(&format!("/api/users/{}/scores?board=a-board&before={before}", alice.id)).await;
    assert_eq!(older["scores"].as_array().unwrap().len(), 1);
    assert!(older["next_before"].is_null());
    let (_, log) = app.get_json(&format!("/api/users/{}/scores", alice.id)).await;
    assert_eq!(log["scores"].as_array().unwrap().len(), 1, "the default is the /api/scores log");
    let (status, body) = app.get_json(&format!("/api/users/{}/scores?board=nope", alice.id)).await;
    assert_error(status, &body, 404, "board_not_found");

    let (status, boards) = app.get_json(&format!("/api/users/{}/boards", alice.id)).await;
    assert_eq!(status, 200);
    let entries: Vec<(String, i64, i64)> = boards["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["board"].as_str().unwrap().to_owned(), e["rank"].as_i64().unwrap(), e["score"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [("best".into(), 1, 300), ("total".into(), 1, 300), ("a-board".into(), 2, 70), ("b-board".into(), 1, 12)]
    );
    assert_eq!(boards["entries"][2]["metadata"], json!({"s": 70}));
    assert!(boards["entries"][0]["metadata"].is_null());
    let (_, none) = app.get_json(&format!("/api/users/{}/boards", app.register("idle").await.id)).await;
    assert_eq!(none["entries"], json!([]));
    let (status, body) = app.get_json("/api/users/999999/boards").await;
    assert_error(status, &body, 404, "user_not_found");
}

/// A board created on one instance is served by the other at once, posts
/// on either show on both, and a rename or a delete reaches the other.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn instances_share_custom_boards() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let a = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let b = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    a.create_board(&json!({"id": "shared", "name": "Shared", "order": "asc", "reset": "0 0 1 1 *"})).await;
    let alice = b.register("alice").await;
    let bob = a.register("bob").await;
    b.post_board_score(&alice, "shared", 30).await;
    a.post_board_score(&bob, "shared", 20).await;
    for app in [&a, &b] {
        assert_eq!(ranks_and_ids(&app.ranking("shared", "").await), [(1, bob.id), (2, alice.id)]);
    }
    b.admin(Method::PATCH, "/api/admin/boards/shared", Some(&json!({"name": "Renamed"}))).await;
    let (status, _) = b.admin(Method::DELETE, "/api/admin/boards/shared", None).await;
    assert_eq!(status, 204);
    for _ in 0..30 {
        if a.get_json("/api/boards/shared").await.0 == 404 {
            return;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the other instance still serves a deleted board");
}

/// Redis loses everything (a FLUSHALL): custom boards are read from the
/// database meanwhile, exactly, and rebuilt in Redis like the built-ins.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_flushed_redis_rebuilds_custom_boards() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    app.create_board(&json!({"id": "laps", "name": "Laps", "order": "asc"})).await;
    let mut players = Vec::new();
    for (i, time) in [300, 100, 200].iter().enumerate() {
        let player = app.register(&format!("lapper{i}")).await;
        app.post_board_score(&player, "laps", *time).await;
        players.push(player);
    }
    let before = app.ranking("laps", "limit=10").await;

    db.redis.as_ref().unwrap().flush().await;
    let during = app.ranking("laps", "limit=10").await;
    assert_eq!(during, before, "read from the database while Redis is empty");
    let late = app.register("late").await;
    app.post_board_score(&late, "laps", 150).await;
    for _ in 0..50 {
        if app.get_json("/healthz").await.1["redis"] == "ok" {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.get_json("/healthz").await.1["redis"], "ok", "Redis was not rebuilt");
    let after = app.ranking("laps", "limit=10").await;
    assert_eq!(
        ranks_and_ids(&after),
        [(1, players[1].id), (2, late.id), (3, players[2].id), (4, players[0].id)],
        "the post made while Redis was empty is there too"
    );
}

/// Two instances post new entries to one board period at once: their
/// transactions queue on the period's row instead of deadlocking on the
/// gaps where the entries go, and every post counts once.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn two_instances_posting_new_entries_to_one_board_do_not_deadlock() {
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let apps = [spawn_app_on(&db, &["--admin-token", ADMIN]).await, spawn_app_on(&db, &[]).await];
    apps[0].create_board(&json!({"id": "crowded", "name": "Crowded", "operator": "total"})).await;
    let mut players = Vec::new();
    for i in 0..120 {
        players.push(apps[i % 2].register(&format!("crowd{i}")).await);
    }
    // Mostly first posts: new entries, inserted into the gaps both lock.
    let bodies: Vec<Value> = (0..240).map(|i| json!({"score": i % 7 + 1})).collect();
    let requests = bodies.iter().enumerate().map(|(i, body)| {
        apps[i % 2].post_board_score_raw(&players[(i * 7) % players.len()].token, "crowded", body, None)
    });
    let results = join_all(requests).await;
    let mut sums: HashMap<i64, i64> = HashMap::new();
    for ((i, body), (status, answer)) in bodies.iter().enumerate().zip(&results) {
        assert_eq!(*status, StatusCode::CREATED, "{answer}");
        *sums.entry(players[(i * 7) % players.len()].id).or_default() += body["score"].as_i64().unwrap();
    }
    let mut shown: HashMap<i64, i64> = HashMap::new();
    for offset in [0, 100] {
        let page = apps[1].ranking("crowded", &format!("limit=100&offset={offset}")).await;
        shown.extend(
            page["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["user"]["id"].as_i64().unwrap(), e["score"].as_i64().unwrap())),
        );
    }
    assert_eq!(shown, sums);
}

/// An instance that dies between a commit and its Redis record leaves a
/// gap in the change numbers Redis has seen (here made by hand: a number
/// recorded past one that never came). A gap that lasts five seconds gets
/// the board rebuilt from the database, so walks begun on Redis do not
/// stay held back at it (nor the lost entry stale).
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_lasting_gap_in_the_change_numbers_rebuilds_the_board() {
    use deadpool_redis::redis;
    let backend = Backend::mariadb_redis();
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let board = app.create_board(&json!({"id": "last", "name": "Last", "operator": "latest"})).await;
    let period = board["period"]["index"].as_i64().unwrap().to_string();
    for (i, score) in [30, 10, 20].iter().enumerate() {
        let player = app.register(&format!("runner{i}")).await;
        app.post_board_score(&player, "last", *score).await;
    }
    let pool = db.connect().await;
    let number: i64 = sqlx::query_scalar("SELECT number FROM boards WHERE id = 'last'").fetch_one(&pool).await.unwrap();
    let test_redis = db.redis.as_ref().unwrap();
    let keys = hiscore::redis::Keys::new(&test_redis.prefix).custom_board(number);
    let client = redis::Client::open(test_redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let applied = || redis::cmd("GET").arg(keys.changes_applied(&period)).clone();
    let through: i64 = applied().query_async(&mut conn).await.unwrap();
    assert_eq!(through, 3, "three posts, numbered without a gap");
    // Number 5 recorded, number 4 never: a lost record.
    let _: i64 = redis::cmd("SADD").arg(keys.changes_ahead(&period)).arg(5).query_async(&mut conn).await.unwrap();
    let mut healed = false;
    for _ in 0..100 {
        let ahead: i64 = redis::cmd("SCARD").arg(keys.changes_ahead(&period)).query_async(&mut conn).await.unwrap();
        if ahead == 0 {
            healed = true;
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(healed, "the gap still stands after 10 s");
    let through: i64 = applied().query_async(&mut conn).await.unwrap();
    assert_eq!(through, 3, "rebuilt from the database's count");
    assert_eq!(ranks_and_ids(&app.ranking("last", "limit=10").await).len(), 3);
}
