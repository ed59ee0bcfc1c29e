//! Webhooks (v3): registration and its refusals, `period.closed` on an idle
//! service (once, across instances), `score.held`, retries with the same id
//! and body, a hung receiver that slows nothing, a SIGKILL between commit
//! and send, and the documented Python and Node verifiers.

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use hiscore_bench::webhooks::{Received, Receiver};

use crate::backend_tests;
use crate::crash::{start_server, wait_until_healthy};
use crate::helpers::{
    assert_error, json_of, spawn_app_on, spawn_instances, switch_on, Backend, TestApp, TestDatabase, ADMIN, PASSWORD,
};

backend_tests!(
    webhooks_are_managed_and_internal_urls_are_refused,
    closed_periods_arrive_once_signed_and_on_time_without_traffic,
    a_refused_delivery_is_retried_with_the_same_id_and_body,
    a_hung_receiver_slows_no_post_or_read,
    a_delivery_survives_a_sigkill_between_commit_and_send,
    changes_to_a_closed_period_are_announced,
    a_full_period_closes_and_a_failing_one_stops_no_other,
    held_posts_in_a_loop_hold_back_no_result,
);

const PRIVATE_OK: [&str; 3] = ["--admin-token", ADMIN, "--webhook-allow-private"];

/// Instances on one database that may send to 127.0.0.1: two where they
/// share Redis, else one.
async fn instances(backend: &Backend, db: &TestDatabase) -> Vec<TestApp> {
    spawn_instances(backend, db, 2, &PRIVATE_OK).await
}

/// Registers a webhook for `events` at the receiver, which then checks
/// every signature with its secret.
async fn subscribe(app: &TestApp, receiver: &Receiver, events: &[&str]) -> i64 {
    let (status, body) =
        app.admin(Method::POST, "/api/admin/webhooks", Some(&json!({"url": receiver.url(), "events": events}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    receiver.set_secret(body["secret"].as_str().unwrap());
    body["id"].as_i64().unwrap()
}

/// Waits until `done` holds for what the receiver got (or `limit` passes).
async fn received_until(receiver: &Receiver, limit: Duration, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
    let started = Instant::now();
    loop {
        let received = receiver.received();
        if done(&received) || started.elapsed() > limit {
            return received;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
}

fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn rfc3339_millis(text: &Value) -> i64 {
    hiscore::domain::Timestamp::parse_rfc3339(text.as_str().unwrap()).unwrap().millis()
}

async fn webhooks_are_managed_and_internal_urls_are_refused(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let create = |body: Value| {
        let app = &app;
        async move { app.admin(Method::POST, "/api/admin/webhooks", Some(&body)).await }
    };
    // Inside the network, unless the operator allows it.
    for url in [
        "http://127.0.0.1:9000/hook",
        "http://localhost/hook",
        "http://10.0.0.7/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:0:7f00:1]/",
        "http://[64:ff9b::a00:1]/",
        "http://[2002:a00:1::]/",
        "http://198.18.0.1/",
        "http://[fec0::1]/",
        "ftp://93.184.215.14/",
        "not a url",
    ] {
        let (status, body) = create(json!({"url": url, "events": ["period.closed"]})).await;
        assert_error(status, &body, 422, "invalid_url");
    }
    // Too long as stored (each é is six characters once encoded): 422,
    // never the database's refusal.
    let long = format!("https://93.184.215.14/{}", "é".repeat(600));
    let (status, body) = create(json!({"url": long, "events": ["period.closed"]})).await;
    assert_error(status, &body, 422, "invalid_url");
    for events in [json!([]), json!(["period.opened"]), json!("period.closed"), json!([1])] {
        let (status, body) = create(json!({"url": "https://93.184.215.14/hook", "events": events})).await;
        assert_error(status, &body, 422, "invalid_events");
    }
    let (status, created) =
        create(json!({"url": "https://93.184.215.14/hook", "events": ["score.held", "period.closed", "score.held"]}))
            .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"), "{created}");
    assert_eq!(created["events"], json!(["period.closed", "score.held"]));
    let id = created["id"].as_i64().unwrap();

    let (status, list) = app.admin(Method::GET, "/api/admin/webhooks", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["webhooks"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["webhooks"][0]["url"], "https://93.184.215.14/hook");
    assert!(list["webhooks"][0].get("secret").is_none(), "the secret is shown only at creation: {list}");
    let (status, log) = app.admin(Method::GET, &format!("/api/admin/webhooks/{id}/deliveries"), None).await;
    assert_eq!((status, &log), (StatusCode::OK, &json!({"deliveries": [], "next_before": null})));
    let (status, body) = app.admin(Method::GET, &format!("/api/admin/webhooks/{id}/deliveries?before=0"), None).await;
    assert_error(status, &body, 400, "invalid_before");
    let (status, body) = json_of(app.client.get(app.url("/api/admin/webhooks")).send().await.unwrap()).await;
    assert_error(status, &body, 401, "admin_token_required");

    let (status, _) = app.admin(Method::DELETE, &format!("/api/admin/webhooks/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/webhooks/{id}"), None).await;
    assert_error(status, &body, 404, "webhook_not_found");
    let (status, body) = app.admin(Method::GET, &format!("/api/admin/webhooks/{id}/deliveries"), None).await;
    assert_error(status, &body, 404, "webhook_not_found");

    // Initialize wipes webhooks.
    create(json!({"url": "https://93.184.215.14/other", "events": ["period.closed"]})).await;
    let (status, _) = app.initialize(ADMIN, &json!({"users": 0, "scores": 0})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, list) = app.admin(Method::GET, "/api/admin/webhooks", None).await;
    assert_eq!(list["webhooks"], json!([]));
}

/// A board that resets every 2 s, two players' posts in one period, then
/// no request at all: every period that ended is delivered exactly once
/// (by id and by period, whichever instance closed and sent it), signed,
/// within 5 s of its end, with the period's results.
async fn closed_periods_arrive_once_signed_and_on_time_without_traffic(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let receiver = Receiver::start().await.unwrap();
    let webhook = subscribe(app, &receiver, &["period.closed"]).await;
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/2 * * * * *", "archive_periods": 20})).await;
    let (ann, bob) = (app.register("ann").await, app.register("bob").await);
    let first = app.post_board_score(&ann, "sprint", 70).await;
    let scored_period = first["period"]["index"].as_i64().unwrap();
    let (status, second) =
        apps[apps.len() - 1].post_board_score_raw(&bob.token, "sprint", &json!({"score": 90}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let both_in_one = second["period"]["index"] == first["period"]["index"];

    // Idle from here: only the receiver hears from the service.
    let wait_from = Instant::now();
    let received = received_until(&receiver, Duration::from_secs(20), |got| {
        wait_from.elapsed() > Duration::from_secs(9)
            && got.iter().any(|r| r.json()["data"]["period"]["index"].as_i64() > Some(scored_period + 2))
    })
    .await;
    let closed: Vec<&Received> = received.iter().filter(|r| r.json()["data"]["board"] == "sprint").collect();
    assert!(closed.len() >= 3, "{} period.closed deliveries in 9 s of a board resetting every 2 s", closed.len());
    let mut ids = HashSet::new();
    let mut periods: HashMap<i64, Value> = HashMap::new();
    for delivery in &closed {
        assert_eq!(delivery.verified, Some(true), "a bad signature: {delivery:?}");
        assert_eq!(delivery.event, "period.closed");
        let body = delivery.json();
        assert_eq!(body["id"].as_str(), Some(delivery.id.as_str()), "the header and the body name one delivery");
        assert!(ids.insert(delivery.id.clone()), "delivery {} arrived twice", delivery.id);
        let period = body["data"]["period"]["index"].as_i64().unwrap();
        assert!(periods.insert(period, body["data"].clone()).is_none(), "period {period} closed twice");
        let late = millis(delivery.at) - rfc3339_millis(&body["data"]["period"]["end"]);
        assert!((0..5_000).contains(&late), "period {period} arrived {late} ms after its end");
    }
    // No period skipped between the first and the last delivered.
    let (low, high) = (*periods.keys().min().unwrap(), *periods.keys().max().unwrap());
    assert_eq!(periods.len() as i64, high - low + 1, "periods delivered: {:?}", periods.keys());
    let results = &periods[&scored_period];
    let expected_players = if both_in_one { 2 } else { 1 };
    assert_eq!(results["players"], expected_players, "{results}");
    assert_eq!(results["top"][0]["user"]["id"], if both_in_one { bob.id } else { ann.id }, "{results}");
    assert_eq!(results["top"][0]["rank"], 1, "{results}");

    let (status, log) =
        app.admin(Method::GET, &format!("/api/admin/webhooks/{webhook}/deliveries?limit=100"), None).await;
    assert_eq!(status, StatusCode::OK);
    for delivery in log["deliveries"].as_array().unwrap().iter().filter(|d| ids.contains(d["id"].as_str().unwrap())) {
        assert_eq!(
            (&delivery["status"], &delivery["attempts"], &delivery["last_status"]),
            (&json!("delivered"), &json!(1), &json!(200)),
            "{delivery}"
        );
    }
}

/// A board that holds posts above 100; the receiver refuses twice: the
/// third attempt delivers, every attempt with the same id and body, after
/// growing delays, and the log says so.
async fn a_refused_delivery_is_retried_with_the_same_id_and_body(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &PRIVATE_OK).await;
    let receiver = Receiver::start().await.unwrap();
    let webhook = subscribe(&app, &receiver, &["score.held"]).await;
    receiver.refuse_next(2);
    app.create_board(&json!({"id": "guarded", "name": "Guarded", "hold_beyond": 100})).await;
    let player = app.register("suspect").await;
    let (status, held) = app.post_board_score_raw(&player.token, "guarded", &json!({"score": 5000}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");

    let attempts = received_until(&receiver, Duration::from_secs(30), |got| got.len() >= 3).await;
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    assert_eq!(attempts.iter().map(|a| a.answered).collect::<Vec<_>>(), [500, 500, 200]);
    for attempt in &attempts {
        assert_eq!((&attempt.id, &attempt.body), (&attempts[0].id, &attempts[0].body), "attempts differ");
        assert_eq!(attempt.verified, Some(true));
    }
    let gaps: Vec<i64> = attempts.windows(2).map(|pair| millis(pair[1].at) - millis(pair[0].at)).collect();
    assert!(gaps[0] <= 5_500, "the first retry within 5 s: {gaps:?}");
    assert!(gaps[1] > gaps[0], "delays grow: {gaps:?}");
    let data = &attempts[0].json()["data"];
    assert_eq!(
        (&data["board"], &data["user_id"], &data["rule"], &data["score"]["score"], &data["score"]["id"]),
        (&json!("guarded"), &json!(player.id), &json!("hold_beyond"), &json!(5000), &held["score"]["id"]),
        "{data}"
    );
    let (_, log) = app.admin(Method::GET, &format!("/api/admin/webhooks/{webhook}/deliveries"), None).await;
    let delivery = &log["deliveries"][0];
    assert_eq!(
        (&delivery["id"], &delivery["event"], &delivery["status"], &delivery["attempts"], &delivery["last_status"]),
        (&json!(attempts[0].id), &json!("score.held"), &json!("delivered"), &json!(3), &json!(200)),
        "{log}"
    );
    assert_eq!(delivery["next_attempt_at"], Value::Null);

    // The janitor deletes old delivered rows and keeps pending ones (here
    // with a cutoff in the future, as if 30 days had passed).
    receiver.refuse_next(1_000);
    let (status, body) = app.post_board_score_raw(&player.token, "guarded", &json!({"score": 6000}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    received_until(&receiver, Duration::from_secs(10), |got| got.len() >= 4).await;
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = hiscore::store::Store::open(&db.url, 1, counter, Default::default()).await.unwrap();
    let later = hiscore::domain::Timestamp::now().plus_millis(60_000);
    assert_eq!(store.purge_deliveries(later, 1).await.unwrap(), 1, "the delivered one, in chunks of one");
    let (_, log) = app.admin(Method::GET, &format!("/api/admin/webhooks/{webhook}/deliveries"), None).await;
    let left: Vec<(&Value, &Value)> =
        log["deliveries"].as_array().unwrap().iter().map(|d| (&d["id"], &d["status"])).collect();
    assert_eq!(left.len(), 1, "{log}");
    assert_eq!(left[0].1, "pending", "{log}");
    assert_ne!(left[0].0, &json!(attempts[0].id), "{log}");
}

/// The receiver takes the delivery and never answers: meanwhile posts
/// (held ones too, which write more events) and reads go on.
async fn a_hung_receiver_slows_no_post_or_read(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &PRIVATE_OK).await;
    let receiver = Receiver::start().await.unwrap();
    subscribe(&app, &receiver, &["score.held"]).await;
    receiver.hold();
    app.create_board(&json!({"id": "guarded", "name": "Guarded", "hold_beyond": 100})).await;
    let player = app.register("patient").await;
    let (status, _) = app.post_board_score_raw(&player.token, "guarded", &json!({"score": 500}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let hung = received_until(&receiver, Duration::from_secs(10), |got| !got.is_empty()).await;
    assert_eq!(hung.len(), 1, "the delivery reached the receiver");

    let work = async {
        for score in 1..=20 {
            let (status, body) =
                app.post_board_score_raw(&player.token, "guarded", &json!({"score": score * 10}), None).await;
            assert!(status == StatusCode::CREATED || status == StatusCode::ACCEPTED, "{status} {body}");
            let page = app.ranking("guarded", "limit=5").await;
            assert_eq!(page["total_players"], 1, "{page}");
        }
    };
    // Well inside the sender's 10 s timeout, so the delivery is still hung
    // while all of this runs.
    actix_web::rt::time::timeout(Duration::from_secs(8), work).await.expect("posts and reads waited for the receiver");
    assert_eq!(receiver.received().iter().filter(|r| r.answered == 200).count(), receiver.received().len());
    receiver.release();
}

/// The service is SIGKILLed while its delivery is in flight (the receiver
/// holds it): the event had committed with its post, so a restarted
/// service sends it again, with the same id, once the claim runs out.
async fn a_delivery_survives_a_sigkill_between_commit_and_send(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let flags = ["--admin-token", ADMIN, "--webhook-allow-private"];
    let mut server = start_server(&db, port, &flags);
    wait_until_healthy(&client, &base).await;
    let receiver = Receiver::start().await.unwrap();
    let admin = |method: Method, path: &str, body: Value| {
        client.request(method, format!("{base}{path}")).bearer_auth(ADMIN).json(&body).send()
    };
    let (_, hook) = json_of(
        admin(Method::POST, "/api/admin/webhooks", json!({"url": receiver.url(), "events": ["score.held"]}))
            .await
            .unwrap(),
    )
    .await;
    receiver.set_secret(hook["secret"].as_str().unwrap());
    let board = json!({"id": "guarded", "name": "Guarded", "hold_beyond": 100});
    assert_eq!(admin(Method::POST, "/api/admin/boards", board).await.unwrap().status(), StatusCode::CREATED);
    let (_, player) = json_of(
        client
            .post(format!("{base}/api/users"))
            .json(&json!({"login_name": "killed", "password": PASSWORD}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    receiver.hold();
    let posted = client
        .post(format!("{base}/api/boards/guarded/scores"))
        .bearer_auth(player["token"].as_str().unwrap())
        .json(&json!({"score": 999}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), StatusCode::ACCEPTED);
    let first = received_until(&receiver, Duration::from_secs(10), |got| !got.is_empty()).await;
    assert_eq!(first.len(), 1, "the delivery was in flight");
    server.kill().unwrap(); // SIGKILL mid-send: the answer never reaches it
    server.wait().unwrap();
    receiver.release();

    let mut server = start_server(&db, port, &flags);
    wait_until_healthy(&client, &base).await;
    let again = received_until(&receiver, Duration::from_secs(40), |got| got.len() >= 2).await;
    assert_eq!(again.len(), 2, "the delivery was not sent again after the restart");
    assert_eq!((&again[1].id, &again[1].body), (&again[0].id, &again[0].body));
    assert_eq!(again[1].verified, Some(true));
    server.kill().unwrap();
    server.wait().unwrap();
}

/// A deleted post and a ban that change a closed period send
/// `period.amended`; a change to the open period sends nothing.
async fn changes_to_a_closed_period_are_announced(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &PRIVATE_OK).await;
    let receiver = Receiver::start().await.unwrap();
    subscribe(&app, &receiver, &["period.closed", "period.amended"]).await;
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/2 * * * * *"})).await;
    let (ann, bob) = (app.register("ann").await, app.register("bob").await);
    let post = app.post_board_score(&ann, "sprint", 70).await;
    let period = post["period"]["index"].as_i64().unwrap();
    let (status, _) = app.post_board_score_raw(&bob.token, "sprint", &json!({"score": 60}), None).await;
    assert_eq!(status, StatusCode::CREATED);
    let is_closed = |r: &Received| r.event == "period.closed" && r.json()["data"]["period"]["index"] == period;
    received_until(&receiver, Duration::from_secs(10), |got| got.iter().any(is_closed)).await;

    // Bob posts in the open period, then both changes land on the closed one.
    let (status, _) = app.post_board_score_raw(&bob.token, "sprint", &json!({"score": 61}), None).await;
    assert_eq!(status, StatusCode::CREATED);
    let score_id = post["score"]["id"].as_i64().unwrap();
    let (status, _) = app.admin(Method::DELETE, &format!("/api/admin/boards/sprint/scores/{score_id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) =
        app.admin(Method::POST, &format!("/api/admin/users/{}/ban", bob.id), Some(&json!({"reason": "cheat"}))).await;
    assert_eq!(status, StatusCode::OK);
    let amended = received_until(&receiver, Duration::from_secs(10), |got| {
        got.iter().filter(|r| r.event == "period.amended").count() >= 2
    })
    .await;
    let mut changes: Vec<(i64, String, i64)> = amended
        .iter()
        .filter(|r| r.event == "period.amended")
        .map(|r| {
            let data = r.json()["data"].clone();
            assert_eq!((&data["board"], r.verified), (&json!("sprint"), Some(true)), "{data}");
            (
                data["period"]["index"].as_i64().unwrap(),
                data["reason"].as_str().unwrap().to_owned(),
                data["user_id"].as_i64().unwrap(),
            )
        })
        .collect();
    changes.sort();
    // Bob's ban touches his entry of the open period too: no event for it
    // (unless that period closed meanwhile, which its own close reports).
    changes.retain(|(index, ..)| *index == period);
    assert_eq!(changes, [(period, "ban".to_owned(), bob.id), (period, "score_deleted".to_owned(), ann.id)]);
}

/// The metadata of a post at the contract's maximum: 1 KiB serialized.
pub fn largest_metadata(tag: usize) -> Value {
    let value = json!({"m": ""}).to_string();
    let filler = format!("{tag:04}{}", "x".repeat(1024 - value.len() - 4));
    let metadata = json!({"m": filler});
    assert_eq!(metadata.to_string().len(), 1024);
    metadata
}

/// Makes the database refuse to close the periods of `board` (a trigger:
/// the kind of failure a full column or a lost row lock is), or lets it
/// again (`refuse: false`).
async fn refuse_closing(db: &TestDatabase, board: &str, refuse: bool) {
    let pool = db.connect().await;
    let sqlite = db.url.starts_with("sqlite:");
    let number: i64 =
        sqlx::query_scalar("SELECT number FROM boards WHERE id = ?").bind(board).fetch_one(&pool).await.unwrap();
    let sql = match (refuse, sqlite) {
        (true, true) => format!(
            "CREATE TRIGGER refuse_closing BEFORE UPDATE OF closed_at ON board_periods \
             WHEN NEW.board = {number} AND NEW.closed_at IS NOT NULL BEGIN SELECT RAISE(ABORT, 'refused'); END"
        ),
        (true, false) => format!(
            "CREATE TRIGGER refuse_closing BEFORE UPDATE ON board_periods FOR EACH ROW \
             IF NEW.board = {number} AND NEW.closed_at IS NOT NULL THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'; END IF"
        ),
        (false, _) => "DROP TRIGGER refuse_closing".to_owned(),
    };
    sqlx::raw_sql(&sql).execute(&pool).await.unwrap();
    pool.close().await;
}

/// Issue 39's reproduction: ten players whose posts carry 1 KiB of
/// metadata and names of 32 four-byte characters fill a period's
/// `period.closed` (about 12 KB: once too long for MariaDB's column,
/// which then stopped every close for good). It arrives with all ten.
/// Then one board's closes fail (the database refuses them): the other
/// board's periods still close on time, the failures are counted, and
/// once the database takes them again the failed periods close too.
async fn a_full_period_closes_and_a_failing_one_stops_no_other(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let apps = instances(&backend, &db).await;
    let app = &apps[0];
    let receiver = Receiver::start().await.unwrap();
    subscribe(app, &receiver, &["period.closed"]).await;
    for id in ["full", "other"] {
        app.create_board(&json!({"id": id, "name": id, "reset": "*/3 * * * * *", "archive_periods": 50})).await;
    }
    // Posts in one period: start just after a reset.
    let mut players = Vec::new();
    for n in 0..10 {
        let name = "\u{1D400}".repeat(31) + &char::from_u32(0x1D400 + n).unwrap().to_string();
        let body = json!({"login_name": format!("player{n}"), "password": PASSWORD, "display_name": name});
        let (status, registered) = json_of(app.register_raw(&body).await).await;
        assert_eq!(status, StatusCode::CREATED, "{registered}");
        players.push(registered["token"].as_str().unwrap().to_owned());
    }
    let mut period = None;
    while period.is_none() {
        let mut periods = HashSet::new();
        for (n, token) in players.iter().enumerate() {
            let app = &apps[n % apps.len()];
            let body = json!({"score": 100 + n, "metadata": largest_metadata(n)});
            let (status, posted) = app.post_board_score_raw(token, "full", &body, None).await;
            assert_eq!(status, StatusCode::CREATED, "{posted}");
            periods.insert(posted["period"]["index"].as_i64().unwrap());
        }
        // All ten in one period (else a reset fell among them: again).
        period = (periods.len() == 1).then(|| periods.into_iter().next().unwrap());
    }
    let period = period.unwrap();
    let full_closed =
        |r: &Received| r.json()["data"]["board"] == "full" && r.json()["data"]["period"]["index"] == period;
    let received = received_until(&receiver, Duration::from_secs(15), |got| got.iter().any(full_closed)).await;
    let closed = received.iter().find(|r| full_closed(r)).expect("the full period's period.closed");
    let data = &closed.json()["data"];
    let top = data["top"].as_array().unwrap();
    assert_eq!((data["players"].as_i64(), top.len()), (Some(10), 10), "{data}");
    assert_eq!(top[0]["metadata"], largest_metadata(9));
    assert_eq!(top[9]["metadata"], largest_metadata(0));
    assert!(closed.body.len() > 10_000, "{} bytes", closed.body.len());

    // From here `full` cannot close: `other` still does, period after period.
    refuse_closing(&db, "full", true).await;
    let refused_from = Instant::now();
    let other_after = |got: &[Received], since: i64| {
        got.iter().filter(|r| r.json()["data"]["board"] == "other" && millis(r.at) > since).count()
    };
    let since = millis(SystemTime::now());
    received_until(&receiver, Duration::from_secs(20), |got| other_after(got, since) >= 3).await;
    assert!(other_after(&receiver.received(), since) >= 3, "`other` stopped closing while `full` failed");
    let mut failures = 0.0;
    for app in &apps {
        failures += app.metric(r#"hiscore_job_failures_total{job="close_period"}"#).await;
    }
    assert!(failures >= 1.0, "the failed closes are counted");
    let full_since = |got: &[Received]| {
        got.iter().filter(|r| r.json()["data"]["board"] == "full" && millis(r.at) > since + 3_000).count()
    };
    assert_eq!(full_since(&receiver.received()), 0, "`full` closed although refused");

    // Taken again: the refused periods close (after their backoff).
    refuse_closing(&db, "full", false).await;
    let refused_for = refused_from.elapsed();
    let received =
        received_until(&receiver, refused_for * 2 + Duration::from_secs(10), |got| full_since(got) >= 2).await;
    assert!(full_since(&received) >= 2, "the refused periods of `full` never closed");
    let mut indexes: Vec<i64> = received
        .iter()
        .filter(|r| r.json()["data"]["board"] == "full")
        .map(|r| r.json()["data"]["period"]["index"].as_i64().unwrap())
        .collect();
    let delivered = indexes.len();
    indexes.sort_unstable();
    indexes.dedup();
    assert_eq!(indexes.len(), delivered, "a period of `full` closed twice: {indexes:?}");
}

/// Issue 39: players holding posts in a loop outpaced delivery, and a
/// `period.closed` waited behind every `score.held` in one queue (and a
/// receiver that hangs held every send). Now: a receiver that hangs, 60
/// held posts queued before a period's end, and the period's
/// `period.closed` still arrives within the contract's 5 s; the held posts'
/// backlog for the webhook stops at its bound (`--webhook-held-backlog`).
async fn held_posts_in_a_loop_hold_back_no_result(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &[&PRIVATE_OK[..], &["--webhook-held-backlog", "40"]].concat()).await;
    let receiver = Receiver::start().await.unwrap();
    let webhook = subscribe(&app, &receiver, &["score.held", "period.closed"]).await;
    receiver.hold();
    app.create_board(&json!({"id": "guarded", "name": "Guarded", "hold_beyond": 10})).await;
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/4 * * * * *", "archive_periods": 20})).await;
    let cheat = app.register("cheat").await;
    for score in 0..60 {
        let (status, _) = app.post_board_score_raw(&cheat.token, "guarded", &json!({"score": 100 + score}), None).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let posted = app.post_board_score(&cheat, "sprint", 5).await;
    let period = posted["period"]["index"].as_i64().unwrap();
    let end = rfc3339_millis(&posted["period"]["end"]);
    let closed = |r: &Received| r.event == "period.closed" && r.json()["data"]["period"]["index"] == period;
    let received = received_until(&receiver, Duration::from_secs(20), |got| got.iter().any(closed)).await;
    let arrival = received.iter().find(|r| closed(r)).expect("the period's period.closed, behind the held posts");
    let late = millis(arrival.at) - end;
    assert!((0..5_000).contains(&late), "period.closed arrived {late} ms after the end");

    // The held posts' backlog stopped at its bound; the held queue has them all.
    let pool = db.connect().await;
    let queued: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE webhook = ? AND event = 'score.held'")
            .bind(webhook)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(queued, 40, "score.held deliveries queued");
    let (_, held) = app.admin(Method::GET, "/api/admin/held?limit=100", None).await;
    assert_eq!(held["held"].as_array().unwrap().len(), 60);
    receiver.release();
}

/// The code blocks of docs/WEBHOOKS.md between `<!-- {marker} -->` and
/// `<!-- end -->`, fences removed.
fn documented(marker: &str) -> String {
    let doc = include_str!("../../docs/WEBHOOKS.md");
    let start = doc.find(&format!("<!-- {marker} -->")).expect("marker");
    let block = &doc[start..];
    let block = &block[..block.find("<!-- end -->").expect("end marker")];
    block.lines().filter(|line| !line.starts_with("```") && !line.starts_with("<!--")).collect::<Vec<_>>().join("\n")
}

/// Runs the Python and Node verifiers exactly as docs/WEBHOOKS.md shows
/// them on a delivery the service made: both accept it, and both refuse
/// it with another secret. Needs `python3` and `node` (`.ci/run` sets
/// TEST_REQUIRE_NODE=1, which turns a missing one into a failure).
#[actix_web::test]
async fn the_documented_verifiers_check_a_real_delivery() {
    let (Some(_), Some(_)) = (crate::external::tool("python3"), crate::external::tool("node")) else {
        assert!(!switch_on("TEST_REQUIRE_NODE"), "TEST_REQUIRE_NODE=1 but python3 or node is missing");
        eprintln!("\nnote: python3 or node not installed: the webhook verifier test is SKIPPED\n");
        return;
    };
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &PRIVATE_OK).await;
    let receiver = Receiver::start().await.unwrap();
    let (_, hook) = app
        .admin(Method::POST, "/api/admin/webhooks", Some(&json!({"url": receiver.url(), "events": ["score.held"]})))
        .await;
    let secret = hook["secret"].as_str().unwrap().to_owned();
    app.create_board(&json!({"id": "guarded", "name": "Guarded", "hold_beyond": 0})).await;
    let player = app.register("verified").await;
    // Metadata with non-ASCII text: the MAC is over the raw bytes.
    let body = json!({"score": 7, "metadata": {"note": "été ✓"}});
    let (status, _) = app.post_board_score_raw(&player.token, "guarded", &body, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let delivery = received_until(&receiver, Duration::from_secs(10), |got| !got.is_empty()).await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let body_file = dir.path().join("body");
    std::fs::write(&body_file, &delivery.body).unwrap();

    let python = format!(
        "{}\nimport os, sys\nbody = open(os.environ['BODY_FILE'], 'rb').read()\n\
         sys.exit(0 if verify(os.environ['SECRET'], os.environ['SIGNATURE'], body) else 1)\n",
        documented("verify-python")
    );
    let node = format!(
        "{}\nconst body = require('fs').readFileSync(process.env.BODY_FILE);\n\
         process.exit(verify(process.env.SECRET, process.env.SIGNATURE, body) ? 0 : 1);\n",
        documented("verify-node")
    );
    for (program, flag, code) in [("python3", "-c", &python), ("node", "-e", &node)] {
        for (key, expected) in [(secret.as_str(), true), ("whsec_wrong", false)] {
            let accepted = Command::new(program)
                .args([flag, code])
                .env("BODY_FILE", &body_file)
                .env("SECRET", key)
                .env("SIGNATURE", &delivery.signature)
                .status()
                .unwrap()
                .success();
            assert_eq!(accepted, expected, "{program} with secret {key}");
        }
    }
}
