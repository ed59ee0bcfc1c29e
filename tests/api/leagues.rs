//! Leagues (v3): placement in cohorts, cohort pages with zones, the moves
//! made once when a period closes (over two instances where Redis is
//! shared), ties sharing a fate, member history, and the refusals.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use hiscore_bench::webhooks::Receiver;

use crate::backend_tests;
use crate::helpers::{
    assert_error, model_seed, spawn_app_on, spawn_instances, Backend, Player, TestApp, TestDatabase, ADMIN,
};

backend_tests!(
    a_league_places_players_and_moves_them_once,
    leagues_are_validated_listed_and_deleted,
    random_league_posts_match_a_brute_force_sort,
    a_post_whose_client_left_is_placed_all_the_same,
);

/// Instances on one database: three where they share Redis (each runs
/// the closing job), else one.
async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 3, &["--admin-token", ADMIN, "--webhook-allow-private"]).await
}

async fn post(app: &TestApp, player: &Player, league: &str, score: i64) -> Value {
    let url = app.url(&format!("/api/leagues/{league}/scores"));
    let response = app.client.post(url).bearer_auth(&player.token).json(&json!({"score": score})).send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// Sleeps until `at` (an RFC 3339 time) plus `margin`.
async fn sleep_past(at: &Value, margin: Duration) {
    let at = hiscore::domain::Timestamp::parse_rfc3339(at.as_str().unwrap()).unwrap().millis();
    let now = hiscore::domain::Timestamp::now().millis();
    actix_web::rt::time::sleep(Duration::from_millis((at - now).max(0) as u64) + margin).await;
}

/// Three tiers, cohorts of 3, the best moves up and the worst down, a
/// period every 5 s. Seven players post in one period: cohorts fill in
/// order; at the close, each cohort moves by its own ranks (two tied at
/// the top both go up), exactly once, whichever of three instances closes it; a
/// promoted player's next post places them a tier up; one who skips a
/// period keeps their tier.
async fn a_league_places_players_and_moves_them_once(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let receiver = Receiver::start().await.unwrap();
    let (status, hook) = app
        .admin(Method::POST, "/api/admin/webhooks", Some(&json!({"url": receiver.url(), "events": ["league.closed"]})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    receiver.set_secret(hook["secret"].as_str().unwrap());
    let definition = json!({"id": "ladder", "name": "Ladder", "tiers": ["Bronze", "Silver", "Gold"],
        "cohort_size": 3, "promote": 1, "demote": 1, "operator": "best", "reset": "*/5 * * * * *"});
    let (status, league) = app.admin(Method::POST, "/api/admin/leagues", Some(&definition)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    assert_eq!(league["tier_stats"][0], json!({"index": 0, "name": "Bronze", "cohorts": 0, "players": 0}));
    let mut players = Vec::new();
    for i in 0..7 {
        players.push(app.register(&format!("climber{i}")).await);
    }

    // Start at the beginning of a period: everything below fits in it.
    sleep_past(&league["period"]["end"], Duration::from_millis(100)).await;
    let scores = [30, 20, 10, 50, 50, 5, 7];
    let mut answers = Vec::new();
    for (i, (player, score)) in players.iter().zip(scores).enumerate() {
        answers.push(post(&apps[i % apps.len()], player, "ladder", score).await);
    }
    let period = answers[0]["period"]["index"].as_i64().unwrap();
    assert!(answers.iter().all(|a| a["period"]["index"] == period), "the posts spanned a reset");
    let cohorts: Vec<&str> = answers.iter().map(|a| a["cohort"].as_str().unwrap()).collect();
    assert_eq!(answers[0]["tier"], json!({"index": 0, "name": "Bronze"}));
    assert_eq!(cohorts[0], cohorts[2]);
    assert_eq!(cohorts[3], cohorts[5]);
    assert_eq!(HashSet::<&str>::from_iter(cohorts.iter().copied()).len(), 3, "{cohorts:?}");
    // The entry is ranked in the cohort: the second of cohort 1 is 2nd.
    assert_eq!(answers[1]["entry"]["rank"], 2, "{}", answers[1]);
    // Placement stays: a second post finds it.
    let again = post(app, &players[0], "ladder", 35).await;
    assert_eq!(again["cohort"], answers[0]["cohort"]);

    let (_, page) = app.get_json(&format!("/api/leagues/ladder/cohorts/{}", cohorts[3])).await;
    let zones: Vec<(i64, i64, &str)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["rank"].as_i64().unwrap(), e["score"].as_i64().unwrap(), e["zone"].as_str().unwrap()))
        .collect();
    // Two tied at the top share rank 1 and the promotion; tier 0 demotes no one.
    assert_eq!(zones, [(1, 50, "promote"), (1, 50, "promote"), (3, 5, "stay")], "{page}");
    assert_eq!((&page["tier"]["index"], &page["total_players"]), (&json!(0), &json!(3)));
    let (_, shown) = app.get_json("/api/leagues/ladder").await;
    assert_eq!(shown["tier_stats"][0], json!({"index": 0, "name": "Bronze", "cohorts": 3, "players": 7}), "{shown}");

    // The close: no request until the event is in.
    let closed = {
        let started = std::time::Instant::now();
        loop {
            let got = receiver.received();
            if got.iter().any(|r| r.json()["data"]["period"]["index"] == period)
                || started.elapsed() > Duration::from_secs(15)
            {
                break got;
            }
            actix_web::rt::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let ours: Vec<_> = closed.iter().filter(|r| r.json()["data"]["period"]["index"] == period).collect();
    assert_eq!(ours.len(), 1, "league.closed for period {period}: {ours:?}");
    assert_eq!(ours[0].verified, Some(true));
    assert_eq!(
        ours[0].json()["data"]["tiers"],
        json!([{"index": 0, "up": 4, "down": 0, "stay": 3}, {"index": 1, "up": 0, "down": 0, "stay": 0},
            {"index": 2, "up": 0, "down": 0, "stay": 0}])
    );
    // History: one row for the period, however many instances ran the close.
    let (status, member) = app.get_json(&format!("/api/leagues/ladder/members/{}", players[3].id)).await;
    assert_eq!(status, StatusCode::OK, "{member}");
    assert_eq!(member["tier"], json!({"index": 1, "name": "Silver"}), "moved exactly one tier: {member}");
    assert_eq!(member["cohort"], Value::Null);
    let history = member["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{member}");
    assert_eq!(
        (&history[0]["period"], &history[0]["rank"], &history[0]["movement"], &history[0]["cohort"]),
        (&json!(period), &json!(1), &json!("up"), &json!(cohorts[3]))
    );
    let (_, stayed) = app.get_json(&format!("/api/leagues/ladder/members/{}", players[1].id)).await;
    assert_eq!((&stayed["tier"]["index"], &stayed["history"][0]["movement"]), (&json!(0), &json!("stay")));
    assert_eq!(stayed["history"][0]["rank"], 2);
    // A ban after the close changes the ranks shown, not the moves made.
    let ban = json!({"reason": "cheat"});
    let (status, _) = app.admin(Method::POST, &format!("/api/admin/users/{}/ban", players[0].id), Some(&ban)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, stayed) = app.get_json(&format!("/api/leagues/ladder/members/{}", players[1].id)).await;
    assert_eq!((&stayed["history"][0]["rank"], &stayed["history"][0]["movement"]), (&json!(1), &json!("stay")));
    assert_eq!(stayed["tier"]["index"], 0, "{stayed}");

    // The promoted player posts again: placed in Silver. Player 4 (also
    // promoted) skips the period and keeps Silver after its close.
    let next = post(app, &players[3], "ladder", 1).await;
    assert_eq!(next["tier"], json!({"index": 1, "name": "Silver"}), "{next}");
    let next_period = next["period"]["index"].as_i64().unwrap();
    assert!(next_period > period);
    sleep_past(&next["period"]["end"], Duration::from_millis(3_500)).await;
    let (_, skipped) = app.get_json(&format!("/api/leagues/ladder/members/{}", players[4].id)).await;
    assert_eq!(skipped["tier"]["index"], 1, "{skipped}");
    assert_eq!(skipped["history"].as_array().unwrap().len(), 1, "{skipped}");
    let (_, alone) = app.get_json(&format!("/api/leagues/ladder/members/{}", players[3].id)).await;
    // Alone in a Silver cohort: rank 1 of 1, promoted to Gold.
    assert_eq!((&alone["tier"]["index"], &alone["history"][0]["movement"]), (&json!(2), &json!("up")), "{alone}");
}

async fn leagues_are_validated_listed_and_deleted(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let good = json!({"id": "weekly", "name": "Weekly", "tiers": ["Bronze", "Silver"], "cohort_size": 30,
        "promote": 7, "demote": 5, "reset": "0 0 * * 1", "timezone": "Europe/Berlin"});
    for (field, value, code) in [
        ("tiers", json!(["Only"]), "invalid_tiers"),
        ("cohort_size", json!(1), "invalid_cohort_size"),
        ("promote", json!(31), "invalid_promote"),
        ("demote", json!("5"), "invalid_demote"),
        ("reset", Value::Null, "invalid_reset"),
        ("timezone", json!("Mars/Olympus"), "invalid_timezone"),
        ("id", json!("Not An Id"), "invalid_id"),
    ] {
        let mut body = good.clone();
        body[field] = value;
        let (status, answer) = app.admin(Method::POST, "/api/admin/leagues", Some(&body)).await;
        assert_error(status, &answer, 422, code);
    }
    let (status, league) = app.admin(Method::POST, "/api/admin/leagues", Some(&good)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    assert_eq!(
        (&league["tiers"], &league["cohort_size"], &league["operator"], &league["timezone"]),
        (&json!(["Bronze", "Silver"]), &json!(30), &json!("best"), &json!("Europe/Berlin"))
    );
    let (status, answer) = app.admin(Method::POST, "/api/admin/leagues", Some(&good)).await;
    assert_error(status, &answer, 409, "league_exists");
    app.create_board(&json!({"id": "level-1", "name": "Level 1"})).await;
    let mut clash = good.clone();
    clash["id"] = json!("level-1");
    let (status, answer) = app.admin(Method::POST, "/api/admin/leagues", Some(&clash)).await;
    assert_error(status, &answer, 409, "league_exists");
    let (status, answer) =
        app.admin(Method::POST, "/api/admin/boards", Some(&json!({"id": "weekly", "name": "W"}))).await;
    assert_error(status, &answer, 409, "board_exists");

    // A league is not a board.
    let (_, boards) = app.get_json("/api/boards").await;
    assert!(boards["boards"].as_array().unwrap().iter().all(|b| b["id"] != "weekly"), "{boards}");
    let (status, answer) = app.get_json("/api/rankings/weekly").await;
    assert_error(status, &answer, 404, "board_not_found");
    let (_, list) = app.get_json("/api/leagues").await;
    assert_eq!(list["leagues"].as_array().unwrap().len(), 1);
    let (status, answer) = app.get_json("/api/leagues/level-1").await;
    assert_error(status, &answer, 404, "league_not_found");
    let (status, answer) = app.get_json("/api/leagues/weekly/cohorts/0-0-1").await;
    assert_error(status, &answer, 404, "cohort_not_found");
    let (status, answer) = app.get_json("/api/leagues/weekly/cohorts/nonsense").await;
    assert_error(status, &answer, 404, "cohort_not_found");
    let player = app.register("newcomer").await;
    let (status, answer) = app.get_json(&format!("/api/leagues/weekly/members/{}", player.id)).await;
    assert_error(status, &answer, 404, "user_not_found");
    let placed = post(&app, &player, "weekly", 12).await;
    let (_, member) = app.get_json(&format!("/api/leagues/weekly/members/{}", player.id)).await;
    assert_eq!(
        (&member["cohort"], &member["entry"]["score"], &member["entry"]["zone"]),
        (&placed["cohort"], &json!(12), &json!("promote"))
    );

    let (status, _) = app.admin(Method::DELETE, "/api/admin/leagues/weekly", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, answer) = app.get_json("/api/leagues/weekly").await;
    assert_error(status, &answer, 404, "league_not_found");
    let (status, answer) = app.admin(Method::DELETE, "/api/admin/leagues/weekly", None).await;
    assert_error(status, &answer, 404, "league_not_found");
}

backend_tests!(a_close_killed_midway_is_made_once_after_a_restart);

/// 20,000 members in one period (written straight into the database), a
/// service process SIGKILLed while it closes the period, a new one
/// started: every member's move is made exactly once, as the contract's
/// rule computes it here from the same entries (a move made twice would
/// shift a tier twice; one lost would leave a placement without a move),
/// and so is every reward the league's bands grant per cohort (v4).
async fn a_close_killed_midway_is_made_once_after_a_restart(backend: Backend) {
    use crate::crash::{start_server, wait_until_healthy};
    const MEMBERS: i64 = 20_000;
    let db = TestDatabase::new(&backend).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut server = start_server(&db, port, &["--admin-token", ADMIN]);
    wait_until_healthy(&client, &base).await;
    let definition = json!({"id": "big", "name": "Big", "tiers": ["B", "S", "G"], "cohort_size": 30,
        "promote": 7, "demote": 5, "reset": "*/10 * * * * *",
        "rewards": [{"ranks": [1, 1], "reward": {"band": 0}}, {"top_percent": 30, "reward": {"band": 1}}]});
    let created =
        client.post(format!("{base}/api/admin/leagues")).bearer_auth(ADMIN).json(&definition).send().await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let league: Value = created.json().await.unwrap();
    let period = league["period"]["index"].as_i64().unwrap();
    let pool = db.connect().await;
    let board: i64 = sqlx::query_scalar("SELECT number FROM boards WHERE id = 'big'").fetch_one(&pool).await.unwrap();

    // Members in tiers 0..3 and cohorts of 30 as placement fills them;
    // scores with many ties.
    let mut rows = Vec::new();
    let mut next_seq = [(1_i64, 0_i64); 3];
    for user in 1..=MEMBERS {
        let tier = (user * 7919) % 3;
        let (seq, filled) = next_seq[tier as usize];
        let (seq, filled) = if filled == 30 { (seq + 1, 1) } else { (seq, filled + 1) };
        next_seq[tier as usize] = (seq, filled);
        let score = (user * 104_729) % 50;
        rows.push((user, tier, seq, score));
    }
    for chunk in rows.chunks(500) {
        let entries = vec!["(?, ?, ?, ?, ?, ?, ?, NULL, 1, 1)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, \
             plays, version) VALUES {entries}"
        );
        let mut query = sqlx::query(&sql);
        for (user, _, _, score) in chunk {
            query = query.bind(board).bind(period).bind(user).bind(score).bind(-score).bind(1_000 + user).bind(user);
        }
        query.execute(&pool).await.unwrap();
        let placements = vec!["(?, ?, ?, ?, ?, 0)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO league_placements (board, period, user_id, tier, cohort, placed_at) VALUES {placements}"
        );
        let mut query = sqlx::query(&sql);
        for (user, tier, seq, _) in chunk {
            query = query.bind(board).bind(period).bind(user).bind(tier).bind(seq);
        }
        query.execute(&pool).await.unwrap();
        let members = vec!["(?, ?, ?)"; chunk.len()].join(", ");
        let sql = format!("INSERT INTO league_members (board, user_id, tier) VALUES {members}");
        let mut query = sqlx::query(&sql);
        for (user, tier, ..) in chunk {
            query = query.bind(board).bind(user).bind(tier);
        }
        query.execute(&pool).await.unwrap();
    }

    // The close starts within a second of end + 1.5 s: kill in the middle of it.
    sleep_past(&league["period"]["end"], Duration::from_millis(1_900)).await;
    server.kill().unwrap();
    server.wait().unwrap();
    let closed_at: Option<i64> =
        sqlx::query_scalar("SELECT closed_at FROM board_periods WHERE board = ? AND period = ?")
            .bind(board)
            .bind(period)
            .fetch_one(&pool)
            .await
            .unwrap();
    eprintln!("at the SIGKILL the period was {}", if closed_at.is_some() { "closed already" } else { "not closed" });

    let mut server = start_server(&db, port, &["--admin-token", ADMIN]);
    wait_until_healthy(&client, &base).await;
    let started = std::time::Instant::now();
    loop {
        let closed: Option<i64> =
            sqlx::query_scalar("SELECT closed_at FROM board_periods WHERE board = ? AND period = ?")
                .bind(board)
                .bind(period)
                .fetch_one(&pool)
                .await
                .unwrap();
        if closed.is_some() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the restarted service did not close the period");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }

    // The contract's rule, here: per cohort, competition ranks by score.
    let ladder = hiscore::domain::Ladder {
        tiers: vec!["B".into(), "S".into(), "G".into()],
        cohort_size: 30,
        promote: 7,
        demote: 5,
    };
    let mut cohorts: std::collections::BTreeMap<(i64, i64), Vec<(i64, i64)>> = Default::default();
    for (user, tier, seq, score) in &rows {
        cohorts.entry((*tier, *seq)).or_default().push((*score, *user));
    }
    let mut expected = std::collections::HashMap::new();
    // And the rewards: rank 1 of each cohort, then its top 30 %.
    let mut expected_grants = std::collections::BTreeSet::new();
    for ((tier, _), mut members) in cohorts {
        members.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let keys: Vec<i64> = members.iter().map(|(score, _)| -score).collect();
        let ranks = hiscore::domain::competition_ranks(&keys);
        let players = members.len() as i64;
        for ((_, user), rank) in members.iter().zip(ranks) {
            let movement = ladder.movement(tier, rank, players);
            expected.insert(*user, (movement.as_str().to_owned(), ladder.next_tier(tier, movement)));
            let top = (10_000 * rank + players - 1) / players;
            if rank == 1 {
                expected_grants.insert((*user, 0_i64, rank));
            } else if top <= 3_000 {
                expected_grants.insert((*user, 1_i64, rank));
            }
        }
    }
    let granted: Vec<(i64, i64, i64)> =
        sqlx::query_as("SELECT user_id, band, final_rank FROM reward_grants WHERE board = ? AND period = ?")
            .bind(board)
            .bind(period)
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(granted.len(), expected_grants.len(), "rewards granted once each, none missing");
    assert_eq!(granted.into_iter().collect::<std::collections::BTreeSet<_>>(), expected_grants);
    // The operators' list shows each grant with its tier and cohort.
    let listed: Value = client
        .get(format!("{base}/api/admin/leagues/big/rewards?period={period}&limit=100"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let first = &listed["rewards"][0];
    assert_eq!(listed["rewards"].as_array().map(Vec::len), Some(100), "{listed}");
    assert_eq!(first["league"], "big", "{first}");
    assert!(first.get("board").is_none(), "{first}");
    let (tier, cohort) = (first["tier"].as_i64().unwrap(), first["cohort"].as_str().unwrap());
    assert!(cohort.starts_with(&format!("{period}-{tier}-")), "{first}");
    let moved: Vec<(i64, Option<String>, i64)> = sqlx::query_as(
        // In a closed period, a placement without a movement stayed.
        "SELECT p.user_id, CASE WHEN b.closed_at IS NULL THEN NULL ELSE COALESCE(p.movement, 'stay') END, m.tier \
         FROM league_placements p JOIN league_members m ON m.board = p.board AND m.user_id = p.user_id \
         JOIN board_periods b ON b.board = p.board AND b.period = p.period WHERE p.board = ? AND p.period = ?",
    )
    .bind(board)
    .bind(period)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(moved.len() as i64, MEMBERS);
    let wrong: Vec<_> = moved
        .iter()
        .filter(|(user, movement, tier)| expected.get(user) != Some(&(movement.clone().unwrap_or_default(), *tier)))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty(),
        "moves not made exactly once: {wrong:?} (expected {:?})",
        wrong.first().map(|w| &expected[&w.0])
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

/// The property on a league, on every backend: after random posts (ties
/// likely) spread over the instances, players fill cohorts in order of
/// their first posts, each cohort page holds exactly its members at their
/// best scores with ranks from a brute-force count (ties share a rank),
/// and each member's own view agrees with the page.
async fn random_league_posts_match_a_brute_force_sort(backend: Backend) {
    use rand::{Rng, SeedableRng};
    const COHORT_SIZE: usize = 4;
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let definition = json!({"id": "random", "name": "Random", "tiers": ["Low", "High"], "cohort_size": COHORT_SIZE,
        "promote": 1, "demote": 1, "operator": "best", "reset": "0 0 0 * * *"});
    let (status, league) = apps[0].admin(Method::POST, "/api/admin/leagues", Some(&definition)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    let mut players = Vec::new();
    for i in 0..10 {
        players.push(apps[0].register(&format!("leaguer{i:02}")).await);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(model_seed(11));
    let mut best: std::collections::BTreeMap<i64, i64> = Default::default();
    let mut cohort_of: std::collections::BTreeMap<i64, String> = Default::default();
    let mut first_posts = Vec::new();
    for n in 0..40 {
        let player = &players[rng.gen_range(0..players.len())];
        let score = rng.gen_range(0..5) * 10;
        let answer = post(&apps[n % apps.len()], player, "random", score).await;
        let cohort = answer["cohort"].as_str().unwrap().to_owned();
        if let Some(placed) = cohort_of.get(&player.id) {
            assert_eq!(placed, &cohort, "a player stays in one cohort for the period");
        } else {
            first_posts.push(player.id);
            cohort_of.insert(player.id, cohort);
        }
        let kept = best.entry(player.id).or_insert(score);
        *kept = (*kept).max(score);
    }
    // Cohorts fill in order of first posts, `COHORT_SIZE` each.
    let cohorts: Vec<&String> = first_posts.iter().map(|id| &cohort_of[id]).collect();
    for (position, cohort) in cohorts.iter().enumerate() {
        assert_eq!(*cohort, cohorts[position / COHORT_SIZE * COHORT_SIZE], "player {position} in order: {cohorts:?}");
    }

    for app in &apps {
        for cohort in cohorts.iter().collect::<std::collections::BTreeSet<_>>() {
            let members: Vec<i64> = cohort_of.iter().filter(|(_, c)| c == cohort).map(|(id, _)| *id).collect();
            let mut expected: Vec<(i64, i64, i64)> = members
                .iter()
                .map(|id| (1 + members.iter().filter(|other| best[other] > best[id]).count() as i64, *id, best[id]))
                .collect();
            expected.sort();
            let (status, page) = app.get_json(&format!("/api/leagues/random/cohorts/{cohort}")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            let mut shown: Vec<(i64, i64, i64)> = page["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["rank"].as_i64().unwrap(), e["user"]["id"].as_i64().unwrap(), e["score"].as_i64().unwrap()))
                .collect();
            let in_page_order: Vec<i64> = shown.iter().map(|e| e.0).collect();
            assert!(in_page_order.is_sorted(), "ranks in page order: {page}");
            shown.sort();
            assert_eq!(shown, expected, "cohort {cohort}: (rank, player, best)");
            for (rank, id, score) in &expected {
                let (_, member) = app.get_json(&format!("/api/leagues/random/members/{id}")).await;
                assert_eq!(
                    (&member["cohort"], &member["entry"]["rank"], &member["entry"]["score"]),
                    (&json!(cohort), &json!(rank), &json!(score)),
                    "{member}"
                );
            }
        }
    }
}

/// Issue 39: a league post is placed in a cohort after its commit; a
/// client that leaves as soon as it has sent the post must not leave a
/// score on the league without a cohort. Thirty players post and hang up
/// at once, at every moment; every one who has an entry is placed.
async fn a_post_whose_client_left_is_placed_all_the_same(backend: Backend) {
    use tokio::io::AsyncWriteExt as _;
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let definition = json!({"id": "ladder", "name": "Ladder", "tiers": ["Bronze", "Silver"],
        "cohort_size": 5, "promote": 1, "demote": 1, "reset": "0 0 * * 1"});
    let (status, league) = app.admin(Method::POST, "/api/admin/leagues", Some(&definition)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut players = Vec::new();
    for n in 0..30u64 {
        let player = app.register(&format!("leaver{n}")).await;
        let body = json!({"score": n}).to_string();
        let request = format!(
            "POST /api/leagues/ladder/scores HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            player.token,
            body.len()
        );
        let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        // Gone at once, or a moment later: every point of the post.
        tokio::time::sleep(Duration::from_micros(n * 150)).await;
        drop(socket);
        players.push(player);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pool = db.connect().await;
    let posted: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT s.user_id FROM board_scores s JOIN boards b ON b.number = s.board WHERE b.id = 'ladder'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let posted: HashSet<i64> = posted.into_iter().collect();
    assert!(!posted.is_empty(), "no post went through: the test tried nothing");
    for player in players.iter().filter(|player| posted.contains(&player.id)) {
        let (status, member) = app.get_json(&format!("/api/leagues/ladder/members/{}", player.id)).await;
        assert_eq!(status, StatusCode::OK, "{member}");
        assert!(member["cohort"].is_string(), "a posted player without a cohort: {member}");
    }
}
