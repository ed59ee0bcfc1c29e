//! Health, metrics, and the proof that pages and batches cost a constant
//! number of queries whatever their size.

use serde_json::json;

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase, ADMIN};

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

    // Twice: the second is counted through the series kept from the first.
    app.get("/api/rankings/best").await;
    app.get("/api/rankings/best").await;
    let response = app.get("/metrics").await;
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}",status="200"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"hiscore_http_request_duration_seconds_count{method="GET",route="/api/rankings/{board}",status="200"} 2"#
        ),
        "{text}"
    );
    assert!(text.contains("hiscore_http_request_duration_seconds_bucket"));
    assert!(text.contains("hiscore_db_pool_connections"));
    // What an operator watches besides requests.
    let build_info = format!(r#"hiscore_build_info{{version="{}"}} 1"#, env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&build_info), "{text}");
    assert!(text.contains("hiscore_write_queue_depth 0"), "{text}");
    let redis_state = if db.redis.is_some() { "hiscore_redis_state 1" } else { "hiscore_redis_state 0" };
    assert!(text.contains(redis_state), "{text}");
    for gauge in [
        "hiscore_limiter_keys",
        "hiscore_page_cache_bytes",
        "hiscore_page_cache_total",
        "hiscore_process_resident_memory_bytes",
        "hiscore_process_open_fds",
        "hiscore_hashing_queue_depth",
        "hiscore_write_batch_size_bucket",
        "hiscore_write_conflicts_total",
    ] {
        assert!(text.contains(gauge), "{gauge} missing: {text}");
    }
}

/// The readable API reference is served by the app itself (and so through
/// nginx, which proxies `/api`), with nothing loaded from elsewhere.
#[actix_web::test]
async fn the_api_reference_is_a_self_contained_page() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    let response = app.get("/api/docs").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let page = response.text().await.unwrap();
    for operation in ["postScore", "getRankingPage", "register", "login"] {
        assert!(page.contains(&format!("id=\"{operation}\"")), "{operation} missing");
    }
    assert!(!page.contains("<script") && !page.contains("https://"), "the page fetches nothing");
}

/// The shipped Grafana dashboard only plots metrics the service exports.
#[actix_web::test]
async fn the_dashboard_plots_only_exported_metrics() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    app.get("/api/rankings/best").await; // so that the request series exist
    let exported = app.get("/metrics").await.text().await.unwrap();
    let dashboard =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/monitoring/grafana/dashboards/hiscore.json"))
            .unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let mut plotted = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for (start, _) in expr.match_indices("hiscore_") {
                let name: String =
                    expr[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert!(
                    exported
                        .lines()
                        .any(|line| line.starts_with(&format!("{name} ")) || line.starts_with(&format!("{name}{{"))),
                    "the dashboard plots {name}, which /metrics does not export"
                );
                plotted += 1;
            }
        }
    }
    assert!(plotted >= 8);
}

/// `hiscore healthcheck` (the container's health check, without curl)
/// succeeds against a ready service and fails where none answers.
#[actix_web::test]
async fn the_healthcheck_subcommand_asks_the_service() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &[]).await;
    let bind = app.address.trim_start_matches("http://").to_owned();
    let check = |bind: String, path: &'static str| {
        actix_web::rt::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_hiscore"))
                .args(["healthcheck", "--bind", &bind, "--path", path])
                .output()
                .unwrap()
        })
    };
    let ready = check(bind.clone(), "/readyz").await.unwrap();
    assert!(ready.status.success(), "{}", String::from_utf8_lossy(&ready.stderr));
    let missing = check(bind, "/no-such-path").await.unwrap();
    assert!(!missing.status.success(), "a 404 is not healthy");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let nobody = check(closed, "/readyz").await.unwrap();
    assert!(!nobody.status.success(), "nothing listens there");
}

/// `LOG_FORMAT=json` writes one JSON object per line, and the start-up line
/// says what runs where; text logs carry no colour codes into a file.
#[actix_web::test]
async fn logs_are_json_lines_on_request_and_plain_text_in_files() {
    for format in ["json", "text"] {
        let db = TestDatabase::new(&Backend::Sqlite).await;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log_dir = tempfile::tempdir().unwrap();
        let log_path = log_dir.path().join("hiscore.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_hiscore"))
            .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--database-url", &db.url])
            .args(["--static-dir", "/nonexistent"])
            .env("LOG_FORMAT", format)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::from(log.try_clone().unwrap()))
            .stderr(std::process::Stdio::from(log))
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await.is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
            actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        server.kill().unwrap();
        server.wait().unwrap();
        let text = std::fs::read_to_string(&log_path).unwrap();
        assert!(!text.contains('\u{1b}'), "colour codes in a file: {text}");
        if format == "json" {
            let lines: Vec<serde_json::Value> = text
                .lines()
                .filter(|line| !line.trim().is_empty())
                .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
                .collect();
            let listening = lines.iter().find(|line| line["message"] == "listening").expect("a start-up line");
            assert_eq!(listening["version"], env!("CARGO_PKG_VERSION"), "{listening}");
            assert_eq!(listening["backend"], "sqlite", "{listening}");
            assert_eq!(listening["redis"], "off", "{listening}");
            assert_eq!(listening["url"], format!("http://127.0.0.1:{port}"), "{listening}");
        } else {
            assert!(text.contains("listening"), "{text}");
        }
    }
}

async fn pages_and_batches_cost_a_constant_number_of_queries(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let (status, _) = app.initialize(ADMIN, &json!({"users": 300, "scores": 3000, "seed": 3})).await;
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

    // The console, at both of its addresses, with its security policy.
    for path in ["/admin/", "/admin/index.html"] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-security-policy"], hiscore::routes::CONSOLE_POLICY, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-cache", "{path}");
        assert!(response.text().await.unwrap().contains("/assets/console."), "{path}");
    }
    let redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = redirect.get(app.url("/admin")).send().await.unwrap();
    assert_eq!(response.status(), 308);
    assert_eq!(response.headers()["location"], "/admin/");
    // Another method there gets the contract's JSON error, like any static path.
    for path in ["/admin", "/admin/"] {
        let response = app.client.post(app.url(path)).send().await.unwrap();
        let (status, body) = crate::helpers::json_of(response).await;
        crate::helpers::assert_error(status, &body, 405, "method_not_allowed");
    }
}

/// The console's rules that its source can show: the token is never put
/// where it outlives the tab, no stored string is parsed as HTML, and the
/// page runs no inline script or style (its policy would block them).
#[test]
fn the_console_keeps_its_rules_in_its_source() {
    let static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let page = std::fs::read_to_string(static_dir.join("admin/index.html")).unwrap();
    let script_name = page.split("src=\"/assets/").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let script = std::fs::read_to_string(static_dir.join("assets").join(script_name)).unwrap();
    for banned in
        ["localStorage", "document.cookie", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("]
    {
        assert!(!script.contains(banned), "the console's script uses {banned}");
    }
    assert!(script.contains("sessionStorage"), "the token is kept for the tab");
    assert_eq!(page.matches("<script").count(), page.matches("<script src=").count(), "an inline script");
    assert!(!page.contains("style="), "an inline style");
    assert!(!page.contains("<style"), "an inline style sheet");
}

/// Asset names carry the hash of their content (so nginx may cache them
/// forever) and the pages (the ranking page, the console) point at exactly
/// those names. After editing an asset, run static/fingerprint.sh.
#[test]
fn static_assets_are_fingerprinted() {
    use sha2::{Digest, Sha256};
    let static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let index = std::fs::read_to_string(static_dir.join("index.html")).unwrap()
        + &std::fs::read_to_string(static_dir.join("admin/index.html")).unwrap();
    let mut assets = 0;
    for entry in std::fs::read_dir(static_dir.join("assets")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let hash: String = Sha256::digest(std::fs::read(&path).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
        let parts: Vec<&str> = name.split('.').collect();
        assert_eq!(parts.len(), 3, "{name} is not NAME.HASH.EXT");
        assert_eq!(parts[1], &hash[..10], "{name}: content changed; run static/fingerprint.sh");
        assert!(index.contains(&format!("/assets/{name}")), "no page loads {name}");
        assets += 1;
    }
    assert!(assets >= 2);
}

backend_tests!(the_openapi_document_describes_exactly_the_routes);

async fn the_openapi_document_describes_exactly_the_routes(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    // With an admin token, so that initialize exists (and answers 401 here).
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
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
        if response.headers().get("content-type").is_some_and(|value| value == "text/event-stream") {
            continue; // a live page: served (and it never ends)
        }
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        assert_ne!(body["error"]["code"], "not_found", "{path} is documented but not served");
    }
    // Every operation has a summary and a unique camelCase operationId
    // (what code generators turn into method names: `postScore`, not `post_score`
    // twice).
    let mut ids = std::collections::HashSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap_or_default();
            let camel = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && id.chars().all(|c| c.is_ascii_alphanumeric());
            assert!(camel, "{method} {path}: operationId {id:?}");
            assert!(ids.insert(id.to_owned()), "{method} {path}: operationId {id} used twice");
            assert!(operation["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path}: no summary");
        }
    }
    // Fields always sent are required, even when they may be null.
    let required = &document["components"]["schemas"]["RankingPage"]["required"];
    assert!(required.as_array().unwrap().iter().any(|field| field == "next_cursor"), "{required}");
    // The headers clients read are declared where they are sent.
    let headers = |path: &str, method: &str, status: &str| {
        document["paths"][path][method]["responses"][status]["headers"].clone()
    };
    assert!(headers("/api/rankings/{board}", "get", "400")["X-Request-Id"].is_object());
    assert!(headers("/api/sessions", "post", "200")["Set-Cookie"].is_object());
    assert!(headers("/api/scores", "post", "200")["Idempotent-Replayed"].is_object());
    assert!(headers("/api/scores", "post", "429")["Retry-After"].is_object());
    // Error responses point at the one error envelope.
    let post_score = &document["paths"]["/api/scores"]["post"]["responses"];
    assert_eq!(post_score["422"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody");
}

/// The monitoring profile is not a door: Grafana listens on this machine
/// only, with the operator's password, nobody anonymous; nginx in every
/// profile can be told which proxy in front to trust.
#[test]
fn the_compose_file_keeps_grafana_private_and_knows_trusted_proxies() {
    let compose = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docker-compose.yml")).unwrap();
    let grafana = compose.split("\n  grafana:").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(grafana.contains("\"127.0.0.1:3000:3000\""), "{grafana}");
    assert!(grafana.contains("GF_AUTH_ANONYMOUS_ENABLED: \"false\""), "{grafana}");
    assert!(grafana.contains("GF_SECURITY_ADMIN_PASSWORD: ${GRAFANA_ADMIN_PASSWORD"), "{grafana}");
    assert!(grafana.contains("exec /run.sh"), "it refuses to start without a password: {grafana}");
    assert_eq!(compose.matches("REAL_IP: ${NGINX_REAL_IP:-}").count(), 2, "both nginx services");
    // Issue 39: not every private address reaches /api/admin/ (behind a
    // load balancer in a private subnet, every client has one).
    assert_eq!(compose.matches("ADMIN_ALLOW: ${NGINX_ADMIN_ALLOW:-allow 172.16.0.0/12;}").count(), 2);
    let template = include_str!("../../nginx/templates/hiscore.conf.template");
    assert!(!template.contains("allow 10.0.0.0/8") && !template.contains("allow 192.168.0.0/16"), "{template}");
}

/// The rank engine's board reads (what anyone can ask for without an
/// account) run on a pool of their own, whose statements stop at a time
/// limit; a statement stopped so is an unavailable database (503), never
/// a 500.
#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn board_reads_have_a_pool_of_their_own_and_a_statement_time_limit() {
    use hiscore::store::{Store, StoreError, BOARD_READ_TIMEOUT};
    let db = TestDatabase::new(&Backend::mariadb()).await;
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = Store::open(&db.url, 8, counter, Default::default()).await.unwrap();
    let reads = store.for_board_reads();
    let mut conn = reads.conn().await.unwrap();
    let limit: i64 =
        sqlx::query_scalar("SELECT CAST(@@max_statement_time AS SIGNED)").fetch_one(&mut *conn).await.unwrap();
    assert_eq!(limit, BOARD_READ_TIMEOUT.as_secs() as i64);
    let mut own = store.conn().await.unwrap();
    let unlimited: i64 =
        sqlx::query_scalar("SELECT CAST(@@max_statement_time AS SIGNED)").fetch_one(&mut *own).await.unwrap();
    assert_eq!(unlimited, 0, "the writer's and logins' connections have no such limit");

    sqlx::query("SET SESSION max_statement_time = 0.2").execute(&mut *conn).await.unwrap();
    let stopped = sqlx::query("SELECT SLEEP(2)").execute(&mut *conn).await.unwrap_err();
    assert!(matches!(StoreError::from(stopped), StoreError::Unavailable(_)));

    // Its connections are not the service's: with every board-read
    // connection taken, the service's own pool still answers at once.
    let mut held = vec![conn];
    while let Ok(Ok(conn)) = tokio::time::timeout(std::time::Duration::from_secs(2), reads.conn()).await {
        held.push(conn);
    }
    assert_eq!(held.len(), 2, "a quarter of 8, at least 2");
    let _second = store.conn().await.expect("the service's pool is untouched");
}

/// The score writer ranks its posts on its own connection, inside its
/// transaction: with every board-read connection taken (a crowd of
/// anonymous reads while Redis is down), an anonymous read gives up with
/// 503 after its wait, and the writer's ranks are still counted.
#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn the_writers_ranks_never_wait_for_the_board_read_pool() {
    use hiscore::domain::{Board, BoardKey, BoardPeriod, Order, Ranking};
    use hiscore::store::{Migrations, Store, StoreError};
    let db = TestDatabase::new(&Backend::mariadb()).await;
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = Store::connect(&db.url, 8, counter, Migrations::Apply, Default::default()).await.unwrap();
    let engine = hiscore::rank::RankEngine::new(
        store.clone(),
        None,
        Default::default(),
        hiscore::background::Background::default(),
    );
    // A period no live source holds: the database answers for it.
    let ended = BoardPeriod { board: Board::Custom(999), ranking: Ranking::by_score(Order::Desc), period: 0 };
    let reads = store.for_board_reads();
    let _held = [reads.conn().await.unwrap(), reads.conn().await.unwrap()];
    let anonymous = engine.ranks_of_keys(&[(ended, BoardKey::of(5, 0, 1))]).await;
    assert!(matches!(anonymous, Err(StoreError::Unavailable(_))), "{anonymous:?}");
    let mut writer = store.begin_write().await.unwrap();
    let on_writer = engine.ranks_of_keys_on(&mut writer, &[(ended, BoardKey::of(5, 0, 1))]).await.unwrap();
    assert_eq!(on_writer, [hiscore::rank::ScoreRank { rank: 1, players: 0 }]);
    // Ended now: an open transaction would hold the test database's drop.
    writer.rollback().await.unwrap();
}
