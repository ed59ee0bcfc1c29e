//! Health, metrics, and the proof that pages and batches cost a constant
//! number of queries whatever their size.

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase};

backend_tests!(healthz_and_metrics, pages_and_batches_cost_a_constant_number_of_queries);

async fn healthz_and_metrics(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &[]).await;
    let (status, body) = app.get_json("/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    let expected_redis = if db.redis.is_some() { "ok" } else { "disabled" };
    assert_eq!(body["redis"], expected_redis, "{body}");
    // Liveness asks nothing; readiness asks the database and the drain.
    assert_eq!(app.get_json("/livez").await, (reqwest::StatusCode::OK, serde_json::json!({"status": "ok"})));
    assert_eq!(app.get_json("/readyz").await, (reqwest::StatusCode::OK, serde_json::json!({"status": "ready"})));

    app.get("/api/rankings/best").await;
    let response = app.get("/metrics").await;
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}",status="200"} 1"#),
        "{text}"
    );
    assert!(text.contains("hiscore_http_request_duration_seconds_bucket"));
    assert!(text.contains("hiscore_db_pool_connections"));
}

async fn pages_and_batches_cost_a_constant_number_of_queries(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", "test-admin-token-0123456789abcdef"]).await;
    let (status, _) =
        app.initialize("test-admin-token-0123456789abcdef", &json!({"users": 300, "scores": 3000, "seed": 3})).await;
    assert_eq!(status, 200);
    let first_page_cursor = app.ranking("best", "limit=5").await["next_cursor"].as_str().unwrap().to_owned();

    let cost = |path: String| {
        let app = &app;
        async move {
            let before = app.statements_so_far().await;
            let response = app.get(&path).await;
            assert_eq!(response.status(), 200, "{path}");
            app.statements_so_far().await - before
        }
    };
    let ids = |n: i64| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");

    // Pages come from the rank engine; at most one query fetches the
    // display names that are not cached yet, whatever the page size.
    for path in [
        "/api/rankings/best?limit=1".to_owned(),
        "/api/rankings/best?limit=100&offset=50".to_owned(),
        "/api/rankings/total?limit=100&offset=150".to_owned(),
        format!("/api/rankings/best?limit=1&cursor={first_page_cursor}"),
        format!("/api/rankings/best?limit=100&cursor={first_page_cursor}"),
        "/api/rankings/best/around/5?radius=0".to_owned(),
        "/api/rankings/total/around/7?radius=50".to_owned(),
    ] {
        let statements = cost(path.clone()).await;
        assert!(statements <= 1, "{path}: {statements} statements");
    }
    // A batched lookup is one query for 1 id or for 100.
    let batch_small = cost(format!("/api/users?ids={}", ids(1))).await;
    let batch_large = cost(format!("/api/users?ids={}", ids(100))).await;
    assert_eq!((batch_small, batch_large), (1, 1));
}

backend_tests!(the_app_serves_the_static_ranking_page);

async fn the_app_serves_the_static_ranking_page(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let app = spawn_app_on(&db, &["--static-dir", static_dir]).await;

    let response = app.get("/").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = response.text().await.unwrap();
    let script = html.split("src=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let response = app.get(script).await;
    assert_eq!(response.status(), 200, "{script}");
    assert!(response.text().await.unwrap().contains("/api/rankings/"));

    let (status, body) = app.get_json("/no-such-file.js").await;
    crate::helpers::assert_error(status, &body, 404, "not_found");
    let (status, _) = app.get_json("/api/rankings/best").await;
    assert_eq!(status, 200, "the API still wins over static files");
}

/// Asset names carry the hash of their content (so nginx may cache them
/// forever) and index.html points at exactly those names. After editing an
/// asset, run static/fingerprint.sh.
#[test]
fn static_assets_are_fingerprinted() {
    use sha2::{Digest, Sha256};
    let static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let index = std::fs::read_to_string(static_dir.join("index.html")).unwrap();
    let mut assets = 0;
    for entry in std::fs::read_dir(static_dir.join("assets")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let hash: String = Sha256::digest(std::fs::read(&path).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
        let parts: Vec<&str> = name.split('.').collect();
        assert_eq!(parts.len(), 3, "{name} is not NAME.HASH.EXT");
        assert_eq!(parts[1], &hash[..10], "{name}: content changed; run static/fingerprint.sh");
        assert!(index.contains(&format!("/assets/{name}")), "index.html does not load {name}");
        assets += 1;
    }
    assert!(assets >= 2);
}

backend_tests!(the_openapi_document_describes_exactly_the_routes);

async fn the_openapi_document_describes_exactly_the_routes(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    // With an admin token, so that initialize exists (and answers 401 here).
    let app = spawn_app_on(&db, &["--admin-token", "test-admin-token-0123456789abcdef"]).await;
    let (status, document) = app.get_json("/api/openapi.json").await;
    assert_eq!(status, 200);
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));

    let mut documented: Vec<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |method| (method.clone(), path.clone())))
        .collect();
    let mut registered: Vec<(String, String)> =
        hiscore::routes::ROUTES.iter().map(|(method, path)| (method.to_string(), path.to_string())).collect();
    documented.sort();
    registered.sort();
    assert_eq!(documented, registered, "the document and the route table differ");

    // And every registered route really answers (not the JSON 404 for unknown paths).
    for (method, path) in &registered {
        let concrete = path.replace("{board}", "best").replace("{id}", "1").replace("{user_id}", "1");
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let response = app.client.request(method, app.url(&concrete)).send().await.unwrap();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        assert_ne!(body["error"]["code"], "not_found", "{path} is documented but not served");
    }
    // Error responses point at the one error envelope.
    let post_score = &document["paths"]["/api/scores"]["post"]["responses"];
    assert_eq!(post_score["422"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody");
}
