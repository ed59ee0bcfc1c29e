//! Erasure and bans reach everything v3 added (issue 39): an erased
//! player leaves their league (places, history, the cohort's count),
//! frees their tournament place, leaves the review queue and the queued
//! webhook events; a banned player frees their place and is unknown in
//! league member reads until the unban.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use hiscore_bench::webhooks::{Received, Receiver};

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app_on, Backend, Player, TestApp, TestDatabase, ADMIN, PASSWORD};

backend_tests!(an_erased_player_leaves_everything_v3_added, a_banned_player_frees_places_and_is_unknown);

const FLAGS: [&str; 3] = ["--admin-token", ADMIN, "--webhook-allow-private"];

async fn post(app: &TestApp, player: &Player, path: &str, score: i64) -> (StatusCode, Value) {
    let request = app.client.post(app.url(path)).bearer_auth(&player.token).json(&json!({"score": score}));
    json_of(request.send().await.unwrap()).await
}

async fn join(app: &TestApp, player: &Player, board: &str) -> StatusCode {
    let url = app.url(&format!("/api/boards/{board}/entrants"));
    app.client.post(url).bearer_auth(&player.token).send().await.unwrap().status()
}

async fn create_league(app: &TestApp) {
    let definition = json!({"id": "weekly", "name": "Weekly", "tiers": ["Bronze", "Silver"],
        "cohort_size": 5, "promote": 1, "demote": 1, "reset": "0 0 * * 1"});
    let (status, league) = app.admin(Method::POST, "/api/admin/leagues", Some(&definition)).await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
}

/// Players in tier 0 of the league's current period, as `GET /api/leagues/{id}` counts them.
async fn tier_players(app: &TestApp) -> i64 {
    let (_, league) = app.get_json("/api/leagues/weekly").await;
    league["tier_stats"][0]["players"].as_i64().unwrap()
}

async fn an_erased_player_leaves_everything_v3_added(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &FLAGS).await;
    let receiver = Receiver::start().await.unwrap();
    // Every delivery stays queued until the end.
    receiver.refuse_next(usize::MAX);
    let (status, hook) = app
        .admin(
            Method::POST,
            "/api/admin/webhooks",
            Some(&json!({"url": receiver.url(), "events": ["score.held", "period.closed"]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let webhook = hook["id"].as_i64().unwrap();
    create_league(&app).await;
    app.create_board(&json!({"id": "cup", "name": "Cup", "join_required": true, "max_entrants": 2})).await;
    app.create_board(&json!({"id": "guarded", "name": "Guarded", "hold_beyond": 100})).await;
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/2 * * * * *", "archive_periods": 30})).await;
    let (eve, ann, bob) = (app.register("eve").await, app.register("ann").await, app.register("bob").await);

    let (status, placed) = post(&app, &eve, "/api/leagues/weekly/scores", 50).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let (status, _) = post(&app, &ann, "/api/leagues/weekly/scores", 40).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(tier_players(&app).await, 2);
    assert_eq!(
        (join(&app, &eve, "cup").await, join(&app, &ann, "cup").await),
        (StatusCode::CREATED, StatusCode::CREATED)
    );
    assert_eq!(join(&app, &bob, "cup").await, StatusCode::CONFLICT, "full");
    let (status, held) = post(&app, &eve, "/api/boards/guarded/scores", 500).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    // Eve and Ann in one period of the sprint, which then closes: its
    // period.closed (refused, so queued) lists both.
    let sprint_period = loop {
        let (_, first) = post(&app, &eve, "/api/boards/sprint/scores", 9).await;
        let (_, second) = post(&app, &ann, "/api/boards/sprint/scores", 8).await;
        if first["period"] == second["period"] {
            break first["period"]["index"].as_i64().unwrap();
        }
    };
    let names_both = |r: &Received| {
        let data = &r.json()["data"];
        data["board"] == "sprint"
            && data["period"]["index"] == sprint_period
            && data["top"].as_array().unwrap().len() == 2
    };
    let started = Instant::now();
    while !receiver.received().iter().any(names_both) {
        assert!(started.elapsed() < Duration::from_secs(15), "the sprint's period.closed was never attempted");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }

    let request = app.client.delete(app.url("/api/me")).bearer_auth(&eve.token).json(&json!({"password": PASSWORD}));
    assert_eq!(request.send().await.unwrap().status(), StatusCode::NO_CONTENT);

    // The league: no member, no place in the cohort, no count.
    let (status, body) = app.get_json(&format!("/api/leagues/weekly/members/{}", eve.id)).await;
    assert_error(status, &body, 404, "user_not_found");
    let (_, cohort) =
        app.get_json(&format!("/api/leagues/weekly/cohorts/{}", placed["cohort"].as_str().unwrap())).await;
    let ids: Vec<i64> =
        cohort["entries"].as_array().unwrap().iter().map(|e| e["user"]["id"].as_i64().unwrap()).collect();
    assert_eq!((ids, &cohort["total_players"]), (vec![ann.id], &json!(1)), "{cohort}");
    assert_eq!(tier_players(&app).await, 1);
    let db_pool = db.connect().await;
    for table in ["league_members", "league_placements", "board_entrants", "held_posts"] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE user_id = ?");
        let left: i64 = sqlx::query_scalar(&sql).bind(eve.id).fetch_one(&db_pool).await.unwrap();
        assert_eq!(left, 0, "{table} keeps the erased player");
    }
    // The tournament: her place is free.
    let (_, cup) = app.get_json("/api/boards/cup").await;
    assert_eq!(cup["entrants"], 1, "{cup}");
    assert_eq!(join(&app, &bob, "cup").await, StatusCode::CREATED);
    // The review queue: gone.
    let (_, queue) = app.admin(Method::GET, "/api/admin/held", None).await;
    assert_eq!(queue["held"], json!([]), "{queue}");

    // The outbox: her score.held is not sent; the period's list is sent
    // without her, Ann keeping her rank as at the close.
    let (_, log) = app.admin(Method::GET, &format!("/api/admin/webhooks/{webhook}/deliveries?limit=100"), None).await;
    let events: Vec<&str> =
        log["deliveries"].as_array().unwrap().iter().map(|d| d["event"].as_str().unwrap()).collect();
    assert!(!events.contains(&"score.held"), "{log}");
    receiver.refuse_next(0);
    let lists_ann_alone = |r: &Received| {
        let data = &r.json()["data"];
        data["board"] == "sprint"
            && data["period"]["index"] == sprint_period
            && data["top"].as_array().unwrap().len() == 1
            && data["top"][0]["user"]["id"] == ann.id
            && data["top"][0]["rank"] == 2
    };
    let started = Instant::now();
    while !receiver.received().iter().any(lists_ann_alone) {
        assert!(started.elapsed() < Duration::from_secs(40), "the sprint's period.closed was not sent without her");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let received = receiver.received();
    assert!(received.iter().all(|r| r.event != "score.held" || r.answered != 200), "her held post was sent");
    let eve_named_since_erasure = received
        .iter()
        .filter(|r| r.answered == 200)
        .any(|r| r.json()["data"]["user_id"] == eve.id || r.body.contains(&format!("\"id\":{},", eve.id)));
    assert!(!eve_named_since_erasure, "a delivered event names the erased player");
}

async fn a_banned_player_frees_places_and_is_unknown(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &FLAGS).await;
    create_league(&app).await;
    app.create_board(&json!({"id": "cup", "name": "Cup", "join_required": true, "max_entrants": 1})).await;
    let (ann, bob) = (app.register("ann").await, app.register("bob").await);
    let (status, _) = post(&app, &ann, "/api/leagues/weekly/scores", 40).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(join(&app, &ann, "cup").await, StatusCode::CREATED);
    assert_eq!(join(&app, &bob, "cup").await, StatusCode::CONFLICT);

    let ban = format!("/api/admin/users/{}/ban", ann.id);
    assert_eq!(app.admin(Method::POST, &ban, Some(&json!({"reason": "bot"}))).await.0, StatusCode::OK);
    let member = format!("/api/leagues/weekly/members/{}", ann.id);
    let (status, body) = app.get_json(&member).await;
    assert_error(status, &body, 404, "user_not_found");
    let (_, cup) = app.get_json("/api/boards/cup").await;
    assert_eq!(cup["entrants"], 0, "{cup}");
    assert_eq!(join(&app, &bob, "cup").await, StatusCode::CREATED, "the banned player's place is free");

    // Unbanned: known again, her place kept (the cup is over its cap now).
    assert_eq!(app.admin(Method::DELETE, &ban, None).await.0, StatusCode::OK);
    let (status, body) = app.get_json(&member).await;
    assert_eq!((status, &body["tier"]["index"]), (StatusCode::OK, &json!(0)), "{body}");
    let (_, cup) = app.get_json("/api/boards/cup").await;
    assert_eq!(cup["entrants"], 2, "{cup}");
}
