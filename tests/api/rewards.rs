//! Rewards (v4): bands validated and shown on boards and leagues, granted
//! once at the close (ties share a band, `top_percent` as the pages show
//! it, banned players left out), listed and claimed by the player and by
//! a game server, listed per period for operators, announced by
//! `reward.granted`, and a model of random posts, bans and closes over
//! two instances where Redis is shared.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use hiscore_bench::webhooks::Receiver;

use crate::backend_tests;
use crate::helpers::{
    assert_error, model_seed, spawn_app_on, spawn_instances, Backend, Player, TestApp, TestDatabase, ADMIN,
};

backend_tests!(
    bands_are_validated_shown_and_replaced,
    a_close_grants_each_player_one_reward_and_they_claim_it,
    random_closes_grant_what_a_model_of_the_posts_grants,
    a_close_at_the_maxima_grants_the_first_hundred_thousand,
);

/// Instances on one database: two where they share Redis (both close
/// periods), else one.
async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &["--admin-token", ADMIN, "--webhook-allow-private"]).await
}

async fn call(app: &TestApp, method: Method, path: &str, token: &str) -> (StatusCode, Value) {
    let response = app.client.request(method, app.url(path)).bearer_auth(token).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Waits until period `index` of `board` is closed (at most 15 s); then
/// its grants, every page.
async fn grants_of(app: &TestApp, db: &TestDatabase, board: &str, index: i64) -> Vec<Value> {
    let pool = db.connect().await;
    let started = Instant::now();
    loop {
        let closed: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT p.closed_at FROM board_periods p JOIN boards b ON b.number = p.board WHERE b.id = ? AND p.period = ?",
        )
        .bind(board)
        .bind(index)
        .fetch_optional(&pool)
        .await
        .unwrap();
        if closed.flatten().is_some() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "period {index} of {board} was not closed in time");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let mut grants = Vec::new();
    let mut after = 0;
    loop {
        let path = format!("/api/admin/boards/{board}/rewards?period={index}&limit=100&after={after}");
        let (status, page) = app.admin(Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        grants.extend(page["rewards"].as_array().unwrap().iter().cloned());
        match page["next_after"].as_i64() {
            Some(next) => after = next,
            None => return grants,
        }
    }
}

/// Waits, if need be, for a period of `board` with at least `room` left
/// before its end; its index.
async fn fresh_period(app: &TestApp, board: &str, room: Duration) -> i64 {
    loop {
        let (_, view) = app.get_json(&format!("/api/boards/{board}")).await;
        let end = hiscore::domain::Timestamp::parse_rfc3339(view["period"]["end"].as_str().unwrap()).unwrap().millis();
        let left = end - hiscore::domain::Timestamp::now().millis();
        if left > room.as_millis() as i64 {
            return view["period"]["index"].as_i64().unwrap();
        }
        actix_web::rt::time::sleep(Duration::from_millis(left.max(0) as u64 + 50)).await;
    }
}

async fn bands_are_validated_shown_and_replaced(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let board = |rewards: Value| json!({"id": "weekly", "name": "Weekly", "reset": "0 0 * * 1", "rewards": rewards});
    for refused in [
        json!({}),
        json!([{"ranks": [0, 3], "reward": {}}]),
        json!([{"ranks": [3, 1], "reward": {}}]),
        json!([{"ranks": [1, 10_001], "reward": {}}]),
        json!([{"top_percent": 0, "reward": {}}]),
        json!([{"top_percent": 100.5, "reward": {}}]),
        json!([{"top_percent": 2.555, "reward": {}}]),
        json!([{"ranks": [1, 1], "top_percent": 5, "reward": {}}]),
        json!([{"ranks": [1, 1]}]),
        json!([{"ranks": [1, 1], "reward": "gems"}]),
        json!([{"ranks": [1, 1], "reward": {"note": "x".repeat(1_100)}}]),
        Value::Array(vec![json!({"ranks": [1, 1], "reward": {}}); 21]),
    ] {
        let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&board(refused.clone()))).await;
        assert_error(status, &body, 422, "invalid_rewards");
    }
    let bands = json!([
        {"ranks": [1, 1], "reward": {"gems": 500, "title": "Champion 🏆"}},
        {"top_percent": 2.5, "reward": {"gems": 100}},
        {"ranks": [2, 10_000], "reward": {}}
    ]);
    let created = app.create_board(&board(bands.clone())).await;
    assert_eq!(created["rewards"], bands, "{created}");
    let (_, shown) = app.get_json("/api/boards/weekly").await;
    assert_eq!(shown["rewards"], bands);
    let (_, best) = app.get_json("/api/boards/best").await;
    assert_eq!(best["rewards"], json!([]), "the built-ins show the default");

    // PATCH replaces the whole list (and keeps it when left out).
    let replaced = json!([{"top_percent": 10, "reward": {"chest": "gold"}}]);
    let (status, patched) =
        app.admin(Method::PATCH, "/api/admin/boards/weekly", Some(&json!({"rewards": replaced}))).await;
    assert_eq!((status, &patched["rewards"]), (StatusCode::OK, &replaced), "{patched}");
    let (status, renamed) = app.admin(Method::PATCH, "/api/admin/boards/weekly", Some(&json!({"name": "W"}))).await;
    assert_eq!((status, &renamed["rewards"]), (StatusCode::OK, &replaced), "{renamed}");
    let (status, body) =
        app.admin(Method::PATCH, "/api/admin/boards/weekly", Some(&json!({"rewards": [{"ranks": [1]}]}))).await;
    assert_error(status, &body, 422, "invalid_rewards");
    let (status, body) = app.admin(Method::PATCH, "/api/admin/boards/best", Some(&json!({"rewards": []}))).await;
    assert!(status.is_client_error(), "{status} {body}");

    // A definition may be larger than other bodies (20 bands of 1 KiB,
    // 10,000 partition values: up to 512 KiB),
    // but not without bound.
    let huge = json!([{"ranks": [1, 1], "reward": {"t": "x".repeat(600 * 1024)}}]);
    let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&board(huge))).await;
    assert_error(status, &body, 413, "payload_too_large");

    // A restarted service reads them back from the database.
    let other = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let (_, reloaded) = other.get_json("/api/boards/weekly").await;
    assert_eq!(reloaded["rewards"], replaced);

    // Leagues: at creation and by PATCH.
    let league = json!({"id": "ladder", "name": "Ladder", "tiers": ["B", "S"], "cohort_size": 10, "promote": 2,
        "demote": 2, "reset": "0 0 * * 1", "rewards": bands});
    let (status, created) = app.admin(Method::POST, "/api/admin/leagues", Some(&league)).await;
    assert_eq!((status, &created["rewards"]), (StatusCode::CREATED, &bands), "{created}");
    let (status, patched) =
        app.admin(Method::PATCH, "/api/admin/leagues/ladder", Some(&json!({"rewards": replaced}))).await;
    assert_eq!((status, &patched["rewards"]), (StatusCode::OK, &replaced), "{patched}");
    let (status, body) =
        app.admin(Method::PATCH, "/api/admin/leagues/ladder", Some(&json!({"rewards": [{"top_percent": -1}]}))).await;
    assert_error(status, &body, 422, "invalid_rewards");
}

/// Six players in one period of a board resetting every 3 s (scores 90,
/// 80, 80, 80, 50, 10; one banned before the close): bands `[1, 3]`
/// (the three tied 80s share rank 2 and the band) and `top_percent` 80
/// (rank 5 of 5 is 100 %, not in it). Each grant once, whichever instance
/// closes; the player lists, claims, server routes, operators' list and
/// `reward.granted` agree.
async fn a_close_grants_each_player_one_reward_and_they_claim_it(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let receiver = Receiver::start().await.unwrap();
    let (status, hook) = app
        .admin(Method::POST, "/api/admin/webhooks", Some(&json!({"url": receiver.url(), "events": ["reward.granted"]})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    receiver.set_secret(hook["secret"].as_str().unwrap());
    let bands = json!([
        {"ranks": [1, 3], "reward": {"gems": 100}},
        {"top_percent": 80, "reward": {"gems": 10}}
    ]);
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/3 * * * * *", "rewards": bands})).await;
    let names = ["ace", "bee", "cee", "dee", "eve", "fay"];
    let mut players: Vec<Player> = Vec::new();
    for name in names {
        players.push(app.register(name).await);
    }
    let period = fresh_period(app, "sprint", Duration::from_millis(2_000)).await;
    for (index, (player, score)) in players.iter().zip([90, 80, 80, 80, 50, 10]).enumerate() {
        let answer = apps[index % apps.len()].post_board_score(player, "sprint", score).await;
        assert_eq!(answer["period"]["index"], period, "{answer}");
    }
    let banned = &players[5];
    let (status, body) =
        app.admin(Method::POST, &format!("/api/admin/users/{}/ban", banned.id), Some(&json!({"reason": "test"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let grants = grants_of(app, &db, "sprint", period).await;
    let got: Vec<(i64, i64, Value)> = grants
        .iter()
        .map(|g| (g["user_id"].as_i64().unwrap(), g["rank"].as_i64().unwrap(), g["reward"].clone()))
        .collect();
    let ids: Vec<i64> = players.iter().map(|p| p.id).collect();
    // 5 players: ranks 1, 2, 2, 2, 5; rank 2 of 5 = 40 % (first band
    // wins anyway); rank 5 = 100 %: none.
    assert_eq!(
        got,
        [
            (ids[0], 1, json!({"gems": 100})),
            (ids[1], 2, json!({"gems": 100})),
            (ids[2], 2, json!({"gems": 100})),
            (ids[3], 2, json!({"gems": 100})),
        ],
        "{grants:?}"
    );
    assert_eq!(grants[0]["board"], "sprint");
    assert_eq!(grants[0]["period"]["index"], period);
    assert!(grants[0]["claimed_at"].is_null());

    // The player's own list, and claims.
    let ace = &players[0];
    let (status, mine) = call(app, Method::GET, "/api/me/rewards", &ace.token).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!(mine["rewards"].as_array().unwrap().len(), 1, "{mine}");
    let reward = mine["rewards"][0]["id"].as_i64().unwrap();
    let (status, claimed) =
        call(&apps[apps.len() - 1], Method::POST, &format!("/api/me/rewards/{reward}/claim"), &ace.token).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    let claimed_at = claimed["claimed_at"].clone();
    assert!(claimed_at.is_string(), "{claimed}");
    let (status, again) = call(app, Method::POST, &format!("/api/me/rewards/{reward}/claim"), &ace.token).await;
    assert_eq!((status, &again["claimed_at"]), (StatusCode::OK, &claimed_at), "a second claim keeps the first's time");
    let (status, body) = call(app, Method::POST, &format!("/api/me/rewards/{reward}/claim"), &players[1].token).await;
    assert_error(status, &body, 404, "reward_not_found");
    for (status_filter, count) in [("", 0), ("?status=claimed", 1), ("?status=all", 1)] {
        let (_, list) = call(app, Method::GET, &format!("/api/me/rewards{status_filter}"), &ace.token).await;
        assert_eq!(list["rewards"].as_array().unwrap().len(), count, "{status_filter}: {list}");
    }
    let (status, body) = call(app, Method::GET, "/api/me/rewards?status=old", &ace.token).await;
    assert_error(status, &body, 422, "invalid_status");
    let (status, body) = app.get_json("/api/me/rewards").await;
    assert_error(status, &body, 401, "session_required");

    // Game servers: a server key or the admin token; not a session, not
    // another role.
    let key = |role: &str| {
        let role = role.to_owned();
        async move {
            let (status, key) =
                app.admin(Method::POST, "/api/admin/keys", Some(&json!({"name": role, "role": role}))).await;
            assert_eq!(status, StatusCode::CREATED, "{key}");
            key["key"].as_str().unwrap().to_owned()
        }
    };
    let (server, viewer) = (key("server").await, key("viewer").await);
    let bee = &players[1];
    let path = format!("/api/users/{}/rewards", bee.id);
    let (status, list) = call(app, Method::GET, &path, &server).await;
    assert_eq!((status, list["rewards"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)), "{list}");
    let bee_reward = list["rewards"][0]["id"].as_i64().unwrap();
    let (status, body) = call(app, Method::GET, &path, &bee.token).await;
    assert_error(status, &body, 403, "server_only");
    let (status, body) = call(app, Method::GET, &path, &viewer).await;
    assert_error(status, &body, 403, "forbidden_for_role");
    let (status, body) = call(app, Method::GET, &path, "hsk_not_a_key_at_all").await;
    assert_error(status, &body, 401, "invalid_server_key");
    let (status, claimed) =
        call(app, Method::POST, &format!("/api/users/{}/rewards/{bee_reward}/claim", bee.id), ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    let (status, body) =
        call(app, Method::POST, &format!("/api/users/{}/rewards/{bee_reward}/claim", ace.id), &server).await;
    assert_error(status, &body, 404, "reward_not_found");

    // One `reward.granted` for the close, whichever instance made it.
    let started = Instant::now();
    let announced = loop {
        let announced: Vec<Value> = receiver
            .received()
            .iter()
            .filter(|r| r.event == "reward.granted" && r.json()["data"]["period"]["index"] == period)
            .map(|r| r.json()["data"].clone())
            .collect();
        if !announced.is_empty() || started.elapsed() > Duration::from_secs(15) {
            break announced;
        }
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(announced, [json!({"board": "sprint", "period": grants[0]["period"], "grants": 4})]);

    // The player's own export holds their rewards; erasure takes them.
    let dee = &players[3];
    let (status, exported) = call(app, Method::GET, "/api/me/export", &dee.token).await;
    assert_eq!(status, StatusCode::OK, "{exported}");
    assert_eq!(exported["rewards"].as_array().map(Vec::len), Some(1), "{exported}");
    assert_eq!(exported["rewards"][0]["reward"], json!({"gems": 100}));
    let response = app
        .client
        .delete(app.url("/api/me"))
        .bearer_auth(&dee.token)
        .json(&json!({"password": crate::helpers::PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let (_, list) = call(app, Method::GET, &format!("/api/users/{}/rewards?status=all", dee.id), &server).await;
    assert_eq!(list["rewards"], json!([]));
    assert_eq!(grants_of(app, &db, "sprint", period).await.len(), 3);
}

/// Random posts by 24 players (scores from a small range: ties on band
/// edges), spread over the instances, over four periods of a board
/// resetting every 3 s, with bans of players who posted only in the
/// current period: every closed period's grants are exactly those the
/// bands give the model's standings (each player's best, competition
/// ranks, `top_percent` among the period's players), none missing, none
/// twice.
async fn random_closes_grant_what_a_model_of_the_posts_grants(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let bands = json!([
        {"ranks": [1, 2], "reward": {"band": 0}},
        {"top_percent": 25, "reward": {"band": 1}},
        {"ranks": [8, 9], "reward": {"band": 2}},
        {"top_percent": 60, "reward": {"band": 3}}
    ]);
    app.create_board(&json!({"id": "model", "name": "Model", "reset": "*/3 * * * * *", "rewards": bands,
        "archive_periods": 50}))
        .await;
    let mut players = Vec::new();
    for n in 0..24 {
        players.push(app.register(&format!("player{n}")).await);
    }
    let mut seed: u64 = model_seed(0x9E37_79B9_7F4A_7C15).max(1);
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    // Per period: each player's best score; banned players per period.
    let mut best: BTreeMap<i64, HashMap<i64, i64>> = BTreeMap::new();
    let mut banned: BTreeSet<i64> = BTreeSet::new();
    let mut out_of: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    let first = fresh_period(app, "model", Duration::from_millis(1_000)).await;
    let mut period = first;
    // Four periods, and more while fewer than four are left to check: on a
    // loaded machine a ban can cross a close (its period is dropped) or a
    // stall can let a period pass without posts (a CI run saw two left).
    while period < first + 4 || (best.len() < 4 && period < first + 12) {
        for _ in 0..6 {
            let player = &players[next(players.len() as u64) as usize];
            if banned.contains(&player.id) {
                continue;
            }
            let score = 10 * next(8) as i64;
            let instance = &apps[next(apps.len() as u64) as usize];
            let answer = instance.post_board_score(player, "model", score).await;
            let index = answer["period"]["index"].as_i64().unwrap();
            let entry = best.entry(index).or_default().entry(player.id).or_insert(score);
            *entry = (*entry).max(score);
            period = index;
        }
        // Now and then, ban a player whose only entry is in this period,
        // while the period is still open (so before its close).
        if next(3) == 0 {
            let only_here = players.iter().find(|p| {
                !banned.contains(&p.id)
                    && best.get(&period).is_some_and(|b| b.contains_key(&p.id))
                    && best.iter().filter(|(_, b)| b.contains_key(&p.id)).count() == 1
            });
            if let Some(player) = only_here {
                let path = format!("/api/admin/users/{}/ban", player.id);
                let (status, body) = app.admin(Method::POST, &path, Some(&json!({"reason": "model"}))).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                let (_, view) = app.get_json("/api/boards/model").await;
                if view["period"]["index"] == period {
                    banned.insert(player.id);
                    out_of.entry(period).or_default().insert(player.id);
                } else {
                    // The period ended meanwhile: whether the ban came
                    // before its close is not known; leave it unchecked.
                    banned.insert(player.id);
                    best.remove(&period);
                }
            }
        }
        actix_web::rt::time::sleep(Duration::from_millis(300)).await;
        let (_, view) = app.get_json("/api/boards/model").await;
        period = view["period"]["index"].as_i64().unwrap();
    }
    let mut checked = 0;
    for (index, scores) in &best {
        let excluded = out_of.get(index).cloned().unwrap_or_default();
        let mut entries: Vec<(i64, i64)> =
            scores.iter().filter(|(id, _)| !excluded.contains(id)).map(|(id, score)| (*id, *score)).collect();
        entries.sort_by_key(|(id, score)| (-score, *id));
        let players = entries.len() as i64;
        let mut expected = BTreeSet::new();
        for (id, score) in &entries {
            let rank = 1 + entries.iter().filter(|(_, other)| other > score).count() as i64;
            let top = (10_000 * rank + players - 1) / players;
            let band = if (1..=2).contains(&rank) {
                Some(0)
            } else if top <= 2_500 {
                Some(1)
            } else if (8..=9).contains(&rank) {
                Some(2)
            } else if top <= 6_000 {
                Some(3)
            } else {
                None
            };
            if let Some(band) = band {
                expected.insert((*id, rank, band));
            }
        }
        let grants = grants_of(app, &db, "model", *index).await;
        let got: Vec<(i64, i64, i64)> = grants
            .iter()
            .map(|g| {
                (g["user_id"].as_i64().unwrap(), g["rank"].as_i64().unwrap(), g["reward"]["band"].as_i64().unwrap())
            })
            .collect();
        let got_set: BTreeSet<(i64, i64, i64)> = got.iter().copied().collect();
        assert_eq!(got.len(), got_set.len(), "period {index}: a grant twice: {got:?}");
        assert_eq!(got_set, expected, "period {index}: grants against the model");
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} periods checked");
}

/// At the contract's maxima: 20 bands of 1 KiB rewards (multi-byte text),
/// 100,500 entries (written straight into the database) all matched by a
/// band: the close grants 100,000, bands in order, the last band's in
/// board order, each once; the players' lists read the 1 KiB rewards back.
async fn a_close_at_the_maxima_grants_the_first_hundred_thousand(backend: Backend) {
    const ENTRIES: i64 = 100_500;
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    // 1,024 bytes of JSON text each: {"t":"ééé…"} (2 bytes a letter).
    let reward = |band: usize| json!({"t": format!("{band:02}{}", "é".repeat(505))});
    assert_eq!(reward(0).to_string().len(), 1_020);
    let mut bands: Vec<Value> = (0..19)
        .map(|band| json!({"ranks": [band * 10 + 1, band * 10 + 10], "reward": reward(band as usize)}))
        .collect();
    bands.push(json!({"top_percent": 100, "reward": reward(19)}));
    app.create_board(&json!({"id": "huge", "name": "Huge", "reset": "*/30 * * * * *", "rewards": bands})).await;
    let period = fresh_period(&app, "huge", Duration::from_secs(20)).await;
    let pool = db.connect().await;
    let board: i64 = sqlx::query_scalar("SELECT number FROM boards WHERE id = 'huge'").fetch_one(&pool).await.unwrap();
    let started = Instant::now();
    for chunk in (1..=ENTRIES).collect::<Vec<_>>().chunks(1_000) {
        let rows = vec!["(?, ?, ?, ?, ?, ?, ?, NULL, 1, 1)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, \
             plays, version) VALUES {rows}"
        );
        let mut query = sqlx::query(&sql);
        for user in chunk {
            let score = 1_000_000 - user;
            query = query.bind(board).bind(period).bind(user).bind(score).bind(-score).bind(1_000 + user).bind(user);
        }
        query.execute(&pool).await.unwrap();
    }
    sqlx::query("UPDATE board_periods SET players = ? WHERE board = ? AND period = ?")
        .bind(ENTRIES)
        .bind(board)
        .bind(period)
        .execute(&pool)
        .await
        .unwrap();
    let (_, view) = app.get_json("/api/boards/huge").await;
    assert_eq!(view["period"]["index"], period, "the entries were written in {:?}: too slow", started.elapsed());

    let pool_wait = Instant::now();
    loop {
        let closed: Option<i64> =
            sqlx::query_scalar("SELECT closed_at FROM board_periods WHERE board = ? AND period = ?")
                .bind(board)
                .bind(period)
                .fetch_one(&pool)
                .await
                .unwrap();
        if closed.is_some() {
            // For the notes: how long after its due time the close committed
            // (the job's start within a second of it, and the close itself).
            let ends_at: i64 = sqlx::query_scalar("SELECT ends_at FROM board_periods WHERE board = ? AND period = ?")
                .bind(board)
                .bind(period)
                .fetch_one(&pool)
                .await
                .unwrap();
            let late = hiscore::domain::Timestamp::now().millis() - ends_at - 1_500;
            eprintln!("the close granting 100,000 rewards was seen committed {late} ms after its due time");
            break;
        }
        assert!(pool_wait.elapsed() < Duration::from_secs(60), "the period did not close");
        actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    }
    let (count, distinct, last_rank): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT user_id), MAX(final_rank) FROM reward_grants WHERE board = ? AND period = ?",
    )
    .bind(board)
    .bind(period)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((count, distinct), (100_000, 100_000), "the first 100,000 grants, once each");
    assert_eq!(last_rank, 100_000, "ranks 1..=190 by their bands, then the last band in board order");
    let band_of_190: i64 =
        sqlx::query_scalar("SELECT band FROM reward_grants WHERE board = ? AND period = ? AND final_rank = 190")
            .bind(board)
            .bind(period)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(band_of_190, 18);

    // A granted player's list reads the reward back whole.
    let player = app.register("granted").await;
    sqlx::query("UPDATE reward_grants SET user_id = ? WHERE board = ? AND period = ? AND final_rank = 1")
        .bind(player.id)
        .bind(board)
        .bind(period)
        .execute(&pool)
        .await
        .unwrap();
    let (status, mine) = call(&app, Method::GET, "/api/me/rewards", &player.token).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!(mine["rewards"][0]["reward"], reward(0));
}
