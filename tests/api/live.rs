//! Live pages (`…/live`): server-sent events of a page or an around-me
//! window, pushed again when a post on any instance changes it.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, ranks_and_ids, spawn_app_on, Backend, Events, TestDatabase, ADMIN};

backend_tests!(
    a_live_page_follows_posts_made_on_any_instance,
    a_live_window_ends_when_its_player_goes,
    a_current_live_page_moves_into_the_next_period,
    idle_windows_are_not_read_again,
    an_ended_period_and_an_idle_board_cost_no_page_reads,
);

/// How long a test waits for an event the contract promises within 1 s
/// (slack for a loaded CI machine).
const PROMISED: Duration = Duration::from_secs(5);

async fn a_live_page_follows_posts_made_on_any_instance(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let watched = spawn_app_on(&db, &[]).await;
    // With Redis, posts go through another instance; alone, through this one.
    let other = match backend {
        Backend::MariaDbRedis { .. } => Some(spawn_app_on(&db, &[]).await),
        _ => None,
    };
    let poster = other.as_ref().unwrap_or(&watched);
    let ann = poster.register("ann").await;
    let bob = poster.register("bob").await;
    poster.post_score(&ann, 50).await;

    let mut stream = Events::open(&watched, "/api/rankings/best/live?limit=5", None).await;
    let first = stream.next(PROMISED).await.expect("the first page at once");
    assert_eq!(first.name, "page");
    assert_eq!(ranks_and_ids(&first.data), [(1, ann.id)]);
    assert_eq!(first.data, watched.ranking("best", "limit=5").await, "the page the plain GET gives");
    let first_id = first.id.expect("a page has an id");

    poster.post_score(&bob, 70).await;
    let next = stream.next(PROMISED).await.expect("a page after the post");
    assert_eq!(ranks_and_ids(&next.data), [(1, bob.id), (2, ann.id)]);
    let next_id = next.id.expect("an id");
    assert_ne!(next_id, first_id);

    // A post that leaves the page as it is sends nothing.
    poster.post_score(&ann, 10).await;
    let quiet = stream.next(Duration::from_millis(1_500)).await;
    assert!(quiet.is_none(), "the page did not change, yet {quiet:?} came");
    drop(stream);

    // A reconnect naming the current page gets nothing until it changes,
    // then the new page; one naming an old page gets the current one at once.
    let mut resumed = Events::open(&watched, "/api/rankings/best/live?limit=5", Some(&next_id)).await;
    assert!(resumed.next(Duration::from_millis(800)).await.is_none(), "the client holds the current page");
    poster.post_score(&ann, 30).await; // best 50 → total changes, best does not
    let cee = poster.register("cee").await;
    poster.post_score(&cee, 60).await;
    let changed = resumed.next(PROMISED).await.expect("the change");
    assert_eq!(ranks_and_ids(&changed.data), [(1, bob.id), (2, cee.id), (3, ann.id)]);
    let mut stale = Events::open(&watched, "/api/rankings/best/live?limit=5", Some(&first_id)).await;
    let current = stale.next(PROMISED).await.expect("the current page at once");
    assert_eq!(current.id, changed.id, "any instance gives one page one id");
}

async fn a_live_window_ends_when_its_player_goes(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let ann = app.register("ann").await;
    let bob = app.register("bob").await;
    app.post_score(&ann, 50).await;
    app.post_score(&bob, 40).await;

    let mut stream = Events::open(&app, &format!("/api/rankings/total/around/{}/live?radius=1", bob.id), None).await;
    let first = stream.next(PROMISED).await.expect("the window at once");
    assert_eq!(ranks_and_ids(&first.data), [(1, ann.id), (2, bob.id)]);

    let (status, body) =
        app.admin(Method::POST, &format!("/api/admin/users/{}/ban", bob.id), Some(&json!({"reason": "test"}))).await;
    assert_eq!(status, 200, "{body}");
    let ended = stream.next(PROMISED).await.expect("an event when the player is gone");
    assert_eq!(ended.name, "ended");
    assert_eq!(ended.data["error"]["code"], "user_not_found");
    assert!(stream.next(Duration::from_millis(500)).await.is_none(), "the stream ends after `ended`");
}

/// At a reset the page of `current` follows its board into the new period
/// (the choice hiscore makes; its `period` says which).
async fn a_current_live_page_moves_into_the_next_period(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    app.create_board(&json!({"id": "ticking", "name": "Ticking", "reset": "* * * * * *", "archive_periods": 10})).await;
    let ann = app.register("ann").await;
    let posted = app.post_board_score(&ann, "ticking", 5).await;
    let mut stream = Events::open(&app, "/api/rankings/ticking/live", None).await;
    let first = stream.next(PROMISED).await.expect("the first page");
    let index = first.data["period"]["index"].as_i64().unwrap();
    assert!(index >= posted["period"]["index"].as_i64().unwrap());
    let next = stream.next(PROMISED).await.expect("a page at the reset");
    assert_eq!(next.data["period"]["index"], index + 1, "{}", next.data);
    assert_eq!(next.data["entries"], json!([]), "a new period starts empty");
}

/// Players each watching their own around-me window: while the board is
/// idle no watcher reads its window again, and with Redis the board's stamp
/// is read once per tick for all of them (4 reads a second, where each
/// watcher asking on its own would be 4 reads a second each); a post makes
/// them read again.
async fn idle_windows_are_not_read_again(backend: Backend) {
    const WATCHERS: usize = 12;
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--live-per-address", "50"]).await;
    let mut players = Vec::new();
    for n in 0..WATCHERS {
        let player = app.register(&format!("watcher{n}")).await;
        app.post_score(&player, 10 * n as i64 + 10).await;
        players.push(player);
    }
    let mut streams = Vec::new();
    for player in &players {
        let mut stream =
            Events::open(&app, &format!("/api/rankings/best/around/{}/live?radius=1", player.id), None).await;
        stream.next(PROMISED).await.expect("the window at once");
        streams.push(stream);
    }
    // Each watcher's first look reads (it has seen nothing yet); then quiet.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = live_reads(&app).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = live_reads(&app).await;
    assert_eq!(idle.page - before.page, 0, "an idle board's windows were read again");
    let stamps = idle.stamp - before.stamp;
    match backend {
        // 2 s of ticks: one read a tick is 8, one per watcher 12 × 8 = 96.
        Backend::MariaDbRedis { .. } => assert!((1..=16).contains(&stamps), "{stamps} stamp reads in 2 s"),
        _ => assert_eq!(stamps, 0, "no Redis, no stamps"),
    }

    app.post_score(&players[0], 1_000).await;
    for stream in &mut streams[..2] {
        stream.next(PROMISED).await.expect("the windows around the change move");
    }
    let after = live_reads(&app).await;
    assert!(after.page > idle.page, "a post makes the watchers read again");
}

/// Issue 39: live pages of an ended period (with Redis its stamp there is
/// gone) and of a custom board while another board takes posts (without
/// Redis the engine's version moves with every post anywhere) were read
/// again every tick. Now: many distinct pages of an ended period and of an
/// idle board, other posts elsewhere, and no page read; a ban that changes
/// the ended period, and a post to the idle board, and their pages come.
async fn an_ended_period_and_an_idle_board_cost_no_page_reads(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN, "--live-per-address", "50"]).await;
    app.create_board(&json!({"id": "sprint", "name": "Sprint", "reset": "*/2 * * * * *", "archive_periods": 50})).await;
    app.create_board(&json!({"id": "quiet", "name": "Quiet"})).await;
    app.create_board(&json!({"id": "busy", "name": "Busy"})).await;
    let (ann, bob) = (app.register("ann").await, app.register("bob").await);
    let ended = loop {
        let first = app.post_board_score(&ann, "sprint", 50).await;
        let second = app.post_board_score(&bob, "sprint", 40).await;
        if first["period"] == second["period"] {
            break first["period"]["index"].as_i64().unwrap();
        }
    };
    app.post_board_score(&ann, "quiet", 7).await;
    // Past the period's end (and its close).
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let mut streams = Vec::new();
    for limit in 1..=6 {
        let path = format!("/api/rankings/sprint/live?period={ended}&limit={limit}");
        streams.push(Events::open(&app, &path, None).await);
        let path = format!("/api/rankings/quiet/live?limit={limit}");
        streams.push(Events::open(&app, &path, None).await);
    }
    for stream in &mut streams {
        stream.next(PROMISED).await.expect("the page at once");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = live_reads(&app).await;
    // Posts elsewhere: the built-ins and another custom board.
    for score in 0..6 {
        app.post_score(&bob, score).await;
        app.post_board_score(&bob, "busy", score).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let idle = live_reads(&app).await;
    assert_eq!(idle.page - before.page, 0, "pages of an ended period or an idle board were read again");
    // One look a tick per watched board (two boards, ~8 ticks in 2 s),
    // never one per page watched.
    assert!(idle.stamp - before.stamp <= 32, "{} stamp reads", idle.stamp - before.stamp);

    // A ban changes the ended period: its pages come, within the promise.
    let ban = format!("/api/admin/users/{}/ban", ann.id);
    assert_eq!(app.admin(reqwest::Method::POST, &ban, Some(&json!({"reason": "test"}))).await.0, StatusCode::OK);
    for stream in streams.iter_mut().step_by(2) {
        let page = stream.next(PROMISED).await.expect("the ended period's page after the ban").data;
        assert_eq!(page["entries"][0]["user"]["id"], bob.id, "{page}");
    }
    assert_eq!(app.admin(reqwest::Method::DELETE, &ban, None).await.0, StatusCode::OK);
    app.post_board_score(&bob, "quiet", 9).await;
    for stream in streams.iter_mut().skip(1).step_by(2) {
        // (Ann's ban and unban showed on it first.)
        let mut page = stream.next(PROMISED).await.expect("the idle board's page after its post").data;
        while page["total_players"] != 2 {
            page = stream.next(PROMISED).await.expect("the idle board's page after its post").data;
        }
    }
}

/// `hiscore_live_reads_total` by what was read.
struct LiveReads {
    page: u64,
    stamp: u64,
}

async fn live_reads(app: &crate::helpers::TestApp) -> LiveReads {
    let metrics = app.get("/metrics").await.text().await.unwrap();
    let read = |what: &str| {
        let prefix = format!("hiscore_live_reads_total{{what=\"{what}\"}} ");
        metrics.lines().find_map(|line| line.strip_prefix(&prefix)?.parse().ok()).expect("the live reads metric")
    };
    LiveReads { page: read("page"), stamp: read("stamp") }
}

/// A watcher told that its board moved asks Redis, not a page lease: a
/// lease another request took just before the post would still hold when
/// the watcher reads, and it would publish nothing until the next post.
#[actix_web::test]
#[cfg_attr(not(all(hiscore_test_mysql, hiscore_test_redis)), ignore = "set TEST_MYSQL_URL and TEST_REDIS_URL")]
async fn a_live_page_follows_a_post_under_long_page_leases() {
    let db = TestDatabase::new(&Backend::mariadb_redis()).await;
    let lease = ["--page-lease-us", "1000000"];
    let (watched, poster) = (spawn_app_on(&db, &lease).await, spawn_app_on(&db, &lease).await);
    let ann = poster.register("ann").await;
    let bob = poster.register("bob").await;
    poster.post_score(&ann, 50).await;
    let mut stream = Events::open(&watched, "/api/rankings/best/live?limit=5", None).await;
    assert_eq!(ranks_and_ids(&stream.next(PROMISED).await.expect("the first page").data), [(1, ann.id)]);
    // The watched instance's copy of that page, leased just before the post.
    assert_eq!(ranks_and_ids(&watched.ranking("best", "limit=5").await), [(1, ann.id)]);
    poster.post_score(&bob, 70).await;
    let next = stream.next(PROMISED).await.expect("a page after the post");
    assert_eq!(ranks_and_ids(&next.data), [(1, bob.id), (2, ann.id)]);
}

#[actix_web::test]
async fn bad_live_requests_get_the_plain_json_errors() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    let (status, body) = json_of(app.get("/api/rankings/nope/live").await).await;
    assert_error(status, &body, 404, "board_not_found");
    let (status, body) = json_of(app.get("/api/rankings/best/live?limit=0").await).await;
    assert_error(status, &body, 400, "invalid_limit");
    let (status, body) = json_of(app.get("/api/rankings/best/around/12/live").await).await;
    assert_error(status, &body, 404, "user_not_found");
    let (status, body) = json_of(app.get("/api/rankings/best/live?period=7").await).await;
    assert_error(status, &body, 404, "period_not_found");
}

#[actix_web::test]
async fn live_pages_are_limited_per_address_and_per_instance() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--trust-forwarded-for", "--live-per-address", "2", "--live-max", "3"]).await;
    let open = |address: &'static str| {
        let request = app.client.get(app.url("/api/rankings/best/live")).header("X-Forwarded-For", address);
        async move { request.send().await.expect("request") }
    };
    let first = open("10.0.0.1").await;
    let second = open("10.0.0.1").await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let refused = open("10.0.0.1").await;
    assert!(refused.headers().contains_key("retry-after"));
    let (status, body) = json_of(refused).await;
    assert_error(status, &body, 429, "too_many_requests");
    let third = open("10.0.0.2").await;
    assert_eq!(third.status(), StatusCode::OK);
    let (status, body) = json_of(open("10.0.0.3").await).await;
    assert_error(status, &body, 503, "too_many_streams");

    // A closed stream gives its place back (the server notices at once or,
    // at the latest, when its next write fails).
    drop(first);
    let mut reopened = None;
    for _ in 0..100 {
        let response = open("10.0.0.1").await;
        if response.status() == StatusCode::OK {
            reopened = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(reopened.is_some(), "the place of a closed stream is given back");
    drop((second, third));
}

/// SIGTERM ends every live page at once: the instance drains instead of
/// waiting out its 30 s for streams that would never end by themselves.
#[actix_web::test]
async fn a_draining_instance_ends_its_live_pages() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_hiscore"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--database-url", &db.url])
        .args(["--static-dir", "/nonexistent"])
        .env("RUST_LOG", "error")
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = std::time::Instant::now();
    while reqwest::get(format!("{base}/readyz")).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "the server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = reqwest::Client::new();
    let mut stream = Events::open_url(&client, &format!("{base}/api/rankings/best/live"), None).await;
    stream.next(PROMISED).await.expect("the first page");

    let stopping = std::time::Instant::now();
    let terminated = std::process::Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(terminated.success());
    assert!(stream.next(Duration::from_secs(10)).await.is_none(), "the stream ends");
    let status = tokio::task::spawn_blocking(move || server.wait().unwrap()).await.unwrap();
    assert!(status.success(), "{status}");
    let took = stopping.elapsed();
    assert!(took < Duration::from_secs(20), "the stop waited {took:?}: a stream held it open");
}

/// Issue 39: streams had no maximum lifetime. One ends at
/// `--live-lifetime-secs`; the client's reconnect with `Last-Event-ID`
/// gets nothing until the page changes, then the new page.
#[actix_web::test]
async fn a_stream_ends_at_its_lifetime_and_a_reconnect_resumes() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--live-lifetime-secs", "2"]).await;
    let player = app.register("steady").await;
    app.post_score(&player, 10).await;
    let mut stream = Events::open(&app, "/api/rankings/best/live?limit=5", None).await;
    let first = stream.next(PROMISED).await.expect("the first page");
    assert!(stream.next(Duration::from_secs(4)).await.is_none(), "the stream ends at its lifetime");
    let mut again = Events::open(&app, "/api/rankings/best/live?limit=5", first.id.as_deref()).await;
    assert!(again.next(Duration::from_millis(1_000)).await.is_none(), "nothing new: no page");
    app.post_score(&player, 20).await;
    let next = again.next(PROMISED).await.expect("the changed page");
    assert_eq!(next.data["entries"][0]["score"], 20);
}

/// Issue 39: a client that never reads held its stream (and its place in
/// the limits) for as long as it kept the connection. With
/// `--write-timeout-secs 2`, a client that stops reading while pages keep
/// coming is dropped, and its place given back.
#[actix_web::test]
async fn a_client_that_never_reads_is_dropped() {
    use tokio::io::AsyncWriteExt as _;
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--write-timeout-secs", "2"]).await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut reader = socket.connect(address.parse().unwrap()).await.unwrap();
    let request = format!("GET /api/rankings/best/live?limit=100 HTTP/1.1\r\nHost: {address}\r\n\r\n");
    reader.write_all(request.as_bytes()).await.unwrap();
    let streams = |app: &crate::helpers::TestApp| {
        let app = app.client.get(app.url("/metrics"));
        async move {
            let text = app.send().await.unwrap().text().await.unwrap();
            text.lines().find_map(|line| line.strip_prefix("hiscore_live_streams ")?.parse::<i64>().ok()).unwrap()
        }
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(streams(&app).await, 1);
    // Pages of 100 entries, one per change, until the socket is full.
    let mut players = Vec::new();
    for n in 0..100 {
        let player = app.register(&format!("filler{n}")).await;
        app.post_score(&player, n).await;
        players.push(player);
    }
    let started = std::time::Instant::now();
    for round in 0.. {
        app.post_score(&players[round % players.len()], 1_000 + round as i64).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if streams(&app).await == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "a client that never reads keeps its stream");
    }
    drop(reader);
}
