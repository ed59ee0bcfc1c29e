//! Tie-breakers (v4 `subscores`): validated at creation and on every post,
//! shown on boards, posts, entries and cut-offs, and ranked by the full
//! key (score, then each subscore in its own order, then time, then id)
//! on every read — pages, cursor walks, around, friends, cut-offs, a
//! post's answer, an ended period's final standings — on every backend,
//! read from two instances where Redis lets them share the boards, and
//! checked against a model that recounts each board from the posts.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, board_definition, model_seed, settle, spawn_app_on, spawn_instances, Backend, Player, TestApp,
    TestDatabase, ADMIN,
};

backend_tests!(subscores_are_validated_and_shown, subscore_boards_rank_by_the_full_key_on_every_read);

async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &["--admin-token", ADMIN]).await
}

async fn post(app: &TestApp, player: &Player, board: &str, body: Value) -> (StatusCode, Value) {
    app.post_board_score_raw(&player.token, board, &body, None).await
}

/// Every rule of `invalid_subscores` on boards and posts, the fixed field
/// on `PATCH`, feeds between boards of other subscores, and where posts
/// and entries show them (and where they do not).
async fn subscores_are_validated_and_shown(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let name = |n: &str| json!({"name": n, "order": "asc"});
    for subscores in [
        json!([name("a"), name("b"), name("c")]),
        json!([name("a"), name("a")]),
        json!([{"name": "A", "order": "asc"}]),
        json!([{"name": "", "order": "asc"}]),
        json!([{"name": "x".repeat(33), "order": "asc"}]),
        json!([{"name": "time", "order": "up"}]),
        json!([{"name": "time"}]),
        json!([{"name": "time", "order": "asc", "weight": 2}]),
        json!(["time"]),
        json!({"name": "time", "order": "asc"}),
        json!("time"),
    ] {
        let (status, body) = app
            .admin(Method::POST, "/api/admin/boards", Some(&board_definition("bad", json!({"subscores": subscores}))))
            .await;
        assert_error(status, &body, 422, "invalid_subscores");
    }
    let total = board_definition("bad", json!({"operator": "total", "subscores": [name("t")]}));
    let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&total)).await;
    assert_error(status, &body, 422, "invalid_subscores");

    let two = json!([{"name": "kills", "order": "desc"}, {"name": "time_ms", "order": "asc"}]);
    let created = app.create_board(&board_definition("race", json!({"subscores": two}))).await;
    assert_eq!(created["subscores"], two);
    let (_, read) = app.get_json("/api/boards/race").await;
    assert_eq!(read["subscores"], two);
    let plain = app.create_board(&board_definition("plain", json!({"subscores": []}))).await;
    assert_eq!(plain["subscores"], json!([]));
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/race", Some(&json!({"subscores": []}))).await;
    assert_error(status, &body, 422, "invalid_subscores");

    // Feeds join boards of the same subscore orders (names aside), or a
    // board without any.
    app.create_board(&board_definition(
        "same",
        json!({"subscores": [{"name": "k", "order": "desc"}, {"name": "t", "order": "asc"}]}),
    ))
    .await;
    app.create_board(&board_definition(
        "other",
        json!({"subscores": [{"name": "k", "order": "asc"}, {"name": "t", "order": "asc"}]}),
    ))
    .await;
    app.create_board(&board_definition("shorter", json!({"subscores": [{"name": "k", "order": "desc"}]}))).await;
    for (feeder, feeds) in [("race", "other"), ("race", "shorter"), ("plain", "race")] {
        let (status, body) =
            app.admin(Method::PATCH, &format!("/api/admin/boards/{feeder}"), Some(&json!({"feeds": [feeds]}))).await;
        assert_error(status, &body, 422, "invalid_feeds");
    }
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"feeds": ["race"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    let (status, body) =
        app.admin(Method::PATCH, "/api/admin/boards/race", Some(&json!({"feeds": ["same", "plain"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let player = app.register("racer").await;
    for subscores in [
        Value::Null,
        json!([]),
        json!([1]),
        json!([1, 2, 3]),
        json!([-1, 2]),
        json!([1, 9_007_199_254_740_992_i64]),
        json!([1.5, 2]),
        json!(["1", 2]),
        json!({"kills": 1}),
    ] {
        let body = if subscores.is_null() { json!({"score": 5}) } else { json!({"score": 5, "subscores": subscores}) };
        let (status, body) = post(&app, &player, "race", body).await;
        assert_error(status, &body, 422, "invalid_subscores");
    }
    let (status, body) = post(&app, &player, "plain", json!({"score": 5, "subscores": [1]})).await;
    assert_error(status, &body, 422, "invalid_subscores");
    let (status, body) = app.post_score_raw(&player.token, &json!({"score": 5, "subscores": [1]}), None).await;
    assert_error(status, &body, 422, "invalid_subscores");

    let max = 9_007_199_254_740_991_i64;
    let (status, posted) = post(&app, &player, "race", json!({"score": 5, "subscores": [max, 0]})).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(posted["score"]["subscores"], json!([max, 0]));
    assert_eq!(posted["entry"]["subscores"], json!([max, 0]));
    assert_eq!(posted["entry"]["rank"], 1);
    // Fed with the same subscores; a fed board without them drops them.
    let feeds = posted["feeds"].as_array().unwrap();
    assert_eq!(feeds[0]["entry"]["subscores"], json!([max, 0]), "{posted}");
    assert!(feeds[1]["entry"].get("subscores").is_none(), "{posted}");
    assert_eq!(feeds[1]["entry"]["score"], 5);
    // An equal score with a worse subscore is no improvement on `best`.
    let (_, worse) = post(&app, &player, "race", json!({"score": 5, "subscores": [max, 1]})).await;
    assert_eq!(worse["improved"], false, "{worse}");
    assert_eq!(worse["entry"]["subscores"], json!([max, 0]));
    let (_, better) = post(&app, &player, "race", json!({"score": 5, "subscores": [max, 0]})).await;
    assert_eq!(better["improved"], false, "an equal post changes nothing");
    let page = app.ranking("race", "").await;
    assert_eq!(page["entries"][0]["subscores"], json!([max, 0]));
    let (_, history) = app.get_json(&format!("/api/users/{}/scores?board=race", player.id)).await;
    let shown: Vec<&Value> = history["scores"].as_array().unwrap().iter().map(|s| &s["subscores"]).collect();
    assert_eq!(shown, [&json!([max, 0]), &json!([max, 1]), &json!([max, 0])]);
    // Boards without subscores show none on entries and posts.
    let plain_page = app.ranking("plain", "").await;
    assert!(plain_page["entries"][0].get("subscores").is_none(), "{plain_page}");
    let best = app.ranking("best", "").await;
    assert!(best["entries"].as_array().unwrap().iter().all(|e| e.get("subscores").is_none()));
    // An idempotency key binds the subscores too.
    let body = json!({"score": 7, "subscores": [1, 2]});
    let (status, _) = app.post_board_score_raw(&player.token, "race", &body, Some("sub-key")).await;
    assert_eq!(status, StatusCode::CREATED);
    let other = json!({"score": 7, "subscores": [1, 3]});
    let (status, body) = app.post_board_score_raw(&player.token, "race", &other, Some("sub-key")).await;
    assert_error(status, &body, 422, "idempotency_key_reused");
}

/// A player's entry in the model: score, subscores.
type Points = (i64, [i64; 2]);

/// A board's rules as the model applies them.
struct ModelBoard {
    id: &'static str,
    order: i64,
    orders: [i64; 2],
    latest: bool,
}

impl ModelBoard {
    /// Board order of (score, subscores): better first.
    fn compare(&self, a: &Points, b: &Points) -> Ordering {
        (self.order * b.0)
            .cmp(&(self.order * a.0))
            .then((self.orders[0] * b.1[0]).cmp(&(self.orders[0] * a.1[0])))
            .then((self.orders[1] * b.1[1]).cmp(&(self.orders[1] * a.1[1])))
    }

    /// Each player's entry after these posts (in post order), with the
    /// index of the post that set it.
    fn entries(&self, posts: &[(i64, Points)]) -> HashMap<i64, (Points, usize)> {
        let mut entries: HashMap<i64, (Points, usize)> = HashMap::new();
        for (index, (player, points)) in posts.iter().enumerate() {
            let keep = entries.get(player).is_some_and(|(old, _)| {
                if self.latest {
                    old == points
                } else {
                    self.compare(points, old) != Ordering::Less
                }
            });
            if !keep {
                entries.insert(*player, (*points, index));
            }
        }
        entries
    }
}

fn points_of(entry: &Value) -> Points {
    let subscores = entry["subscores"].as_array().expect("an entry of a subscore board shows them");
    (entry["score"].as_i64().unwrap(), [subscores[0].as_i64().unwrap(), subscores[1].as_i64().unwrap()])
}

/// Checks one board's whole page (its entries in order) against the
/// model: the same entries, in board order (ties of score and subscores
/// by time, then id), competition ranks over (score, subscores).
fn check_page(model: &ModelBoard, expected: &HashMap<i64, (Points, usize)>, entries: &[Value], context: &str) {
    let shown: HashMap<i64, Points> =
        entries.iter().map(|e| (e["user"]["id"].as_i64().unwrap(), points_of(e))).collect();
    let wanted: HashMap<i64, Points> = expected.iter().map(|(id, (points, _))| (*id, *points)).collect();
    assert_eq!(shown, wanted, "{context}: the entries");
    assert_eq!(shown.len(), entries.len(), "{context}: nobody twice");
    for pair in entries.windows(2) {
        let (a, b) = (points_of(&pair[0]), points_of(&pair[1]));
        let key = |e: &Value| (e["achieved_at"].as_str().unwrap().to_owned(), e["user"]["id"].as_i64().unwrap());
        let order = model.compare(&a, &b).then_with(|| key(&pair[0]).cmp(&key(&pair[1])));
        assert_eq!(order, Ordering::Less, "{context}: {} before {}", pair[0], pair[1]);
    }
    for (position, entry) in entries.iter().enumerate() {
        let points = points_of(entry);
        let better = entries.iter().filter(|e| model.compare(&points_of(e), &points) == Ordering::Less).count();
        assert_eq!(entry["rank"], better as i64 + 1, "{context}: rank at {position}");
    }
}

/// Random posts with ties on the score and on each subscore to a `best`
/// board (score desc, then kills desc, then time asc) and a `latest`
/// board (score asc, then two subscores desc), over two instances where
/// Redis shares the boards, with posts removed by an operator and players
/// banned (one let back): every read answers the model's board; an ended
/// period's final standings too.
async fn subscore_boards_rank_by_the_full_key_on_every_read(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let boards = [
        ModelBoard { id: "race", order: 1, orders: [1, -1], latest: false },
        ModelBoard { id: "golf", order: -1, orders: [1, 1], latest: true },
    ];
    app.create_board(&board_definition(
        "race",
        json!({"subscores": [{"name": "kills", "order": "desc"}, {"name": "time", "order": "asc"}]}),
    ))
    .await;
    app.create_board(&board_definition(
        "golf",
        json!({"order": "asc", "operator": "latest",
               "subscores": [{"name": "birdies", "order": "desc"}, {"name": "putts", "order": "desc"}]}),
    ))
    .await;
    let mut players = Vec::new();
    for i in 0..24 {
        players.push(app.register(&format!("sub{i}")).await);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(model_seed(40));
    let mut posts: HashMap<&str, Vec<(i64, Points, i64)>> = HashMap::new();
    for turn in 0..160 {
        let player = &players[rng.gen_range(0..players.len())];
        let model = &boards[turn % 2];
        let points = (rng.gen_range(1..4) * 10, [rng.gen_range(0..3), rng.gen_range(5..8)]);
        let body = json!({"score": points.0, "subscores": points.1});
        let target = &apps[turn % apps.len()];
        let (status, posted) = post(target, player, model.id, body).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        posts.entry(model.id).or_default().push((player.id, points, posted["score"]["id"].as_i64().unwrap()));
        // The answer's rank is the rank of the entry on the board now.
        let entry = &posted["entry"];
        let page = target.ranking(model.id, "limit=100").await;
        let found = page["entries"].as_array().unwrap().iter().find(|e| e["user"]["id"] == player.id).unwrap();
        assert_eq!(
            found["rank"], entry["rank"],
            "the post's answer ranks as the board does: turn {turn} {posted} {page}"
        );
    }
    // An operator removes some posts: the entries are recounted from the rest.
    for model in &boards {
        let board_posts = posts.get_mut(model.id).unwrap();
        let removed: Vec<i64> = board_posts.iter().step_by(7).map(|(_, _, id)| *id).collect();
        for id in &removed {
            let (status, body) =
                app.admin(Method::DELETE, &format!("/api/admin/boards/{}/scores/{id}", model.id), None).await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        }
        board_posts.retain(|(_, _, id)| !removed.contains(id));
    }
    // Three players banned (off every board), one of them let back.
    for player in &players[3..6] {
        let path = format!("/api/admin/users/{}/ban", player.id);
        let (status, body) = app.admin(Method::POST, &path, Some(&json!({"reason": "subscores test"}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/users/{}/ban", players[4].id), None).await;
    assert!(status.is_success(), "{body}");
    let banned = [players[3].id, players[5].id];
    tokio::time::sleep(Duration::from_millis(300)).await;

    for model in &boards {
        let model_posts: Vec<(i64, Points)> =
            posts[model.id].iter().map(|(player, points, _)| (*player, *points)).collect();
        let mut expected = model.entries(&model_posts);
        expected.retain(|player, _| !banned.contains(player));
        for (n, target) in apps.iter().enumerate() {
            let context = format!("{} on instance {n}", model.id);
            let page = target.ranking(model.id, "limit=100").await;
            let whole = page["entries"].as_array().unwrap().clone();
            check_page(model, &expected, &whole, &context);
            assert_eq!(page["total_players"], expected.len());

            // A cursor walk, three at a time, and offsets.
            let mut walked = Vec::new();
            let mut query = "limit=3".to_owned();
            loop {
                let page = target.ranking(model.id, &query).await;
                walked.extend(page["entries"].as_array().unwrap().iter().cloned());
                let Some(cursor) = page["next_cursor"].as_str() else { break };
                query = format!("limit=3&cursor={cursor}");
            }
            assert_eq!(walked, whole, "{context}: a cursor walk");
            let deep = target.ranking(model.id, "limit=4&offset=9").await;
            assert_eq!(deep["entries"].as_array().unwrap()[..], whole[9..13], "{context}: by offset");

            // Around a player, friends, each player's own entry.
            for entry in whole.iter().step_by(5) {
                let id = entry["user"]["id"].as_i64().unwrap();
                let (status, around) =
                    target.get_json(&format!("/api/rankings/{}/around/{id}?radius=2", model.id)).await;
                assert_eq!(status, StatusCode::OK, "{around}");
                let at = whole.iter().position(|e| e["user"]["id"] == id).unwrap();
                let window = &whole[at.saturating_sub(2)..(at + 3).min(whole.len())];
                assert_eq!(around["entries"].as_array().unwrap()[..], window[..], "{context}: around {id}");
            }
            let friends: Vec<String> = whole.iter().step_by(3).map(|e| e["user"]["id"].to_string()).collect();
            let (status, listed) =
                target.get_json(&format!("/api/rankings/{}/users?ids={}", model.id, friends.join(","))).await;
            assert_eq!(status, StatusCode::OK, "{listed}");
            let expected_friends: Vec<&Value> = whole.iter().step_by(3).collect();
            let listed: Vec<&Value> = listed["entries"].as_array().unwrap().iter().collect();
            assert_eq!(listed, expected_friends, "{context}: friends");

            // Cut-offs are the entries at their positions.
            let (status, cutoffs) =
                target.get_json(&format!("/api/rankings/{}/cutoffs?percents=10,50,100", model.id)).await;
            assert_eq!(status, StatusCode::OK, "{cutoffs}");
            for cutoff in cutoffs["cutoffs"].as_array().unwrap() {
                let position = cutoff["position"].as_u64().unwrap() as usize;
                let entry = &whole[position - 1];
                assert_eq!(cutoff["rank"], entry["rank"], "{context}: {cutoff}");
                assert_eq!(cutoff["subscores"], entry["subscores"], "{context}: {cutoff}");
            }
        }
    }

    // An ended period's final standings rank by the full key too: a board
    // that resets every second, posts kept inside one period.
    for attempt in 0..10 {
        let id = format!("tick{attempt}");
        app.create_board(&board_definition(
            &id,
            json!({"reset": "* * * * * *", "archive_periods": 100,
                   "subscores": [{"name": "kills", "order": "desc"}, {"name": "time", "order": "asc"}]}),
        ))
        .await;
        let scores = [(30, [1, 5]), (30, [2, 9]), (30, [1, 5]), (20, [9, 1]), (30, [1, 4]), (30, [2, 9])];
        let mut periods = Vec::new();
        for (player, (score, subscores)) in players[6..].iter().zip(scores) {
            let (status, posted) = post(app, player, &id, json!({"score": score, "subscores": subscores})).await;
            assert_eq!(status, StatusCode::CREATED, "{posted}");
            periods.push(posted["period"]["index"].as_i64().unwrap());
        }
        if periods.windows(2).any(|w| w[0] != w[1]) {
            continue;
        }
        let model = ModelBoard { id: "tick", order: 1, orders: [1, -1], latest: false };
        let posted: Vec<(i64, Points)> =
            players[6..].iter().zip(scores).map(|(p, (s, subs))| (p.id, (s, subs))).collect();
        let expected = model.entries(&posted);
        let period = periods[0];
        let pool = db.connect().await;
        settle(&pool, &id, period).await;
        let page = app.ranking(&id, &format!("period={period}&limit=100")).await;
        let ranks: Vec<i64> = page["entries"].as_array().unwrap().iter().map(|e| e["rank"].as_i64().unwrap()).collect();
        assert_eq!(ranks, [1, 1, 3, 4, 4, 6], "{page}");
        check_page(&model, &expected, page["entries"].as_array().unwrap(), "an ended period");
        return;
    }
    panic!("no run of posts stayed inside one period");
}
