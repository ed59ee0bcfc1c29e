//! The error envelope for malformed requests, unknown routes and methods.

use reqwest::StatusCode;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_app, Backend};

backend_tests!(malformed_requests_get_the_contract_envelope);

async fn malformed_requests_get_the_contract_envelope(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let alice = app.register("alice").await;
    let post = |body: &'static str, content_type: &'static str| {
        app.client
            .post(app.url("/api/scores"))
            .bearer_auth(&alice.token)
            .header("content-type", content_type)
            .body(body)
            .send()
    };

    let (status, body) = json_of(post("{\"score\":", "application/json").await.unwrap()).await;
    assert_error(status, &body, 400, "invalid_json");
    let (status, body) = json_of(post("[1, 2]", "application/json").await.unwrap()).await;
    assert_error(status, &body, 400, "invalid_body");
    let (status, body) = json_of(post("{\"score\": 1}", "text/plain").await.unwrap()).await;
    assert_error(status, &body, 415, "unsupported_media_type");

    let huge = json!({"score": 1, "padding": "x".repeat(20_000)});
    let (status, body) =
        json_of(app.client.post(app.url("/api/scores")).bearer_auth(&alice.token).json(&huge).send().await.unwrap())
            .await;
    assert_error(status, &body, 413, "payload_too_large");

    let (status, body) = app.get_json("/api/no/such/route").await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = app.get_json("/nothing-here").await;
    assert_error(status, &body, 404, "not_found");
    let response = app.client.put(app.url("/api/scores")).send().await.unwrap();
    assert_eq!(response.headers()["allow"], "POST");
    let (status, body) = json_of(response).await;
    assert_error(status, &body, 405, "method_not_allowed");
    let (status, body) = json_of(app.client.delete(app.url("/api/users")).send().await.unwrap()).await;
    assert_error(status, &body, 405, "method_not_allowed");

    // Query strings: bytes that are not UTF-8 are just a bad value; a
    // repeated parameter is ambiguous, so the whole query is refused.
    let (status, body) = app.get_json("/api/rankings/best?limit=%FF").await;
    assert_error(status, &body, 400, "invalid_limit");
    let (status, body) = app.get_json("/api/rankings/best?limit=1&limit=2").await;
    assert_error(status, &body, 400, "invalid_query");

    // None of that changed anything.
    let (status, me) = app.get_authed("/api/me", &alice.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["play_count"], 0);
}

/// Found by probing: `POST /index.html` and `PUT /api/%2e%2e/etc/passwd`
/// were plain-text 405s from the static files.
#[actix_web::test]
async fn other_methods_on_static_paths_get_the_envelope() {
    let db = crate::helpers::TestDatabase::new(&Backend::Sqlite).await;
    let app =
        crate::helpers::spawn_app_on(&db, &["--static-dir", concat!(env!("CARGO_MANIFEST_DIR"), "/static")]).await;
    for (method, path, status, code) in [
        ("POST", "/index.html", 405, "method_not_allowed"),
        ("PUT", "/api/%2e%2e/etc/passwd", 405, "method_not_allowed"),
        ("DELETE", "/", 405, "method_not_allowed"),
        ("GET", "/no-such-file.txt", 404, "not_found"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = app.client.request(method.clone(), app.url(path)).send().await.unwrap();
        if status == 405 {
            assert_eq!(response.headers()["allow"], "GET, HEAD", "{method} {path}");
        }
        let (actual, body) = json_of(response).await;
        assert_error(actual, &body, status, code);
    }
    assert_eq!(app.get("/").await.status(), 200, "the page itself is still served");
}
