//! SIGKILL while score posts are in flight: after a restart on the same
//! database every post that got a 201 is there, and no post is half there
//! (a post, the posts it fed, v4 `feeds`, and their partitions' copies commit
//! together or not at all).

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{json_of, Backend, TestDatabase, ADMIN, PASSWORD};

backend_tests!(a_killed_server_loses_no_acknowledged_post);

/// `hiscore serve` as a real process (the binary cargo built for this
/// test), with extra flags. Its errors go to `server_log(port)`.
pub(crate) fn start_server(db: &TestDatabase, port: u16, extra_args: &[&str]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hiscore"));
    command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--database-url", &db.url])
        .args(["--bcrypt-cost", "4", "--static-dir", "/nonexistent", "--workers", "2", "--rate-posts-per-player", "0"])
        .args(extra_args)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(server_log(port)).expect("create the server's log"));
    if let Some(redis) = &db.redis {
        command.args(["--redis-url", &redis.url, "--redis-prefix", &redis.prefix]);
    }
    command.spawn().expect("start hiscore")
}

/// Where `start_server` writes the errors of the server on `port`.
pub(crate) fn server_log(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hiscore-test-server-{port}.log"))
}

pub(crate) async fn wait_until_healthy(client: &reqwest::Client, base: &str) {
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("{base}/healthz")).send().await {
            if response.status() == 200 {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the server did not come up");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A post that got a 201: to `/api/scores` or to `crash-main`, with the
/// ids of the posts it fed.
#[derive(Debug, Clone)]
struct Acknowledged {
    builtin: bool,
    id: i64,
    score: i64,
    fed: Vec<i64>,
}

async fn a_killed_server_loses_no_acknowledged_post(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let mut server = start_server(&db, port, &["--admin-token", ADMIN]);
    wait_until_healthy(&client, &base).await;
    // `/api/scores` feeds one board, `crash-main` two (one resets every
    // second), each partitioned by the posts' `country`.
    for (id, extra) in [
        ("crash-season", json!({"operator": "total"})),
        ("crash-daily", json!({"reset": "* * * * * *", "archive_periods": 1000, "partition_by": "country"})),
        ("crash-weekly", json!({"partition_by": "country"})),
        ("crash-main", json!({"feeds": ["crash-daily", "crash-weekly"]})),
    ] {
        let mut definition = json!({"id": id, "name": id});
        definition.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let response = client.post(format!("{base}/api/admin/boards")).bearer_auth(ADMIN).json(&definition);
        assert_eq!(response.send().await.unwrap().status(), 201);
    }
    let feeds = json!({"feeds": ["crash-season"]});
    let response = client.patch(format!("{base}/api/admin/boards/best")).bearer_auth(ADMIN).json(&feeds);
    assert_eq!(response.send().await.unwrap().status(), 200);

    let mut tokens = Vec::new();
    for i in 0..4 {
        let response = client
            .post(format!("{base}/api/users"))
            .json(&json!({"login_name": format!("crash{i}"), "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        let (_, body) = json_of(response).await;
        tokens.push(body["token"].as_str().unwrap().to_owned());
    }

    // Eight posters until the server dies, half to `/api/scores`, half to
    // `crash-main`; every 201 is remembered with its fed posts' ids.
    let acknowledged: Arc<Mutex<Vec<Acknowledged>>> = Arc::default();
    let mut posters = Vec::new();
    for poster in 0..8 {
        let (client, base, token, acknowledged) =
            (client.clone(), base.clone(), tokens[poster % 4].clone(), Arc::clone(&acknowledged));
        let path = if poster < 4 { "/api/scores" } else { "/api/boards/crash-main/scores" };
        posters.push(actix_web::rt::spawn(async move {
            for n in 0.. {
                let score = (poster * 1000 + n) as i64;
                let body = json!({"score": score, "metadata": {"country": format!("C{}", n % 3)}});
                let sent = client.post(format!("{base}{path}")).bearer_auth(&token).json(&body).send().await;
                let Ok(response) = sent else { return };
                if response.status() != 201 {
                    return;
                }
                let Ok(body) = response.json::<serde_json::Value>().await else { return };
                let fed =
                    body["feeds"].as_array().unwrap().iter().map(|item| item["score_id"].as_i64().unwrap()).collect();
                let id = body["score"]["id"].as_i64().unwrap();
                acknowledged.lock().unwrap().push(Acknowledged { builtin: poster < 4, id, score, fed });
            }
        }));
    }
    while acknowledged.lock().unwrap().len() < 300 {
        actix_web::rt::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill().unwrap(); // SIGKILL: no draining, no final flush
    server.wait().unwrap();
    for poster in posters {
        let _ = poster.await;
    }

    let mut server = start_server(&db, port, &[]);
    wait_until_healthy(&client, &base).await;
    let pool = db.connect().await;
    let logged: Vec<(i64, i64)> = sqlx::query_as("SELECT id, score FROM scores").fetch_all(&pool).await.unwrap();
    let logged: HashMap<i64, i64> = logged.into_iter().collect();
    let board_logged: Vec<(i64, i64, Option<String>, Option<i64>)> =
        sqlx::query_as("SELECT id, score, via, via_post FROM board_scores").fetch_all(&pool).await.unwrap();
    let board_logged: HashMap<i64, (i64, Option<String>, Option<i64>)> =
        board_logged.into_iter().map(|(id, score, via, via_post)| (id, (score, via, via_post))).collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.iter().any(|post| !post.builtin) && acknowledged.iter().any(|post| post.builtin));
    for post in &acknowledged {
        let (original, via) = if post.builtin {
            (logged.get(&post.id).copied(), "best")
        } else {
            (board_logged.get(&post.id).map(|(score, ..)| *score), "crash-main")
        };
        assert_eq!(original, Some(post.score), "acknowledged post {} is missing after the crash", post.id);
        assert_eq!(post.fed.len(), if post.builtin { 1 } else { 2 });
        for fed in &post.fed {
            let row = board_logged.get(fed).cloned();
            assert_eq!(row, Some((post.score, Some(via.to_owned()), Some(post.id))), "fed post {fed} of {}", post.id);
            // A partitioned fed board's post has its partition's copy.
            if !post.builtin {
                let copies = board_logged.values().filter(|(score, _, of)| *of == Some(*fed) && *score == post.score);
                assert_eq!(copies.count(), 1, "the partition's copy of fed post {fed}");
            }
        }
    }
    // No fed post outlived its original.
    for (id, (_, via, via_post)) in &board_logged {
        let (Some(via), Some(original)) = (via, via_post) else { continue };
        let there = if via == "best" { logged.contains_key(original) } else { board_logged.contains_key(original) };
        assert!(there, "fed post {id} has no original {via}/{original}");
    }
    // No half-applied post: every player's aggregates equal their log.
    let mismatched: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT u.id, u.play_count, COUNT(s.id) FROM users u LEFT JOIN scores s ON s.user_id = u.id \
         GROUP BY u.id, u.play_count, u.total_score HAVING u.play_count <> COUNT(s.id) OR u.total_score <> COALESCE(SUM(s.score), 0)",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(mismatched.is_empty(), "aggregates disagree with the log: {mismatched:?}");
    // Every custom board's entries equal their period's log, fed boards
    // and partitions included.
    let mismatched: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT e.board, e.period, e.user_id FROM board_entries e JOIN boards b ON b.number = e.board \
         WHERE e.score <> (SELECT CASE WHEN b.operator = 'total' THEN SUM(s.score) ELSE MAX(s.score) END \
         FROM board_scores s WHERE s.board = e.board AND s.period = e.period AND s.user_id = e.user_id)",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(mismatched.is_empty(), "board entries disagree with the log: {mismatched:?}");
    // And the restarted service serves what survived.
    let (_, page) = json_of(client.get(format!("{base}/api/rankings/total?limit=10")).send().await.unwrap()).await;
    assert_eq!(page["total_players"], 4);
    server.kill().unwrap();
    server.wait().unwrap();
}

backend_tests!(sigterm_drains_in_flight_posts);

/// SIGTERM: the listener closes, requests already in flight finish with
/// their 201, and the database holds exactly the acknowledged posts: a
/// request the server had taken and then dropped would show up as a post
/// nobody was told about. (A connection still in the kernel's accept queue
/// when the listener closes is reset; the client cannot tell that from other
/// send errors, so those count as "refused", and the exact-match check is
/// what proves none of them had been processed.)
async fn sigterm_drains_in_flight_posts(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    // A new connection per request: after the listener closes, a request
    // fails to connect rather than landing on a closing keep-alive socket.
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).timeout(Duration::from_secs(10)).build().unwrap();
    let mut server = start_server(&db, port, &[]);
    wait_until_healthy(&client, &base).await;
    let response = client
        .post(format!("{base}/api/users"))
        .json(&json!({"login_name": "drain", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let token = json_of(response).await.1["token"].as_str().unwrap().to_owned();

    let acknowledged: Arc<Mutex<Vec<i64>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let refused: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut posters = Vec::new();
    for poster in 0..6 {
        let (client, base, token) = (client.clone(), base.clone(), token.clone());
        let (acknowledged, failures, refused) =
            (Arc::clone(&acknowledged), Arc::clone(&failures), Arc::clone(&refused));
        posters.push(actix_web::rt::spawn(async move {
            for n in 0..10_000 {
                let sent = client
                    .post(format!("{base}/api/scores"))
                    .bearer_auth(&token)
                    .json(&json!({"score": poster * 10_000 + n}))
                    .send()
                    .await;
                match sent {
                    // Refused or reset before an answer: checked below against the database.
                    Err(_) => return,
                    // A 503 says "not recorded, retry": allowed, but counted
                    // and checked against the log below.
                    Ok(response) if response.status() == 503 => {
                        let body = response.text().await.unwrap_or_default();
                        refused.lock().unwrap().push(body);
                        return;
                    }
                    Ok(response) if response.status() != 201 => {
                        let status = response.status();
                        let body = response.text().await.unwrap_or_default();
                        return failures.lock().unwrap().push(format!("status {status}: {body}"));
                    }
                    Ok(response) => match response.json::<serde_json::Value>().await {
                        Ok(body) => acknowledged.lock().unwrap().push(body["score"]["id"].as_i64().unwrap()),
                        Err(error) => return failures.lock().unwrap().push(format!("body: {error}")),
                    },
                }
            }
        }));
    }
    while acknowledged.lock().unwrap().len() < 100 {
        actix_web::rt::time::sleep(Duration::from_millis(5)).await;
    }
    Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    for poster in posters {
        let _ = poster.await;
    }
    let status = server.wait().unwrap();
    assert!(status.success(), "a graceful stop exits 0: {status:?}");
    assert!(failures.lock().unwrap().is_empty(), "requests failed during the drain: {:?}", failures.lock().unwrap());
    // Seen in about one of ten CI runs before the drain waited for the
    // requests in flight with every worker running (see `drain` and
    // RELIABILITY.md); one is still tolerated, with the server's errors
    // printed, until enough runs show the cause is gone.
    let refused = refused.lock().unwrap().clone();
    if !refused.is_empty() {
        let log = std::fs::read_to_string(server_log(port)).unwrap_or_default();
        eprintln!("note: 503s during the drain: {refused:?}; the server's errors:\n{log}");
    }
    assert!(refused.len() <= 1, "503s during the drain: {refused:?}");

    let pool = db.connect().await;
    let logged: Vec<i64> = sqlx::query_scalar("SELECT id FROM scores").fetch_all(&pool).await.unwrap();
    let logged: std::collections::HashSet<i64> = logged.into_iter().collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let acknowledged: std::collections::HashSet<i64> = acknowledged.into_iter().collect();
    assert_eq!(logged, acknowledged, "the log must hold exactly the acknowledged posts");
    let plays: i64 = sqlx::query_scalar("SELECT play_count FROM users").fetch_one(&pool).await.unwrap();
    assert_eq!(plays, logged.len() as i64);
}
