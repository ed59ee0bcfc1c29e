//! One post, many boards (v4 `feeds`): every fed board against a model
//! that recounts it from the accepted posts, with holds that follow their
//! original, deletions that take the fed posts along, a fed board that
//! resets every second, one idempotency key for the whole family, and
//! reads spread over two instances where Redis lets them share the boards.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, board_definition, model_seed, spawn_app_on, spawn_instances, Backend, Player, TestApp, TestDatabase,
    ADMIN,
};

backend_tests!(feeds_are_validated_and_shown, every_fed_board_matches_its_model, held_fed_posts_are_review_items_once);

async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &["--admin-token", ADMIN]).await
}

/// Every rule of `invalid_feeds`, at creation and by `PATCH`, on custom
/// and built-in boards; the Board object shows the ids, and a deleted
/// board leaves every `feeds`.
async fn feeds_are_validated_and_shown(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    for id in ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11"] {
        app.create_board(&board_definition(id, json!({}))).await;
    }
    let (status, league) = app
        .admin(
            Method::POST,
            "/api/admin/leagues",
            Some(&json!({"id": "lg", "name": "L", "tiers": ["A", "B"], "cohort_size": 3, "promote": 1,
                "demote": 1, "operator": "best", "reset": "0 0 * * *"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    assert_eq!(league["rewards"], json!([]));
    // PATCH of a league (v4) renames it; its ladder is fixed (rewards: see rewards.rs).
    let (status, renamed) = app.admin(Method::PATCH, "/api/admin/leagues/lg", Some(&json!({"name": "Ladder"}))).await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(renamed["name"], "Ladder");
    let (_, read) = app.get_json("/api/leagues/lg").await;
    assert_eq!(read["name"], "Ladder");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/leagues/lg", Some(&json!({"tiers": ["X", "Y"]}))).await;
    assert_error(status, &body, 422, "invalid_tiers");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/leagues/nope", Some(&json!({"name": "N"}))).await;
    assert_error(status, &body, 404, "league_not_found");
    let eleven: Vec<String> = (1..=11).map(|i| format!("t{i}")).collect();
    for feeds in [
        json!(["nope"]),
        json!(["best"]),
        json!(["lg"]),
        json!(["t1", "t1"]),
        json!(eleven),
        json!("t1"),
        json!([1]),
        json!(["src"]),
    ] {
        let (status, body) =
            app.admin(Method::POST, "/api/admin/boards", Some(&board_definition("src", json!({"feeds": feeds})))).await;
        assert_error(status, &body, 422, "invalid_feeds");
    }
    let created = app.create_board(&board_definition("src", json!({"feeds": ["t1", "t2"]}))).await;
    assert_eq!(created["feeds"], json!(["t1", "t2"]));
    let (_, plain) = app.get_json("/api/boards/t3").await;
    assert_eq!(plain["feeds"], json!([]));
    // The v4 fields show their defaults; those fixed at creation are
    // refused by PATCH, and partitions' limits need `partition_by`.
    assert_eq!(plain["subscores"], json!([]));
    assert_eq!(plain["rewards"], json!([]));
    assert_eq!(plain["max_partitions"], 1000);
    assert!(plain["partition_by"].is_null() && plain["partition_values"].is_null(), "{plain}");
    let (status, body) = app
        .admin(Method::PATCH, "/api/admin/boards/t3", Some(&json!({"subscores": [{"name": "t", "order": "asc"}]})))
        .await;
    assert_error(status, &body, 422, "invalid_subscores");
    for (field, value) in
        [("partition_by", json!("country")), ("max_partitions", json!(10)), ("partition_values", json!(["FR"]))]
    {
        if field != "partition_by" {
            let definition = board_definition("later", json!({field: value}));
            let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&definition)).await;
            assert_error(status, &body, 422, &format!("invalid_{field}"));
        }
        let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/t3", Some(&json!({field: value}))).await;
        assert_error(status, &body, 422, &format!("invalid_{field}"));
    }
    app.create_board(&board_definition("later", json!({"subscores": [], "rewards": [], "partition_by": null}))).await;
    // v4: a PATCH naming a field fixed at creation is refused, not ignored.
    for (field, value) in [("order", json!("asc")), ("reset", json!("0 0 * * *")), ("max_score", json!(5))] {
        let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/t3", Some(&json!({field: value}))).await;
        assert_error(status, &body, 422, &format!("invalid_{field}"));
    }
    // A board with feeds is fed by none, and a fed board feeds none.
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/t3", Some(&json!({"feeds": ["src"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/t1", Some(&json!({"feeds": ["t3"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/src", Some(&json!({"feeds": ["src"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    // PATCH replaces the list; a refused PATCH changes nothing.
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/src", Some(&json!({"feeds": ["t3", "t1"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["feeds"], json!(["t3", "t1"]));
    // The built-ins: `best` and `total` together feed at most 10 boards.
    let (status, body) = app
        .admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"feeds": ["t4", "t5", "t6", "t7", "t8", "t9"]})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["feeds"], json!(["t4", "t5", "t6", "t7", "t8", "t9"]));
    let (status, body) = app
        .admin(Method::PATCH, "/api/admin/boards/total", Some(&json!({"feeds": ["t10", "t11", "t2", "t1", "t3"]})))
        .await;
    assert_error(status, &body, 422, "invalid_feeds");
    let (status, body) =
        app.admin(Method::PATCH, "/api/admin/boards/total", Some(&json!({"feeds": ["t4", "t10", "t11"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/total", Some(&json!({"feeds": ["src"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    // A board the built-ins feed takes no feeds of its own.
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/t4", Some(&json!({"feeds": ["t2"]}))).await;
    assert_error(status, &body, 422, "invalid_feeds");
    // Deleting a fed board removes it from every list.
    let (status, _) = app.admin(Method::DELETE, "/api/admin/boards/t1", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, src) = app.get_json("/api/boards/src").await;
    assert_eq!(src["feeds"], json!(["t3"]));
    let (status, body) = app.admin(Method::DELETE, "/api/admin/boards/t10", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, list) = app.get_json("/api/boards").await;
    let total = list["boards"].as_array().unwrap().iter().find(|b| b["id"] == "total").unwrap();
    assert_eq!(total["feeds"], json!(["t4", "t11"]));
    // Feeds survive a restart (they are read back from the catalog).
    let again = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let (_, src) = again.get_json("/api/boards/src").await;
    assert_eq!(src["feeds"], json!(["t3"]));
    let (_, best) = again.get_json("/api/boards/best").await;
    assert_eq!(best["feeds"], json!(["t4", "t5", "t6", "t7", "t8", "t9"]));
}

/// A post as the model keeps it: on which board, period and player, with
/// what score, and whether it counts (accepted) yet.
#[derive(Debug, Clone)]
struct ModelPost {
    board: String,
    period: i64,
    user: i64,
    score: i64,
    accepted: bool,
    /// The original: its board (`best` for `/api/scores`) and post id.
    via: Option<(String, i64)>,
    id: i64,
}

#[derive(Default)]
struct Model {
    posts: Vec<ModelPost>,
}

impl Model {
    /// Each player's entry on a board's period, by the board's operator.
    fn entries(&self, board: &str, period: i64, total: bool) -> HashMap<i64, i64> {
        let mut entries: HashMap<i64, i64> = HashMap::new();
        for post in self.posts.iter().filter(|p| p.accepted && p.board == board && p.period == period) {
            let entry = entries.entry(post.user).or_insert(if total { 0 } else { post.score });
            *entry = if total { *entry + post.score } else { (*entry).max(post.score) };
        }
        entries
    }

    fn rank(entries: &HashMap<i64, i64>, user: i64) -> i64 {
        1 + entries.values().filter(|score| **score > entries[&user]).count() as i64
    }

    /// A post and every post it fed.
    fn family(&mut self, board: &str, id: i64) -> impl Iterator<Item = &mut ModelPost> {
        let board = board.to_owned();
        self.posts.iter_mut().filter(move |post| {
            (post.board == board && post.id == id) || post.via.as_ref().is_some_and(|(b, i)| *b == board && *i == id)
        })
    }
}

/// Records a post's answer (201 or 202) and each of its `feeds` items in
/// the model, checking the items against the board's `feeds` order and
/// rules: `fw` takes scores up to 4 only; a held original holds the rest.
fn record(model: &mut Model, origin: &str, user: i64, score: i64, answer: &Value, feeds: &[&str]) {
    let held = answer["score"]["status"] == "held";
    let id = answer["score"]["id"].as_i64().unwrap();
    if origin != "best" {
        let period = answer["period"]["index"].as_i64().unwrap();
        model.posts.push(ModelPost { board: origin.into(), period, user, score, accepted: !held, via: None, id });
    }
    let items = answer["feeds"].as_array().unwrap_or_else(|| panic!("no feeds: {answer}"));
    let boards: Vec<&str> = items.iter().map(|item| item["board"].as_str().unwrap()).collect();
    assert_eq!(boards, feeds, "{answer}");
    for item in items {
        let board = item["board"].as_str().unwrap();
        if board == "fw" && score > 4 {
            assert_eq!(item["status"], "skipped", "{item}");
            assert_eq!(item["reason"], "invalid_score", "{item}");
            assert!(item["score_id"].is_null() && item["entry"].is_null() && item["period"].is_null(), "{item}");
            assert_eq!(item["improved"], false);
            continue;
        }
        assert_eq!(item["status"], if held { "held" } else { "accepted" }, "{item}");
        assert!(item["reason"].is_null() && item["partition"].is_null(), "{item}");
        if held {
            assert_eq!(item["improved"], false, "{item}");
        }
        // The fed post lands in the period in force at the original's time.
        let created = answer["score"]["created_at"].as_str().unwrap();
        let period = &item["period"];
        assert!(period["start"].as_str().is_none_or(|start| start <= created), "{item} at {created}");
        assert!(period["end"].as_str().is_none_or(|end| created < end), "{item} at {created}");
        model.posts.push(ModelPost {
            board: board.into(),
            period: period["index"].as_i64().unwrap(),
            user,
            score,
            accepted: !held,
            via: Some((origin.into(), id)),
            id: item["score_id"].as_i64().unwrap(),
        });
    }
}

/// Six players post 0..10 to `fm` (feeding `fd`, which resets every
/// second, and `fw`, which takes 0..4) and to `/api/scores` (`best`
/// feeding `ft`, a `total` board); `fm` holds scores above 8. Holds are
/// decided, originals deleted, a key replayed; then every period of
/// every board is read on every instance against the model's recount,
/// with each player's entry rank checked too, and the fed histories name
/// their originals.
async fn every_fed_board_matches_its_model(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    app.create_board(&board_definition("fd", json!({"reset": "* * * * * *", "archive_periods": 1000}))).await;
    app.create_board(&board_definition("fw", json!({"max_score": 4}))).await;
    app.create_board(&board_definition("ft", json!({"operator": "total"}))).await;
    app.create_board(&board_definition("fm", json!({"feeds": ["fd", "fw"], "hold_beyond": 8}))).await;
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"feeds": ["ft"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut players: Vec<Player> = Vec::new();
    for i in 0..6 {
        players.push(app.register(&format!("feed{i}")).await);
    }
    // Every instance reloads the catalog within a second of a change.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;

    let mut rng = ChaCha8Rng::seed_from_u64(model_seed(400));
    let mut model = Model::default();
    let mut held = Vec::new();
    let mut originals = Vec::new();
    for round in 0..48 {
        let player = &players[rng.gen_range(0..players.len())];
        let score = rng.gen_range(0..11);
        let poster = &apps[round % apps.len()];
        let to_builtin = rng.gen_bool(0.3);
        let body = json!({"score": score, "metadata": {"round": round}});
        let (status, answer) = if to_builtin {
            poster.post_score_raw(&player.token, &body, None).await
        } else {
            poster.post_board_score_raw(&player.token, "fm", &body, None).await
        };
        let (origin, feeds): (&str, &[&str]) = if to_builtin { ("best", &["ft"]) } else { ("fm", &["fd", "fw"]) };
        let expected = if !to_builtin && score > 8 { StatusCode::ACCEPTED } else { StatusCode::CREATED };
        assert_eq!(status, expected, "{answer}");
        record(&mut model, origin, player.id, score, &answer, feeds);
        let id = answer["score"]["id"].as_i64().unwrap();
        if status == StatusCode::ACCEPTED {
            held.push((origin, id));
        } else {
            originals.push((origin, id));
        }
        if round % 12 == 11 {
            tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        }
    }

    // One key for the whole family: a replay answers the first answer and
    // posts nothing again.
    let player = &players[0];
    let body = json!({"score": 3, "metadata": {"replayed": true}});
    let (status, first) = app.post_board_score_raw(&player.token, "fm", &body, Some("family-1")).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    record(&mut model, "fm", player.id, 3, &first, &["fd", "fw"]);
    let (status, again) = apps[apps.len() - 1].post_board_score_raw(&player.token, "fm", &body, Some("family-1")).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, first);

    // The review queue lists each held original once, with its fed boards;
    // the decision is theirs too.
    let (status, queue) = app.admin(Method::GET, "/api/admin/held?limit=100", None).await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    let listed = queue["held"].as_array().unwrap();
    assert_eq!(listed.len(), held.len(), "{queue}");
    assert!(listed.iter().all(|item| item["board"] == "fm" && item["feeds"] == json!(["fd"])), "{queue}");
    for (i, (origin, id)) in held.iter().enumerate() {
        let decision = if i % 2 == 0 { "accept" } else { "reject" };
        let path = format!("/api/admin/held/{id}");
        let (status, body) =
            app.admin(Method::POST, &path, Some(&json!({"decision": decision, "board": origin}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // A rejected post stays in the histories and counts for nothing.
        let accepted = decision == "accept";
        for post in model.family(origin, *id) {
            post.accepted = accepted;
        }
    }
    // Deleting an original deletes the posts it fed.
    for (origin, id) in originals.iter().step_by(5) {
        let path = if *origin == "best" {
            format!("/api/admin/scores/{id}")
        } else {
            format!("/api/admin/boards/{origin}/scores/{id}")
        };
        let (status, body) = app.admin(Method::DELETE, &path, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let gone: Vec<(String, i64)> = model.family(origin, *id).map(|post| (post.board.clone(), post.id)).collect();
        model.posts.retain(|post| !gone.contains(&(post.board.clone(), post.id)));
    }

    // Every period of every board, on every instance.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut periods: Vec<(String, i64)> = model.posts.iter().map(|p| (p.board.clone(), p.period)).collect();
    periods.sort();
    periods.dedup();
    for reader in &apps {
        for (board, period) in &periods {
            let entries = model.entries(board, *period, board == "ft");
            let page = reader.ranking(board, &format!("period={period}&limit=100")).await;
            assert_eq!(page["total_players"], entries.len() as i64, "{board} {period}: {page}");
            let mut got: Vec<(i64, i64, i64)> = page["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["user"]["id"].as_i64().unwrap(), e["score"].as_i64().unwrap(), e["rank"].as_i64().unwrap()))
                .collect();
            got.sort_unstable();
            let mut want: Vec<(i64, i64, i64)> =
                entries.iter().map(|(user, score)| (*user, *score, Model::rank(&entries, *user))).collect();
            want.sort_unstable();
            assert_eq!(got, want, "{board} period {period}");
        }
    }
    // A fed post's history names its original's board.
    for player in &players {
        for (board, via) in [("fd", "fm"), ("ft", "best")] {
            let (status, history) =
                app.get_json(&format!("/api/users/{}/scores?board={board}&limit=100", player.id)).await;
            assert_eq!(status, StatusCode::OK, "{history}");
            let ours = model.posts.iter().filter(|p| p.board == board && p.user == player.id).count();
            let items = history["scores"].as_array().unwrap();
            assert_eq!(items.len(), ours, "{history}");
            assert!(items.iter().all(|item| item["via"] == via), "{history}");
        }
        let (_, direct) = app.get_json(&format!("/api/users/{}/scores?board=fm&limit=100", player.id)).await;
        assert!(direct["scores"].as_array().unwrap().iter().all(|item| item["via"].is_null()), "{direct}");
    }
}

/// A fed post held by its own board's rule is a review item of its own; one
/// held with its original is not (the original's decision is its): the
/// queue and `hiscore_reviews_total{outcome="held"}` count items, not posts.
async fn held_fed_posts_are_review_items_once(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    app.create_board(&board_definition("own", json!({"hold_beyond": 5}))).await;
    app.create_board(&board_definition("plain", json!({"feeds": ["own"]}))).await;
    app.create_board(&board_definition("holding", json!({"feeds": ["own"], "hold_beyond": 5}))).await;
    let player = app.register("heldfed").await;

    let (status, answer) = app.post_board_score_raw(&player.token, "plain", &json!({"score": 9}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["feeds"][0]["status"], "held", "{answer}");
    let (status, answer) = app.post_board_score_raw(&player.token, "holding", &json!({"score": 9}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["feeds"][0]["status"], "held", "{answer}");

    let (status, queue) = app.admin(Method::GET, "/api/admin/held?limit=100", None).await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    let mut items: Vec<(String, Value)> = queue["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["board"].as_str().unwrap().to_owned(), item["feeds"].clone()))
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(items, [("holding".to_owned(), json!(["own"])), ("own".to_owned(), json!([]))], "{queue}");
    assert_eq!(app.metric("hiscore_reviews_total{outcome=\"held\"}").await, 2.0);
}
