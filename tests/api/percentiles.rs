//! `top_percent` on every ranked entry and `/cutoffs`, against a model that
//! recounts the board from the accepted posts: ties on score everywhere,
//! reads spread over two instances where Redis lets them share the boards.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, model_seed, spawn_app_on, spawn_instances, Backend, Player, TestApp, TestDatabase, ADMIN,
};

backend_tests!(
    every_ranked_entry_carries_its_top_percent_and_cutoffs_agree,
    cohort_entries_take_the_cohort_as_population,
    cutoff_requests_are_validated
);

/// `ceil(10000 × rank ÷ players)` hundredths, as the JSON number the
/// contract writes (an integer when whole).
fn top_percent(rank: i64, players: i64) -> Value {
    let hundredths = (10_000 * rank + players - 1) / players;
    if hundredths % 100 == 0 {
        json!(hundredths / 100)
    } else {
        json!(hundredths as f64 / 100.0)
    }
}

/// Every entry of a RankingPage-shaped body has the `top_percent` of its
/// rank among `players`.
fn assert_entries_percent(body: &Value, players: i64) {
    for entry in body["entries"].as_array().unwrap() {
        let rank = entry["rank"].as_i64().unwrap();
        assert_eq!(entry["top_percent"], top_percent(rank, players), "{entry} of {players}");
    }
}

/// A desc board's scores, one per player: each entry's competition rank.
#[derive(Default)]
struct Model {
    scores: HashMap<i64, i64>,
}

impl Model {
    fn post_best(&mut self, user_id: i64, score: i64) {
        let entry = self.scores.entry(user_id).or_insert(score);
        *entry = (*entry).max(score);
    }

    fn players(&self) -> i64 {
        self.scores.len() as i64
    }

    fn rank(&self, user_id: i64) -> i64 {
        let score = self.scores[&user_id];
        1 + self.scores.values().filter(|other| **other > score).count() as i64
    }

    /// The scores in board order.
    fn sorted(&self) -> Vec<i64> {
        let mut scores: Vec<i64> = self.scores.values().copied().collect();
        scores.sort_unstable_by(|a, b| b.cmp(a));
        scores
    }
}

async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &["--admin-token", ADMIN]).await
}

/// 21 players post scores of 0..6 (many ties) to a custom board and the
/// built-in boards; every post's answer, page, window, friends board,
/// `/me`, `/users/{id}/boards` item and cut-off is checked against the
/// model.
async fn every_ranked_entry_carries_its_top_percent_and_cutoffs_agree(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    app.create_board(&json!({"id": "pct", "name": "Percent", "order": "desc", "operator": "best"})).await;
    let mut players: Vec<Player> = Vec::new();
    for i in 0..21 {
        players.push(app.register(&format!("pct{i}")).await);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(model_seed(40));
    let (mut custom, mut best) = (Model::default(), Model::default());
    for round in 0..40 {
        let player = &players[rng.gen_range(0..players.len())];
        let score = rng.gen_range(0..6);
        let poster = &apps[round % apps.len()];
        let answer = poster.post_board_score(player, "pct", score).await;
        custom.post_best(player.id, score);
        let entry = &answer["entry"];
        assert_eq!(entry["rank"], custom.rank(player.id), "{answer}");
        assert_eq!(entry["top_percent"], top_percent(custom.rank(player.id), custom.players()), "{answer}");
        poster.post_score(player, score * 10).await;
        best.post_best(player.id, score * 10);
    }
    // The rest post once each, so every player is on every board.
    for (i, player) in players.iter().enumerate() {
        if !custom.scores.contains_key(&player.id) {
            let answer = apps[i % apps.len()].post_board_score(player, "pct", 0).await;
            custom.post_best(player.id, 0);
            assert_eq!(answer["entry"]["top_percent"], top_percent(custom.rank(player.id), custom.players()));
        }
        if !best.scores.contains_key(&player.id) {
            app.post_score(player, 0).await;
            best.post_best(player.id, 0);
        }
    }

    for (board, model) in [("pct", &custom), ("best", &best)] {
        let players_now = model.players();
        for reader in &apps {
            // Whole pages, and the window around the first player.
            let mut ranks = Vec::new();
            let mut offset = 0;
            loop {
                let page = reader.ranking(board, &format!("limit=4&offset={offset}")).await;
                assert_eq!(page["total_players"], players_now);
                assert_entries_percent(&page, players_now);
                ranks.extend(page["entries"].as_array().unwrap().iter().map(|e| e["rank"].as_i64().unwrap()));
                match page["next_offset"].as_i64() {
                    Some(next) => offset = next,
                    None => break,
                }
            }
            let expected: Vec<i64> = players.iter().map(|p| model.rank(p.id)).collect();
            let (mut got, mut want) = (ranks, expected);
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{board}");
            let (_, around) =
                reader.get_json(&format!("/api/rankings/{board}/around/{}?radius=3", players[0].id)).await;
            assert!(around["entries"].as_array().unwrap().iter().any(|e| e["user"]["id"] == players[0].id), "{around}");
            assert_entries_percent(&around, players_now);
            let ids: Vec<String> = players.iter().take(5).map(|p| p.id.to_string()).collect();
            let (_, friends) = reader.get_json(&format!("/api/rankings/{board}/users?ids={}", ids.join(","))).await;
            assert_eq!(friends["entries"].as_array().unwrap().len(), 5);
            assert_entries_percent(&friends, players_now);
        }
    }
    // The text itself: two decimals at most, a whole number without any.
    let leader = players.iter().find(|p| custom.rank(p.id) == 1).unwrap();
    let text = app.get(&format!("/api/rankings/pct/around/{}?radius=0", leader.id)).await.text().await.unwrap();
    let first = (10_000 + 20) / 21;
    assert!(text.contains(&format!("\"top_percent\":{}.{}", first / 100, first % 100)), "{text}");
    let last = players.iter().max_by_key(|p| custom.rank(p.id)).unwrap();
    let (_, window) = app.get_json(&format!("/api/rankings/pct/around/{}?radius=0", last.id)).await;
    if custom.rank(last.id) == 21 {
        assert_eq!(window["entries"][0]["top_percent"], json!(100));
    }

    // A player's own views of their entries.
    let player = &players[3];
    let (status, standing) = app.get_authed("/api/boards/pct/me", &player.token).await;
    assert_eq!(status, StatusCode::OK, "{standing}");
    assert_eq!(standing["entry"]["top_percent"], top_percent(custom.rank(player.id), custom.players()));
    let (status, boards) = app.get_json(&format!("/api/users/{}/boards", player.id)).await;
    assert_eq!(status, StatusCode::OK, "{boards}");
    let item =
        |board: &str| boards["entries"].as_array().unwrap().iter().find(|e| e["board"] == board).unwrap().clone();
    assert_eq!(item("pct")["top_percent"], top_percent(custom.rank(player.id), custom.players()));
    assert_eq!(item("best")["top_percent"], top_percent(best.rank(player.id), best.players()));
    assert_eq!(item("total")["top_percent"], top_percent(item("total")["rank"].as_i64().unwrap(), best.players()));

    // Cut-offs: the entry at floor(players × percent ÷ 100), in the order asked.
    for (board, model) in [("pct", &custom), ("best", &best)] {
        let sorted = model.sorted();
        let asked = ["50", "0.01", "1", "4.77", "4.76", "10", "33.33", "99.99", "100"];
        for reader in &apps {
            let (status, body) =
                reader.get_json(&format!("/api/rankings/{board}/cutoffs?percents={}", asked.join(","))).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["board"], board);
            assert_eq!(body["players"], model.players());
            assert!(body["partition"].is_null() && body["period"]["index"].is_i64());
            let cutoffs = body["cutoffs"].as_array().unwrap();
            assert_eq!(cutoffs.len(), asked.len());
            for (cutoff, percent) in cutoffs.iter().zip(asked) {
                let hundredths = (percent.parse::<f64>().unwrap() * 100.0).round() as i64;
                assert_eq!(cutoff["percent"], top_percent(hundredths, 10_000), "{cutoff}");
                let position = model.players() * hundredths / 10_000;
                assert_eq!(cutoff["position"], position, "{cutoff}");
                if position == 0 {
                    assert!(cutoff["rank"].is_null() && cutoff["score"].is_null(), "{cutoff}");
                } else {
                    let score = sorted[position as usize - 1];
                    let rank = 1 + sorted.iter().filter(|s| **s > score).count() as i64;
                    assert_eq!((cutoff["rank"].as_i64(), cutoff["score"].as_i64()), (Some(rank), Some(score)));
                    // The entry at a cut-off is inside it.
                    let percent_of_rank = top_percent(rank, model.players()).as_f64().unwrap();
                    assert!(percent_of_rank <= percent.parse::<f64>().unwrap(), "{cutoff}");
                }
                assert!(cutoff["subscores"].is_null());
            }
        }
    }
    let (status, body) = app.get_json("/api/rankings/pct/cutoffs?percents=10&period=0").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["players"], custom.players());
}

/// League answers rank within the cohort: `top_percent` is taken among the
/// cohort's entries, in the post's answer, the cohort page and the member read.
async fn cohort_entries_take_the_cohort_as_population(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let definition = json!({"id": "pctl", "name": "Percent league", "tiers": ["Low", "High"],
        "cohort_size": 3, "promote": 1, "demote": 1, "operator": "best", "reset": "0 0 * * *"});
    let (status, league) = app.admin(Method::POST, "/api/admin/leagues", Some(&definition)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    let mut answers = Vec::new();
    for (i, score) in [30, 20, 20, 50, 40].into_iter().enumerate() {
        let player = app.register(&format!("pctl{i}")).await;
        let url = app.url("/api/leagues/pctl/scores");
        let response = app.client.post(url).bearer_auth(&player.token).json(&json!({"score": score})).send().await;
        let answer: Value = response.unwrap().json().await.unwrap();
        answers.push((player, answer));
    }
    // The first cohort holds 30, 20, 20: the third post ranks 2nd of 3.
    assert_eq!(answers[2].1["entry"]["rank"], 2, "{}", answers[2].1);
    assert_eq!(answers[2].1["entry"]["top_percent"], top_percent(2, 3));
    // The second holds 50, 40: the 40 ranks 2nd of 2 → 100.
    assert_eq!(answers[4].1["entry"]["top_percent"], json!(100), "{}", answers[4].1);
    for (player, answer) in &answers {
        let cohort = answer["cohort"].as_str().unwrap();
        let (status, page) = app.get_json(&format!("/api/leagues/pctl/cohorts/{cohort}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_entries_percent(&page, page["total_players"].as_i64().unwrap());
        let (_, member) = app.get_json(&format!("/api/leagues/pctl/members/{}", player.id)).await;
        let rank = member["entry"]["rank"].as_i64().unwrap();
        assert_eq!(member["entry"]["top_percent"], top_percent(rank, page["total_players"].as_i64().unwrap()));
    }
}

async fn cutoff_requests_are_validated(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    for bad in ["", "0", "100.01", "101", "1.234", "-1", "a", "1,,2", "1,2,3,4,5,6,7,8,9,10,11", "1e1", "5."] {
        let (status, body) = app.get_json(&format!("/api/rankings/best/cutoffs?percents={bad}")).await;
        assert_error(status, &body, 422, "invalid_percents");
    }
    let (status, body) = app.get_json("/api/rankings/best/cutoffs").await;
    assert_error(status, &body, 422, "invalid_percents");
    let (status, body) = app.get_json("/api/rankings/nope/cutoffs?percents=1").await;
    assert_error(status, &body, 404, "board_not_found");
    let (status, body) = app.get_json("/api/rankings/best/cutoffs?percents=1&period=x").await;
    assert_error(status, &body, 400, "invalid_period");
    let (status, body) = app.get_json("/api/rankings/best/cutoffs?percents=1&colour=red").await;
    assert_error(status, &body, 400, "invalid_query");
    // An empty board: every position is 0.
    let (status, body) = app.get_json("/api/rankings/best/cutoffs?percents=100,1").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["players"], 0);
    assert_eq!(
        body["cutoffs"],
        json!([{"percent": 100, "position": 0, "rank": null, "score": null, "subscores": null},
               {"percent": 1, "position": 0, "rank": null, "score": null, "subscores": null}])
    );
    // A post shows in the next list: no answer is served past a change.
    let player = app.register("cutoff1").await;
    app.post_score(&player, 70).await;
    let (_, body) = app.get_json("/api/rankings/best/cutoffs?percents=100,1").await;
    assert_eq!(body["players"], 1);
    assert_eq!(body["cutoffs"][0], json!({"percent": 100, "position": 1, "rank": 1, "score": 70, "subscores": null}));
}
