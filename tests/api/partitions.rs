//! Partitions (v4 `partition_by`): validated at creation and on every
//! post, opened by the first post to them, listed, bounded by
//! `max_partitions`, and read like boards of their own (pages, cursor
//! walks, around, friends, cut-offs, `me`, exports) on every backend,
//! from two instances where Redis lets them share the boards, checked
//! against a model that recounts each partition from the posts through
//! fed posts, holds, removed posts and bans.

use std::collections::HashMap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, board_definition, model_seed, settle, spawn_app_on, spawn_instances, Backend, Events, Player,
    TestApp, TestDatabase, ADMIN,
};

backend_tests!(
    partitions_are_validated_listed_and_bounded,
    partitions_rank_like_a_model_on_every_read,
    partitions_take_the_contracts_maxima,
    a_cursor_walk_of_a_partition_under_writes_shows_nobody_twice_and_skips_nobody_unchanged
);

async fn post(app: &TestApp, player: &Player, board: &str, body: Value) -> (StatusCode, Value) {
    app.post_board_score_raw(&player.token, board, &body, None).await
}

fn country(value: &str) -> Value {
    json!({"country": value})
}

/// Every refusal of the definition fields and of posts, the fields on the
/// Board object, the list of partitions, `max_partitions`, and the reads
/// that take `partition=` with their errors.
async fn partitions_are_validated_listed_and_bounded(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    for (extra, code) in [
        (json!({"partition_by": ""}), "invalid_partition_by"),
        (json!({"partition_by": "a-b"}), "invalid_partition_by"),
        (json!({"partition_by": "x".repeat(65)}), "invalid_partition_by"),
        (json!({"partition_by": 5}), "invalid_partition_by"),
        (json!({"partition_by": "c", "max_partitions": 0}), "invalid_max_partitions"),
        (json!({"partition_by": "c", "max_partitions": 10_001}), "invalid_max_partitions"),
        (json!({"partition_by": "c", "max_partitions": "5"}), "invalid_max_partitions"),
        (json!({"max_partitions": 5}), "invalid_max_partitions"),
        (json!({"partition_values": ["DE"]}), "invalid_partition_values"),
        (
            json!({"partition_by": "c", "max_partitions": 1, "partition_values": ["DE", "FR"]}),
            "invalid_partition_values",
        ),
        (json!({"partition_by": "c", "partition_values": ["DE", "DE"]}), "invalid_partition_values"),
        (json!({"partition_by": "c", "partition_values": ["D E"]}), "invalid_partition_values"),
        (json!({"partition_by": "c", "partition_values": ["x".repeat(33)]}), "invalid_partition_values"),
        (json!({"partition_by": "c", "partition_values": "DE"}), "invalid_partition_values"),
    ] {
        let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&board_definition("bad", extra))).await;
        assert_error(status, &body, 422, code);
    }
    // (A league's definition takes only its own board fields: it has none.)

    let created = app
        .create_board(&board_definition(
            "world",
            json!({"partition_by": "country", "max_partitions": 4, "partition_values": ["DE", "FR", "US", "JP"]}),
        ))
        .await;
    assert_eq!(created["partition_by"], "country");
    assert_eq!(created["max_partitions"], 4);
    assert_eq!(created["partition_values"], json!(["DE", "FR", "JP", "US"]));
    let plain = app.create_board(&board_definition("plain", json!({}))).await;
    assert_eq!((plain["partition_by"].clone(), plain["max_partitions"].clone()), (Value::Null, json!(1000)));
    assert_eq!(plain["partition_values"], Value::Null);
    let (status, body) =
        app.admin(Method::PATCH, "/api/admin/boards/world", Some(&json!({"partition_by": "region"}))).await;
    assert_error(status, &body, 422, "invalid_partition_by");
    // A fed board partitions by its own rule; the feeder has none.
    app.create_board(&board_definition("daily", json!({"reset": "0 0 * * *", "partition_by": "country"}))).await;
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/plain", Some(&json!({"feeds": ["daily"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let mut players = Vec::new();
    for i in 0..4 {
        players.push(app.register(&format!("player{i}")).await);
    }
    for metadata in [country("de"), country("XX"), json!({"country": 49}), json!({"country": ""})] {
        let (status, body) = post(&app, &players[0], "world", json!({"score": 5, "metadata": metadata})).await;
        assert_error(status, &body, 422, "invalid_partition");
    }
    let (status, body) =
        post(&app, &players[0], "world", json!({"score": 5, "metadata": country(&"a".repeat(33))})).await;
    assert_error(status, &body, 422, "invalid_partition");
    // Without the field (or with it null): the board alone.
    for metadata in [json!({"other": "DE"}), json!({"country": null})] {
        let (status, posted) = post(&app, &players[0], "world", json!({"score": 5, "metadata": metadata})).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        assert_eq!(posted["partition"], Value::Null);
    }
    let (_, posted) = post(&app, &players[0], "world", json!({"score": 5})).await;
    assert_eq!(posted["partition"], Value::Null);

    // A post lands on the board and on its partition, ranked there.
    let (status, posted) = post(&app, &players[1], "world", json!({"score": 9, "metadata": country("DE")})).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(posted["entry"]["rank"], 1);
    assert_eq!(posted["partition"]["value"], "DE");
    assert_eq!(posted["partition"]["improved"], true);
    assert_eq!(posted["partition"]["entry"]["rank"], 1);
    assert_eq!(posted["partition"]["entry"]["top_percent"], 100);
    let (_, posted) = post(&app, &players[0], "world", json!({"score": 7, "metadata": country("DE")})).await;
    assert_eq!((posted["entry"]["rank"].clone(), posted["partition"]["entry"]["rank"].clone()), (json!(2), json!(2)));
    assert_eq!(posted["partition"]["entry"]["top_percent"], 100);
    let (_, posted) = post(&app, &players[0], "world", json!({"score": 6, "metadata": country("FR")})).await;
    assert_eq!(posted["improved"], false, "not better on the board: {posted}");
    assert_eq!(posted["partition"]["improved"], true, "a new entry in FR: {posted}");
    assert_eq!(posted["partition"]["entry"]["rank"], 1);
    let (_, posted) = post(&app, &players[2], "world", json!({"score": 1, "metadata": country("US")})).await;
    assert_eq!(posted["partition"]["entry"]["rank"], 1);
    let (status, _) = post(&app, &players[3], "world", json!({"score": 3, "metadata": country("US")})).await;
    assert_eq!(status, StatusCode::CREATED);
    // A third partition in a period of a board that takes two is one too
    // many (no entry anywhere); an open one still takes posts.
    app.create_board(&board_definition("small", json!({"partition_by": "country", "max_partitions": 2}))).await;
    for value in ["A", "B"] {
        let (status, _) = post(&app, &players[0], "small", json!({"score": 3, "metadata": country(value)})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, body) = post(&app, &players[1], "small", json!({"score": 3, "metadata": country("C")})).await;
    assert_error(status, &body, 409, "partition_limit");
    let (status, _) = post(&app, &players[1], "small", json!({"score": 4, "metadata": country("B")})).await;
    assert_eq!(status, StatusCode::CREATED);
    let whole = app.ranking("small", "").await;
    assert_eq!(whole["total_players"], 2, "the refused post is on no board: {whole}");
    let pool = db.connect().await;
    let opened: Vec<String> =
        sqlx::query_scalar("SELECT partition_value FROM boards WHERE partition_value IS NOT NULL ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(!opened.contains(&"C".to_owned()), "a refused post opens no partition: {opened:?}");

    // Fed: the fed board's own partition; the answer says where.
    let (status, posted) = post(&app, &players[2], "plain", json!({"score": 4, "metadata": country("BR")})).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(posted["partition"], Value::Null, "plain has no partitions");
    assert_eq!(posted["feeds"][0]["partition"]["value"], "BR", "{posted}");
    assert_eq!(posted["feeds"][0]["partition"]["entry"]["score"], 4, "{posted}");
    let (status, posted) = post(&app, &players[2], "plain", json!({"score": 4, "metadata": country("b r")})).await;
    assert_eq!(status, StatusCode::CREATED, "the feeder takes what its fed board refuses: {posted}");
    assert_eq!(posted["feeds"][0]["status"], "skipped");
    assert_eq!(posted["feeds"][0]["reason"], "invalid_partition");
    assert_eq!(posted["feeds"][0]["partition"], Value::Null);
    let page = app.ranking("daily", "partition=BR").await;
    assert_eq!(page["partition"], "BR");
    assert_eq!(page["entries"].as_array().unwrap().len(), 1, "{page}");

    // The list: values with entries in the period, in byte order, paged.
    let (status, list) = app.get_json("/api/boards/world/partitions?limit=2").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["partitions"], json!([{"value": "DE", "players": 2}, {"value": "FR", "players": 1}]));
    assert_eq!(list["next_after"], "FR");
    let (_, rest) = app.get_json("/api/boards/world/partitions?limit=2&after=FR").await;
    assert_eq!(rest["partitions"], json!([{"value": "US", "players": 2}]));
    assert_eq!(rest["next_after"], Value::Null);
    let (status, body) = app.get_json("/api/boards/plain/partitions").await;
    assert_error(status, &body, 404, "partition_not_found");
    let (status, body) = app.get_json("/api/boards/world/partitions?after=a.b").await;
    assert_error(status, &body, 422, "invalid_partition");

    // Reads: a partition as a board of its own; errors.
    let page = app.ranking("world", "partition=DE").await;
    assert_eq!(page["partition"], "DE");
    assert_eq!(page["total_players"], 2);
    let ids: Vec<i64> = page["entries"].as_array().unwrap().iter().map(|e| e["user"]["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [players[1].id, players[0].id]);
    let whole = app.ranking("world", "").await;
    assert_eq!(whole["partition"], Value::Null);
    assert_eq!(whole["total_players"], 4);
    for value in ["JP", "Zz"] {
        let empty = app.ranking("world", &format!("partition={value}")).await;
        assert_eq!((empty["total_players"].clone(), empty["entries"].clone()), (json!(0), json!([])), "{value}");
        assert_eq!(empty["partition"], value);
    }
    for path in [
        "/api/rankings/plain?partition=DE",
        "/api/rankings/best?partition=DE",
        "/api/rankings/plain/cutoffs?percents=10&partition=DE",
    ] {
        let (status, body) = app.get_json(path).await;
        assert_error(status, &body, 404, "partition_not_found");
    }
    for path in [
        "/api/rankings/world?partition=a.b",
        "/api/rankings/world?partition=",
        "/api/rankings/world/users?ids=1&partition=%C3%A9",
    ] {
        let (status, body) = app.get_json(path).await;
        assert_error(status, &body, 422, "invalid_partition");
    }
    let (status, around) = app.get_json(&format!("/api/rankings/world/around/{}?partition=FR", players[0].id)).await;
    assert_eq!(status, StatusCode::OK, "{around}");
    assert_eq!(around["entries"][0]["rank"], 1);
    let (status, body) = app.get_json(&format!("/api/rankings/world/around/{}?partition=FR", players[1].id)).await;
    assert_error(status, &body, 404, "user_not_on_board");
    let (_, friends) =
        app.get_json(&format!("/api/rankings/world/users?ids={},{}&partition=US", players[2].id, players[3].id)).await;
    assert_eq!(friends["entries"].as_array().unwrap().len(), 2, "{friends}");
    assert_eq!(friends["partition"], "US");
    let (_, cutoffs) = app.get_json("/api/rankings/world/cutoffs?percents=50&partition=DE").await;
    assert_eq!(cutoffs["partition"], "DE");
    assert_eq!((cutoffs["players"].clone(), cutoffs["cutoffs"][0]["rank"].clone()), (json!(2), json!(1)));
    for (query, score) in [("?partition=FR", 6), ("", 7)] {
        let (_, me) = app.get_authed(&format!("/api/boards/world/me{query}"), &players[0].token).await;
        assert_eq!(me["entry"]["score"], score, "{me}");
    }
    let (_, mine) = app.get_json(&format!("/api/users/{}/boards", players[0].id)).await;
    let world: Vec<&Value> = mine["entries"].as_array().unwrap().iter().filter(|e| e["board"] == "world").collect();
    assert_eq!(world.len(), 1, "whole-board entries only: {mine}");
    let url = app.url("/api/admin/boards/world/export?partition=DE");
    let response = app.client.get(url).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let csv = response.text().await.unwrap();
    assert_eq!(csv.lines().count(), 3, "a header and two entries: {csv}");

    // A live page of a partition: the plain GET's page, then again when a
    // post changes the partition.
    let mut stream = Events::open(&app, "/api/rankings/world/live?partition=DE&limit=5", None).await;
    let first = stream.next(Duration::from_secs(5)).await.expect("the first page at once");
    assert_eq!(first.data, app.ranking("world", "partition=DE&limit=5").await);
    let (status, _) = post(&app, &players[2], "world", json!({"score": 99, "metadata": country("DE")})).await;
    assert_eq!(status, StatusCode::CREATED);
    let next = stream.next(Duration::from_secs(5)).await.expect("a page after the post");
    assert_eq!(next.data["partition"], "DE");
    assert_eq!(next.data["entries"][0]["user"]["id"], players[2].id, "{}", next.data);
    drop(stream);

    // The player's own data: their posts (not the partitions' copies) and
    // their entries, a partition's with its value.
    let url = app.url("/api/me/export");
    let response = app.client.get(url).bearer_auth(&players[0].token).send().await.unwrap();
    let document: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let boards: Vec<&str> =
        document["posts"].as_array().unwrap().iter().map(|p| p["board"].as_str().unwrap()).collect();
    assert!(boards.iter().all(|board| ["world", "small"].contains(board)), "{boards:?}");
    let entries: Vec<(&str, &Value)> = document["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["board"].as_str().unwrap(), &e["partition"]))
        .filter(|(board, _)| *board == "world")
        .collect();
    assert_eq!(entries, [("world", &Value::Null), ("world", &json!("DE")), ("world", &json!("FR"))]);

    // An idempotent replay answers the partition as it was.
    let body = json!({"score": 8, "metadata": country("FR")});
    let (_, first) = app.post_board_score_raw(&players[1].token, "world", &body, Some("part-key")).await;
    let (status, again) = app.post_board_score_raw(&players[1].token, "world", &body, Some("part-key")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["partition"], again["partition"]);
    assert_eq!(first["partition"]["value"], "FR");
}

/// A post as the model keeps it: player, score, partition, post id.
type ModelPost = (i64, i64, Option<&'static str>, i64);

/// Each player's entry (best score, reached first) among `posts`.
fn best_entries<'a>(posts: impl Iterator<Item = &'a ModelPost>) -> HashMap<i64, i64> {
    let mut entries: HashMap<i64, i64> = HashMap::new();
    for (player, score, _, _) in posts {
        let best = entries.entry(*player).or_insert(*score);
        *best = (*best).max(*score);
    }
    entries
}

/// A whole page against the model's entries: the same players and
/// scores, in score order, competition ranks by score.
fn check_page(expected: &HashMap<i64, i64>, page: &Value, context: &str) {
    let entries = page["entries"].as_array().unwrap();
    let shown: HashMap<i64, i64> =
        entries.iter().map(|e| (e["user"]["id"].as_i64().unwrap(), e["score"].as_i64().unwrap())).collect();
    assert_eq!(&shown, expected, "{context}: the entries");
    assert_eq!(entries.len(), expected.len(), "{context}: nobody twice");
    assert_eq!(page["total_players"], expected.len(), "{context}: the size");
    for (position, entry) in entries.iter().enumerate() {
        let score = entry["score"].as_i64().unwrap();
        let better = expected.values().filter(|other| **other > score).count();
        assert_eq!(entry["rank"], better as i64 + 1, "{context}: rank at {position}");
        if let Some(next) = entries.get(position + 1) {
            assert!(next["score"].as_i64().unwrap() <= score, "{context}: order at {position}");
        }
    }
}

/// Random posts (ties, some without a partition) to a board feeding a
/// second partitioned board and a third that resets every second (each
/// period's partitions start empty), over two instances where Redis shares the
/// boards; a held post accepted and one rejected, posts removed (fed
/// posts and partitions' copies go with them), two players banned, one
/// let back: each partition of both boards, and each board whole, reads
/// as the model recounts it, by page, cursor walk, around, friends and
/// cut-offs, with the list of partitions counting their players.
async fn partitions_rank_like_a_model_on_every_read(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = spawn_instances(&backend, &db, 2, &["--admin-token", ADMIN]).await;
    let app = &apps[0];
    app.create_board(&board_definition("season", json!({"partition_by": "country", "hold_beyond": 900}))).await;
    // `ticks` resets every second: its partitions start empty each period.
    app.create_board(&board_definition(
        "ticks",
        json!({"partition_by": "country", "reset": "* * * * * *", "archive_periods": 1000}),
    ))
    .await;
    app.create_board(&board_definition("runs", json!({"partition_by": "country", "feeds": ["season", "ticks"]}))).await;
    let mut players = Vec::new();
    for i in 0..20 {
        players.push(app.register(&format!("part{i}")).await);
    }
    let values = [Some("DE"), Some("FR"), Some("US"), Some("x_y-1"), None];
    let mut rng = ChaCha8Rng::seed_from_u64(model_seed(41));
    // Posts to `runs` (the originals, with their fed post's id) and to
    // `season` (direct and fed).
    let mut runs: Vec<(ModelPost, i64)> = Vec::new();
    let mut season: Vec<ModelPost> = Vec::new();
    let mut direct: Vec<i64> = Vec::new();
    // Posts fed to `ticks`, with the period each counted in.
    let mut ticks: Vec<(ModelPost, i64)> = Vec::new();
    for turn in 0..120 {
        let player = &players[rng.gen_range(0..players.len())];
        let partition = values[rng.gen_range(0..values.len())];
        let score = rng.gen_range(1..8) * 10;
        let metadata = partition.map_or(json!({}), country);
        let target = &apps[turn % apps.len()];
        let is_direct = turn % 4 == 0;
        let board = if is_direct { "season" } else { "runs" };
        let (status, posted) = post(target, player, board, json!({"score": score, "metadata": metadata})).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        let id = posted["score"]["id"].as_i64().unwrap();
        if is_direct {
            season.push((player.id, score, partition, id));
            direct.push(id);
        } else {
            let fed = posted["feeds"][0]["score_id"].as_i64().unwrap();
            runs.push(((player.id, score, partition, id), fed));
            season.push((player.id, score, partition, fed));
            let tick = &posted["feeds"][1];
            let period = tick["period"]["index"].as_i64().unwrap();
            ticks.push(((player.id, score, partition, tick["score_id"].as_i64().unwrap()), period));
            assert_eq!(tick["partition"]["value"], partition.map_or(Value::Null, Value::from), "{posted}");
        }
        // The answer ranks the partition's entry as the partition does.
        if let Some(value) = partition {
            let page = target.ranking(board, &format!("partition={value}&limit=100")).await;
            let found = page["entries"].as_array().unwrap().iter().find(|e| e["user"]["id"] == player.id).unwrap();
            assert_eq!(found["rank"], posted["partition"]["entry"]["rank"], "turn {turn}: {posted} {page}");
        } else {
            assert_eq!(posted["partition"], Value::Null);
        }
    }
    // Held originals: one accepted, one rejected; their partitions follow.
    let holder = &players[0];
    for (score, decision) in [(950, "accept"), (990, "reject")] {
        let (status, held) = post(app, holder, "season", json!({"score": score, "metadata": country("FR")})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{held}");
        assert_eq!(held["partition"]["value"], "FR");
        assert_eq!(held["partition"]["improved"], false);
        let id = held["score"]["id"].as_i64().unwrap();
        let fr = app.ranking("season", "partition=FR&limit=100").await;
        assert!(fr["entries"].as_array().unwrap().iter().all(|e| e["score"] != score), "held: not shown yet");
        let path = format!("/api/admin/held/{id}");
        let (status, body) = app.admin(Method::POST, &path, Some(&json!({"decision": decision}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if decision == "accept" {
            season.push((holder.id, score, Some("FR"), id));
        }
    }
    // An operator removes some originals (their fed posts and partitions'
    // copies go with them) and some direct posts to `season`.
    let removed: Vec<&(ModelPost, i64)> = runs.iter().step_by(6).collect();
    for ((_, _, _, id), _) in &removed {
        let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/boards/runs/scores/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    }
    let mut gone: Vec<i64> = removed.iter().flat_map(|(original, fed)| [original.3, *fed]).collect();
    for id in direct.iter().step_by(3) {
        let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/boards/season/scores/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        gone.push(*id);
    }
    let removed_originals: Vec<i64> = removed.iter().map(|(original, _)| original.3).collect();
    let runs_left: Vec<&(ModelPost, i64)> = runs.iter().filter(|(post, _)| !gone.contains(&post.3)).collect();
    // (The fed posts to `ticks` of removed originals went with them: the
    // ticks kept are those of the originals kept, in post order.)
    let kept_ticks: Vec<(ModelPost, i64)> = runs
        .iter()
        .zip(&ticks)
        .filter(|((original, _), _)| !removed_originals.contains(&original.3))
        .map(|(_, tick)| *tick)
        .collect();
    assert_eq!(kept_ticks.len(), runs_left.len());
    let runs: Vec<ModelPost> = runs_left.iter().map(|(post, _)| *post).collect();
    season.retain(|post| !gone.contains(&post.3));
    // Two players banned (off every board and partition), one let back.
    for player in &players[3..5] {
        let path = format!("/api/admin/users/{}/ban", player.id);
        let (status, body) = app.admin(Method::POST, &path, Some(&json!({"reason": "partitions test"}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/users/{}/ban", players[4].id), None).await;
    assert!(status.is_success(), "{body}");
    let banned = players[3].id;
    tokio::time::sleep(Duration::from_millis(300)).await;

    for (board, posts) in [("runs", &runs), ("season", &season)] {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for partition in values {
            let mut expected = best_entries(posts.iter().filter(|post| partition.is_none() || post.2 == partition));
            expected.remove(&banned);
            if let Some(value) = partition {
                if !expected.is_empty() {
                    counts.push((value.to_owned(), expected.len()));
                }
            }
            let query = partition.map_or(String::new(), |value| format!("partition={value}&"));
            for (n, target) in apps.iter().enumerate() {
                let context = format!("{board} {partition:?} on instance {n}");
                let page = target.ranking(board, &format!("{query}limit=100")).await;
                check_page(&expected, &page, &context);
                assert_eq!(page["partition"], partition.map_or(Value::Null, Value::from));
                let whole = page["entries"].as_array().unwrap().clone();
                let mut walked = Vec::new();
                let mut next = format!("{query}limit=3");
                loop {
                    let page = target.ranking(board, &next).await;
                    walked.extend(page["entries"].as_array().unwrap().iter().cloned());
                    let Some(cursor) = page["next_cursor"].as_str() else { break };
                    next = format!("{query}limit=3&cursor={cursor}");
                }
                assert_eq!(walked, whole, "{context}: a cursor walk");
                for entry in whole.iter().step_by(4) {
                    let id = entry["user"]["id"].as_i64().unwrap();
                    let (status, around) =
                        target.get_json(&format!("/api/rankings/{board}/around/{id}?{query}radius=1")).await;
                    assert_eq!(status, StatusCode::OK, "{context}: {around}");
                    let at = whole.iter().position(|e| e["user"]["id"] == id).unwrap();
                    let window = &whole[at.saturating_sub(1)..(at + 2).min(whole.len())];
                    assert_eq!(around["entries"].as_array().unwrap()[..], window[..], "{context}: around {id}");
                }
                let friends: Vec<String> = players.iter().step_by(2).map(|p| p.id.to_string()).collect();
                let (_, listed) =
                    target.get_json(&format!("/api/rankings/{board}/users?{query}ids={}", friends.join(","))).await;
                let expected_friends: Vec<&Value> =
                    whole.iter().filter(|e| friends.contains(&e["user"]["id"].to_string())).collect();
                let listed: Vec<&Value> = listed["entries"].as_array().unwrap().iter().collect();
                assert_eq!(listed, expected_friends, "{context}: friends");
                let (_, cutoffs) = target.get_json(&format!("/api/rankings/{board}/cutoffs?{query}percents=50")).await;
                assert_eq!(cutoffs["players"], expected.len(), "{context}: {cutoffs}");
                let position = cutoffs["cutoffs"][0]["position"].as_u64().unwrap() as usize;
                if position > 0 {
                    assert_eq!(cutoffs["cutoffs"][0]["rank"], whole[position - 1]["rank"], "{context}");
                }
            }
        }
        counts.sort();
        let (_, list) = app.get_json(&format!("/api/boards/{board}/partitions?limit=100")).await;
        let listed: Vec<(String, usize)> = list["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["value"].as_str().unwrap().to_owned(), p["players"].as_u64().unwrap() as usize))
            .collect();
        assert_eq!(listed, counts, "{board}: the partitions listed");
    }

    // `ticks`: each period, whole and by partition, ended ones included.
    let mut periods: Vec<i64> = kept_ticks.iter().map(|(_, period)| *period).collect();
    periods.sort_unstable();
    periods.dedup();
    assert!(!periods.is_empty());
    for period in periods {
        for partition in values {
            let posts = kept_ticks
                .iter()
                .filter(|(post, at)| *at == period && (partition.is_none() || post.2 == partition))
                .map(|(post, _)| post);
            let mut expected = best_entries(posts);
            expected.remove(&banned);
            let query = partition.map_or(String::new(), |value| format!("partition={value}&"));
            let page = app.ranking("ticks", &format!("{query}period={period}&limit=100")).await;
            check_page(&expected, &page, &format!("ticks {partition:?} period {period}"));
        }
    }

    // An ended period's final standings, per partition: a board that
    // resets every second, posts kept inside one period.
    let pool = db.connect().await;
    for attempt in 0..10 {
        let id = format!("tick{attempt}");
        app.create_board(&board_definition(&id, json!({"reset": "* * * * * *", "partition_by": "country"}))).await;
        let scores = [("DE", 30), ("DE", 30), ("FR", 50), ("DE", 20), ("DE", 40)];
        let mut periods = Vec::new();
        for (player, (value, score)) in players[6..].iter().zip(scores) {
            let (status, posted) = post(app, player, &id, json!({"score": score, "metadata": country(value)})).await;
            assert_eq!(status, StatusCode::CREATED, "{posted}");
            periods.push(posted["period"]["index"].as_i64().unwrap());
        }
        if periods.windows(2).any(|w| w[0] != w[1]) {
            continue;
        }
        let period = periods[0];
        let number: i64 =
            sqlx::query_scalar("SELECT number FROM boards WHERE id = ?").bind(&id).fetch_one(&pool).await.unwrap();
        settle(&pool, &format!("{number}:DE"), period).await;
        let page = app.ranking(&id, &format!("partition=DE&period={period}")).await;
        let ranks: Vec<(i64, i64)> = page["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["rank"].as_i64().unwrap(), e["score"].as_i64().unwrap()))
            .collect();
        assert_eq!(ranks, [(1, 40), (2, 30), (2, 30), (4, 20)], "{page}");
        assert_eq!(page["partition"], "DE");
        return;
    }
    panic!("no run of posts stayed inside one period");
}

/// A partitioned board at the contract's maxima: the longest id and
/// field name, 10,000 `partition_values` of 32 characters (a definition
/// of 350 KB), posts with 1 KiB of metadata naming the longest value,
/// held and accepted, read, listed and exported; nothing a column of
/// MariaDB cuts short.
async fn partitions_take_the_contracts_maxima(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let id = "p".repeat(64);
    let field = "f".repeat(64);
    let values: Vec<String> = (0..10_000).map(|i| format!("{i:0>32}")).collect();
    let board = app
        .create_board(&board_definition(
            &id,
            json!({"partition_by": field, "max_partitions": 10_000, "partition_values": values, "hold_beyond": 500}),
        ))
        .await;
    assert_eq!(board["partition_values"].as_array().unwrap().len(), 10_000);
    let (_, read) = app.get_json(&format!("/api/boards/{id}")).await;
    assert_eq!((read["partition_by"].clone(), read["partition_values"].clone()), (json!(field), json!(values)));
    let (status, renamed) =
        app.admin(Method::PATCH, &format!("/api/admin/boards/{id}"), Some(&json!({"name": "x"}))).await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(renamed["partition_values"].as_array().unwrap().len(), 10_000);

    let player = app.register("maximal").await;
    let longest = values.last().unwrap().clone();
    // 1 KiB of metadata naming the longest value.
    let mut metadata = json!({field.clone(): longest, "m": ""});
    let filler = "x".repeat(1024 - metadata.to_string().len());
    metadata["m"] = json!(filler);
    assert_eq!(metadata.to_string().len(), 1024);
    let (status, posted) = post(&app, &player, &id, json!({"score": 400, "metadata": metadata})).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(posted["partition"]["value"], longest.as_str());
    assert_eq!(posted["partition"]["entry"]["metadata"], metadata);
    let (status, held) = post(&app, &player, &id, json!({"score": 900, "metadata": metadata})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    let held_id = held["score"]["id"].as_i64().unwrap();
    let (status, body) =
        app.admin(Method::POST, &format!("/api/admin/held/{held_id}"), Some(&json!({"decision": "accept"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let page = app.ranking(&id, &format!("partition={longest}")).await;
    assert_eq!(page["entries"][0]["score"], 900, "{page}");
    assert_eq!(page["entries"][0]["metadata"], metadata);
    let (_, list) = app.get_json(&format!("/api/boards/{id}/partitions?after={}", values[0])).await;
    assert_eq!(list["partitions"], json!([{"value": longest, "players": 1}]));
    let url = app.url(&format!("/api/admin/boards/{id}/export?format=ndjson&partition={longest}"));
    let response = app.client.get(url).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-disposition"].to_str().unwrap().contains(&format!("{id}-{longest}-period-0")));
    let line: Value = serde_json::from_str(response.text().await.unwrap().lines().next().unwrap()).unwrap();
    assert_eq!((line["score"].clone(), line["metadata"].clone()), (json!(900), metadata));
}

/// A cursor walk of a partition of a `latest` board while players post to
/// it and to other partitions (from another instance where Redis shares
/// the boards): nobody shows twice, and everybody whose entry did not
/// change during the walk shows.
async fn a_cursor_walk_of_a_partition_under_writes_shows_nobody_twice_and_skips_nobody_unchanged(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = spawn_instances(&backend, &db, 2, &["--admin-token", ADMIN]).await;
    let app = &apps[0];
    app.create_board(&board_definition("lanes", json!({"operator": "latest", "partition_by": "country"}))).await;
    let mut players = Vec::new();
    for i in 0..30 {
        let player = app.register(&format!("lane{i}")).await;
        let (status, _) = post(app, &player, "lanes", json!({"score": i * 10, "metadata": country("DE")})).await;
        assert_eq!(status, StatusCode::CREATED);
        players.push(player);
    }
    // Between two pages of each walk, two posts from the other instance
    // (where there is one): a third of the players move, in DE or to FR.
    let writer = apps.last().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(model_seed(42));
    let mut changed: HashMap<i64, ()> = HashMap::new();
    for round in 0..3 {
        let before = changed.clone();
        let mut seen = Vec::new();
        let mut query = "partition=DE&limit=3".to_owned();
        loop {
            let page = app.ranking("lanes", &query).await;
            seen.extend(page["entries"].as_array().unwrap().iter().map(|e| e["user"]["id"].as_i64().unwrap()));
            let Some(cursor) = page["next_cursor"].as_str() else { break };
            query = format!("partition=DE&limit=3&cursor={cursor}");
            for _ in 0..2 {
                let player = &players[rng.gen_range(0..10) * 3];
                let value = ["DE", "FR"][rng.gen_range(0..2)];
                let body = json!({"score": rng.gen_range(0..400), "metadata": country(value)});
                let (status, _) = post(writer, player, "lanes", body).await;
                assert_eq!(status, StatusCode::CREATED);
                changed.insert(player.id, ());
            }
        }
        let unique: std::collections::HashSet<i64> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len(), "round {round}: nobody twice: {seen:?}");
        for player in &players {
            if !changed.contains_key(&player.id) && !before.contains_key(&player.id) {
                assert!(unique.contains(&player.id), "round {round}: unchanged player {} skipped: {seen:?}", player.id);
            }
        }
    }
}
