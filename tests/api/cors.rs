//! CORS is explicit: nothing by default, exactly the configured origins.

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase};

backend_tests!(cross_origin_access_is_only_for_configured_origins);

async fn preflight(app: &crate::helpers::TestApp, origin: &str) -> reqwest::Response {
    app.client
        .request(reqwest::Method::OPTIONS, app.url("/api/scores"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type, idempotency-key")
        .send()
        .await
        .unwrap()
}

async fn cross_origin_access_is_only_for_configured_origins(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let closed = spawn_app_on(&db, &[]).await;
    let response = closed
        .client
        .get(closed.url("/api/rankings/best"))
        .header("origin", "https://game.example")
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none(), "no CORS unless configured");

    let open = spawn_app_on(&db, &["--cors-allowed-origins", "https://game.example, https://other.example"]).await;
    let allowed = preflight(&open, "https://game.example").await;
    assert!(allowed.status().is_success(), "{}", allowed.status());
    assert_eq!(allowed.headers()["access-control-allow-origin"], "https://game.example");
    let methods = allowed.headers()["access-control-allow-methods"].to_str().unwrap().to_owned();
    assert!(methods.contains("POST"), "{methods}");
    let refused = preflight(&open, "https://evil.example").await;
    assert!(refused.headers().get("access-control-allow-origin").is_none());
    // Twice: the second answer is a kept page, with the same headers.
    let page = || open.client.get(open.url("/api/rankings/best")).header("origin", "https://other.example").send();
    assert_eq!(page().await.unwrap().headers()["access-control-allow-origin"], "https://other.example");
    let simple = page().await.unwrap();
    assert_eq!(simple.headers()["access-control-allow-origin"], "https://other.example");
    // A client can read the page's tag and a replay's flag, and change its account.
    let exposed = simple.headers()["access-control-expose-headers"].to_str().unwrap().to_ascii_lowercase();
    for header in ["etag", "idempotent-replayed", "retry-after", "x-request-id"] {
        assert!(exposed.contains(header), "{header} is not exposed: {exposed}");
    }
    assert!(methods.contains("PATCH"), "{methods}");
}
