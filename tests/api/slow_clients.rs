//! Slow and idle clients must not tie up the service: a request whose
//! headers never finish is cut off, a body that stops half-way is cut off
//! (by the app itself, and by nginx in front), and 10,000 idle connections
//! leave room for real requests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::external::nginx_in_front_of;
use crate::helpers::{spawn_app_on, Backend, TestDatabase};

/// Reads until the peer closes or answers; how long that took.
fn wait_for_close_or_answer(stream: &mut TcpStream, limit: Duration) -> Option<(Duration, String)> {
    stream.set_read_timeout(Some(limit)).unwrap();
    let started = Instant::now();
    let mut buffer = [0u8; 512];
    match stream.read(&mut buffer) {
        Ok(n) => Some((started.elapsed(), String::from_utf8_lossy(&buffer[..n]).into_owned())),
        Err(_) => None, // still open after `limit`
    }
}

/// Sends a body announced at 100 bytes that stops after 10; how long until
/// the server answered or closed, and what it said.
async fn stall_a_body(address: &str, limit: Duration) -> Option<(Duration, String)> {
    let mut stalled = TcpStream::connect(address).unwrap();
    stalled
        .write_all(b"POST /api/users HTTP/1.1\r\nHost: hiscore\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"login_n")
        .unwrap();
    actix_web::rt::task::spawn_blocking(move || wait_for_close_or_answer(&mut stalled, limit)).await.unwrap()
}

#[actix_web::test]
async fn a_request_whose_headers_never_finish_is_cut_off() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut slow = TcpStream::connect(&address).unwrap();
    slow.write_all(b"POST /api/scores HTTP/1.1\r\nHost: hiscore\r\nContent-Type: application/json\r\n").unwrap();

    // Meanwhile everyone else is served.
    assert_eq!(app.get("/healthz").await.status(), 200);
    let answer =
        actix_web::rt::task::spawn_blocking(move || wait_for_close_or_answer(&mut slow, Duration::from_secs(15)))
            .await
            .unwrap();
    let (after, text) = answer.expect("the half-sent request was still open after 15 s");
    assert!(after < Duration::from_secs(15), "{after:?}");
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
}

/// Found by probing: without nginx, a body that stopped half-way held its
/// connection and handler for good.
#[actix_web::test]
async fn without_nginx_a_stalled_body_gets_408_in_the_error_envelope() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--body-timeout-ms", "500"]).await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let answer = stall_a_body(&address, Duration::from_secs(10)).await;
    let (after, text) = answer.expect("the stalled body was still open after 10 s");
    assert!(after < Duration::from_secs(5), "{after:?}");
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"request_timeout\""), "{text}");
    // A body that arrives in time is not affected.
    assert_eq!(
        app.register_raw(&serde_json::json!({"login_name": "punctual", "password": crate::helpers::PASSWORD}))
            .await
            .status(),
        201
    );
}

#[actix_web::test]
async fn behind_nginx_a_stalled_body_times_out_and_idle_connections_leave_room() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let Some(front) = nginx_in_front_of(&upstream).await else { return };
    let site = front.site.trim_start_matches("http://").to_owned();

    // 10,000 idle connections: nobody says anything.
    let site_for_idle = site.clone();
    let idle = actix_web::rt::task::spawn_blocking(move || {
        (0..10_000).filter_map(|_| TcpStream::connect(&site_for_idle).ok()).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    assert!(idle.len() >= 9_900, "only {} idle connections were accepted", idle.len());
    // Real requests still get through, to nginx and on to the app.
    let client = reqwest::Client::new();
    for _ in 0..20 {
        let response = client.get(format!("{}/api/rankings/best", front.site)).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    drop(idle);

    let answer = stall_a_body(&site, Duration::from_secs(20)).await;
    let (after, text) = answer.expect("the stalled body was still open after 20 s");
    assert!(after < Duration::from_secs(20));
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408") || text.contains("408"), "{text}");
}
