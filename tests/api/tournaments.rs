//! Tournaments (v3): boards only entrants post to, with a cap on entrants
//! and on each player's attempts, per period.

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use hiscore::domain::Timestamp;

use crate::backend_tests;
use crate::helpers::{
    assert_error, json_of, model_seed, ranks_and_ids, spawn_app_on, spawn_instances, Backend, TestApp, TestDatabase,
    ADMIN,
};

backend_tests!(
    a_full_tournament_stays_full_under_a_hundred_concurrent_joins,
    attempts_are_exact_under_concurrent_posts_and_replays_are_free,
    a_tournament_takes_posts_only_in_its_window,
    a_tournament_not_begun_changes_at_once,
    a_change_to_a_running_tournament_waits_for_a_period_not_begun,
    random_tournament_posts_match_a_brute_force_sort,
);

/// Instances on one database: two where they share Redis, else one.
async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &["--admin-token", ADMIN]).await
}

/// The board as `app` shows it once `done` holds (another instance
/// reloads the catalog within a second of a change).
async fn board_when(app: &TestApp, board: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, shown) = app.get_json(&format!("/api/boards/{board}")).await;
        assert_eq!(status, StatusCode::OK, "{shown}");
        if done(&shown) {
            return shown;
        }
        assert!(std::time::Instant::now() < deadline, "never came to be: {shown}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn patch(app: &TestApp, board: &str, change: &Value) -> (StatusCode, Value) {
    app.admin(Method::PATCH, &format!("/api/admin/boards/{board}"), Some(change)).await
}

async fn join(app: &TestApp, token: &str, board: &str) -> (StatusCode, Value) {
    let url = app.url(&format!("/api/boards/{board}/entrants"));
    json_of(app.client.post(url).bearer_auth(token).send().await.expect("join")).await
}

async fn a_full_tournament_stays_full_under_a_hundred_concurrent_joins(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let board = app.create_board(&json!({"id": "cup", "name": "Cup", "join_required": true, "max_entrants": 10})).await;
    assert_eq!(
        (&board["join_required"], &board["max_entrants"], &board["entrants"]),
        (&json!(true), &json!(10), &json!(0))
    );
    let mut players = Vec::new();
    for i in 0..100 {
        players.push(app.register(&format!("entrant{i}")).await);
    }
    // Not joined: a post is refused.
    let (status, body) = app.post_board_score_raw(&players[0].token, "cup", &json!({"score": 5}), None).await;
    assert_error(status, &body, 403, "not_joined");

    let joins = players.iter().enumerate().map(|(i, player)| join(&apps[i % apps.len()], &player.token, "cup"));
    let answers = join_all(joins).await;
    let joined: Vec<usize> = (0..answers.len()).filter(|i| answers[*i].0 == StatusCode::CREATED).collect();
    assert_eq!(joined.len(), 10, "{:?}", answers.iter().map(|a| a.0).collect::<Vec<_>>());
    for (status, body) in answers.iter().filter(|a| a.0 != StatusCode::CREATED) {
        assert_error(*status, body, 409, "board_full");
    }
    let (_, shown) = app.get_json("/api/boards/cup").await;
    assert_eq!(shown["entrants"], 10, "{shown}");

    // An entrant posts; joining again changes nothing (200).
    let entrant = &players[joined[0]];
    app.post_board_score(entrant, "cup", 42).await;
    let (status, again) = join(app, &entrant.token, "cup").await;
    assert_eq!((status, &again["entrants"]), (StatusCode::OK, &json!(10)), "{again}");
    let (status, me) = app.get_authed("/api/boards/cup/me", &entrant.token).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!((&me["joined"], &me["attempts"], &me["attempts_left"]), (&json!(true), &json!(1), &Value::Null));
    assert_eq!((&me["entry"]["score"], &me["entry"]["rank"]), (&json!(42), &json!(1)), "{me}");

    // A board anyone posts to has nothing to join.
    app.create_board(&json!({"id": "open", "name": "Open"})).await;
    let (status, body) = join(app, &entrant.token, "open").await;
    assert_error(status, &body, 422, "join_not_required");
    for (field, value, code) in [
        ("join_required", json!("yes"), "invalid_join_required"),
        ("max_entrants", json!(0), "invalid_max_entrants"),
        ("max_attempts", json!(-1), "invalid_max_attempts"),
    ] {
        let definition = json!({"id": "bad", "name": "Bad", field: value});
        let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&definition)).await;
        assert_error(status, &body, 422, code);
    }
}

async fn attempts_are_exact_under_concurrent_posts_and_replays_are_free(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    app.create_board(&json!({"id": "three", "name": "Three tries", "max_attempts": 3, "hold_beyond": 900})).await;
    let ann = app.register("ann").await;

    // A replay is not an attempt; a held post is one.
    let (status, first) = app.post_board_score_raw(&ann.token, "three", &json!({"score": 10}), Some("try-1")).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, _) = app.post_board_score_raw(&ann.token, "three", &json!({"score": 10}), Some("try-1")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, held) = app.post_board_score_raw(&ann.token, "three", &json!({"score": 950}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    let (_, me) = app.get_authed("/api/boards/three/me", &ann.token).await;
    assert_eq!((&me["attempts"], &me["attempts_left"], &me["joined"]), (&json!(2), &json!(1), &json!(false)), "{me}");

    // Ten at once, over the instances: one lands, nine are refused.
    let bodies: Vec<Value> = (0..10).map(|i| json!({"score": 20 + i})).collect();
    let posts = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| apps[i % apps.len()].post_board_score_raw(&ann.token, "three", body, None));
    let answers = join_all(posts).await;
    assert_eq!(answers.iter().filter(|a| a.0 == StatusCode::CREATED).count(), 1);
    for (status, body) in answers.iter().filter(|a| a.0 != StatusCode::CREATED) {
        assert_error(*status, body, 409, "attempts_exhausted");
    }
    let (_, me) = app.get_authed("/api/boards/three/me", &ann.token).await;
    assert_eq!((&me["attempts"], &me["attempts_left"]), (&json!(3), &json!(0)), "{me}");
    let (_, history) = app.get_json(&format!("/api/users/{}/scores?board=three", ann.id)).await;
    assert_eq!(history["scores"].as_array().map(Vec::len), Some(3), "refused posts are not recorded: {history}");

    // Attempts are per period: a board that resets every second starts afresh.
    app.create_board(&json!({"id": "ticks", "name": "Ticks", "reset": "* * * * * *", "max_attempts": 1})).await;
    let (status, body) = app.post_board_score_raw(&ann.token, "ticks", &json!({"score": 1}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let period = body["period"]["index"].as_i64();
    let (status, again) = app.post_board_score_raw(&ann.token, "ticks", &json!({"score": 2}), None).await;
    if again["period"]["index"].as_i64() == period || status != StatusCode::CREATED {
        assert_error(status, &again, 409, "attempts_exhausted");
    }
    tokio::time::sleep(std::time::Duration::from_millis(1_050)).await;
    let (status, next) = app.post_board_score_raw(&ann.token, "ticks", &json!({"score": 3}), None).await;
    assert_eq!(status, StatusCode::CREATED, "a new period, a new attempt: {next}");
}

async fn a_tournament_takes_posts_only_in_its_window(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let ann = app.register("ann").await;
    let now = Timestamp::now();

    // Not begun: posts and joins are refused, reads work.
    let starts_at = now.plus_millis(3_600_000).to_rfc3339();
    let later = json!({"id": "later", "name": "Later", "starts_at": starts_at, "join_required": true});
    let board = app.create_board(&later).await;
    assert_eq!(board["starts_at"], starts_at.as_str());
    let (status, body) = app.post_board_score_raw(&ann.token, "later", &json!({"score": 5}), None).await;
    assert_error(status, &body, 409, "board_closed");
    let (status, body) = join(&app, &ann.token, "later").await;
    assert_error(status, &body, 409, "board_closed");
    assert_eq!(app.ranking("later", "").await["total_players"], 0);

    // Ending soon: a post before the end counts, one after is refused, and
    // the period in force ends at ends_at with its results.
    let ends_at = now.plus_millis(1_500);
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "ends_at": ends_at.to_rfc3339()})).await;
    let (status, body) = app.post_board_score_raw(&ann.token, "sprint", &json!({"score": 70}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!((&body["period"]["index"], &body["period"]["end"]), (&json!(0), &json!(ends_at.to_rfc3339())));
    let wait = ends_at.millis() - Timestamp::now().millis() + 100;
    tokio::time::sleep(std::time::Duration::from_millis(u64::try_from(wait).unwrap_or(0))).await;
    let (status, body) = app.post_board_score_raw(&ann.token, "sprint", &json!({"score": 90}), None).await;
    assert_error(status, &body, 409, "board_closed");
    let (_, shown) = app.get_json("/api/boards/sprint").await;
    assert_eq!(
        (&shown["period"]["index"], &shown["period"]["start"]),
        (&json!(1), &json!(ends_at.to_rfc3339())),
        "{shown}"
    );
    let ended = app.ranking("sprint", "period=0").await;
    assert_eq!((&ended["entries"][0]["score"], &ended["period"]["end"]), (&json!(70), &json!(ends_at.to_rfc3339())));

    // A join writes: it counts against the player's posts per second.
    let strict = spawn_app_on(&db, &["--admin-token", ADMIN, "--rate-posts-per-player", "2"]).await;
    strict.create_board(&json!({"id": "joins", "name": "Joins", "join_required": true})).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(join(&strict, &ann.token, "joins").await.0);
    }
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");

    for (definition, code) in [
        (json!({"id": "bad", "name": "Bad", "starts_at": "tomorrow"}), "invalid_starts_at"),
        (json!({"id": "bad", "name": "Bad", "ends_at": 5}), "invalid_ends_at"),
        (json!({"id": "bad", "name": "Bad", "starts_at": starts_at, "ends_at": now.to_rfc3339()}), "invalid_ends_at"),
    ] {
        let (status, body) = app.admin(Method::POST, "/api/admin/boards", Some(&definition)).await;
        assert_error(status, &body, 422, code);
    }
}

/// A tournament whose window has not opened: nothing was posted or joined
/// in the period in force, so a `PATCH` changes it at once, its end too
/// (the stored period's, which the closing job goes by), on every
/// instance. A period begun that never ends cannot change.
async fn a_tournament_not_begun_changes_at_once(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let (first, last) = (&apps[0], &apps[apps.len() - 1]);
    let ann = first.register("ann").await;
    let now = Timestamp::now();
    let hour = 3_600_000;
    first
        .create_board(&json!({"id": "cup", "name": "Cup", "join_required": true, "max_attempts": 1,
            "starts_at": now.plus_millis(hour).to_rfc3339(), "ends_at": now.plus_millis(2 * hour).to_rfc3339()}))
        .await;
    let ends_at = now.plus_millis(3 * hour).to_rfc3339();

    // Opened now, one attempt more, an hour longer.
    let (status, changed) =
        patch(first, "cup", &json!({"starts_at": null, "max_attempts": 2, "ends_at": ends_at})).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(
        (&changed["starts_at"], &changed["max_attempts"], &changed["ends_at"], &changed["join_required"]),
        (&Value::Null, &json!(2), &json!(ends_at), &json!(true))
    );
    assert_eq!((&changed["period"]["end"], &changed["pending_change"]), (&json!(ends_at), &Value::Null));
    let shown = board_when(last, "cup", |board| board["max_attempts"] == 2).await;
    assert_eq!((&shown["period"]["end"], &shown["starts_at"]), (&json!(ends_at), &Value::Null));
    let (_, periods) = last.get_json("/api/boards/cup/periods").await;
    assert_eq!(periods["periods"][0]["end"], ends_at.as_str(), "the stored period ends there too: {periods}");
    assert_eq!(join(last, &ann.token, "cup").await.0, StatusCode::CREATED);
    for score in [10, 20] {
        let (status, body) = last.post_board_score_raw(&ann.token, "cup", &json!({"score": score}), None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = last.post_board_score_raw(&ann.token, "cup", &json!({"score": 30}), None).await;
    assert_error(status, &body, 409, "attempts_exhausted");

    // Bad values, as at creation.
    for (change, code) in [
        (json!({"max_attempts": 0}), "invalid_max_attempts"),
        (json!({"join_required": "yes"}), "invalid_join_required"),
        (json!({"starts_at": now.plus_millis(4 * hour).to_rfc3339()}), "invalid_ends_at"),
    ] {
        let (status, body) = patch(first, "cup", &change).await;
        assert_error(status, &body, 422, code);
    }
    // Begun and endless: no period is left to change.
    first.create_board(&json!({"id": "open", "name": "Open"})).await;
    let (status, body) = patch(first, "open", &json!({"max_attempts": 3})).await;
    assert_error(status, &body, 409, "period_started");
    let (status, body) = patch(first, "best", &json!({"max_attempts": 3})).await;
    assert_error(status, &body, 403, "builtin_board");
    // The same values again change nothing.
    let (status, body) = patch(first, "open", &json!({"max_attempts": null, "join_required": false})).await;
    assert_eq!((status, &body["pending_change"]), (StatusCode::OK, &Value::Null), "{body}");
}

/// A resetting tournament's period in force keeps its fields; a change
/// comes into force with a later period (one starting at least 5 s after
/// it, shown as `pending_change` until then), on every instance.
async fn a_change_to_a_running_tournament_waits_for_a_period_not_begun(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let (first, last) = (&apps[0], &apps[apps.len() - 1]);
    let ann = first.register("ann").await;
    first.create_board(&json!({"id": "rounds", "name": "Rounds", "reset": "*/5 * * * * *", "max_attempts": 1})).await;
    let post = async |app: &TestApp, score: i64| {
        let (status, body) = app.post_board_score_raw(&ann.token, "rounds", &json!({"score": score}), None).await;
        (status, body["period"]["index"].clone(), body)
    };
    let (status, period, body) = post(first, 10).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let (status, changed) = patch(first, "rounds", &json!({"max_attempts": 2})).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let from = changed["pending_change"]["period"].as_i64().expect("a pending change");
    assert!(from > period.as_i64().unwrap(), "{changed}");
    assert_eq!((&changed["max_attempts"], &changed["pending_change"]["max_attempts"]), (&json!(1), &json!(2)));
    // Every instance knows the change before its period begins.
    let shown = board_when(last, "rounds", |board| board["pending_change"]["period"] == from).await;
    assert!(shown["period"]["index"].as_i64().unwrap() < from, "learnt too late: {shown}");
    let (status, now_index, body) = post(last, 20).await;
    if now_index == period {
        assert_error(status, &body, 409, "attempts_exhausted");
    }

    // From its period on, two attempts a period.
    let shown = board_when(last, "rounds", |board| board["period"]["index"] == from).await;
    assert_eq!((&shown["max_attempts"], &shown["pending_change"]), (&json!(2), &Value::Null));
    let mut outcomes = Vec::new();
    for score in [30, 40, 50] {
        let (status, index, _) = post(last, score).await;
        outcomes.push((status.as_u16(), index));
    }
    assert_eq!(outcomes, [(201, json!(from)), (201, json!(from)), (409, Value::Null)]);
}

/// The cross-source property on a tournament: after random posts (ties
/// likely, some past the attempt limit), spread over the instances, each
/// entrant's entry is the best of its first `max_attempts` posts, and
/// every page, cursor walk and window, on every instance and from whichever
/// source answers there, equals the database's rows in board order.
async fn random_tournament_posts_match_a_brute_force_sort(backend: Backend) {
    use rand::{Rng, SeedableRng};
    const ATTEMPTS: usize = 3;
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    apps[0].create_board(&json!({"id": "cup", "name": "Cup", "join_required": true, "max_attempts": ATTEMPTS})).await;
    let mut players = Vec::new();
    for i in 0..10 {
        let player = apps[0].register(&format!("racer{i:02}")).await;
        assert_eq!(join(&apps[0], &player.token, "cup").await.0, StatusCode::CREATED);
        players.push(player);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(model_seed(7));
    let mut accepted: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
    for n in 0..50 {
        let player = &players[rng.gen_range(0..players.len())];
        let score = rng.gen_range(0..5) * 10;
        let app = &apps[n % apps.len()];
        let (status, body) = app.post_board_score_raw(&player.token, "cup", &json!({"score": score}), None).await;
        let posts = accepted.entry(player.id).or_default();
        if posts.len() < ATTEMPTS {
            assert_eq!(status, StatusCode::CREATED, "{body}");
            posts.push(score);
        } else {
            assert_error(status, &body, 409, "attempts_exhausted");
        }
    }

    let pool = db.connect().await;
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT e.user_id, e.score, e.plays FROM board_entries e JOIN boards b ON b.number = e.board \
         WHERE b.id = 'cup' ORDER BY e.rank_score, e.achieved_at, e.user_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut entries: Vec<(i64, i64, i64)> = rows.clone();
    entries.sort();
    let model: Vec<(i64, i64, i64)> =
        accepted.iter().map(|(id, posts)| (*id, *posts.iter().max().unwrap(), posts.len() as i64)).collect();
    assert_eq!(entries, model, "(player, best of the first {ATTEMPTS} posts, attempts)");
    // Ties share a rank.
    let ranked: Vec<(i64, i64)> =
        rows.iter().map(|row| (1 + rows.iter().filter(|other| other.1 > row.1).count() as i64, row.0)).collect();

    for app in &apps {
        let mut by_offset = Vec::new();
        let mut offset = 0;
        loop {
            let page = app.ranking("cup", &format!("limit=3&offset={offset}")).await;
            by_offset.extend(ranks_and_ids(&page));
            match page["next_offset"].as_i64() {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(by_offset, ranked, "by offset on {}", app.url(""));
        let mut by_cursor = Vec::new();
        let mut page = app.ranking("cup", "limit=4").await;
        loop {
            by_cursor.extend(ranks_and_ids(&page));
            let Some(cursor) = page["next_cursor"].as_str().map(str::to_owned) else { break };
            page = app.ranking("cup", &format!("limit=4&cursor={cursor}")).await;
        }
        assert_eq!(by_cursor, ranked, "by cursor on {}", app.url(""));
        for (position, (_, id)) in ranked.iter().enumerate() {
            let window = app.ranking(&format!("cup/around/{id}"), "radius=1").await;
            let (start, end) = (position.saturating_sub(1), (position + 2).min(ranked.len()));
            assert_eq!(ranks_and_ids(&window), ranked[start..end], "around {id} on {}", app.url(""));
        }
    }
}
