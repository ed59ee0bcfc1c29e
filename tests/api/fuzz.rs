//! Property-based abuse of every route: generated bodies (wrong types, huge
//! and float numbers, deep nesting, duplicate keys, NUL bytes, invalid
//! UTF-8, long strings), paths, query strings, methods (the API's and
//! made-up ones) and headers (forged `X-Forwarded-For`, huge values).
//! Whatever comes in: never a 5xx, always the error envelope for a 4xx, the
//! stored data stays consistent (a rejected request changes nothing), and
//! what the service holds in memory stays bounded (metric series, limiter
//! keys, kept pages).

use std::time::Duration;

use futures_util::{stream, StreamExt as _};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

use crate::helpers::{spawn_app_on, Backend, TestDatabase, ADMIN};

/// At least this many generated requests per run (issue: ≥ 10,000 in CI).
const CASES: usize = 10_000;

#[derive(Clone)]
struct Case {
    method: String,
    path: String,
    query: String,
    body: Vec<u8>,
    json_content_type: bool,
    authenticated: bool,
    idempotency_key: Option<String>,
    forwarded_for: Option<String>,
    /// A made-up header with a value of this many bytes.
    huge_header: Option<usize>,
}

/// Short enough to read in a failure message.
impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(200)]).into_owned();
        write!(
            f,
            "{} {}?{} ({} body bytes, starting {body:?}; json: {}, session: {}, key: {:?}, forwarded for: {:?}, \
             huge header: {:?})",
            self.method,
            self.path,
            self.query,
            self.body.len(),
            self.json_content_type,
            self.authenticated,
            self.idempotency_key,
            self.forwarded_for.as_deref().map(|value| &value[..value.len().min(80)]),
            self.huge_header
        )
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN", |f| f.is_finite()).prop_map(Value::from),
        (0i64..2_000_000_000).prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        "[A-Za-z0-9_.-]{0,40}".prop_map(Value::from),
        Just(Value::from("x".repeat(5_000))),
        Just(Value::from("nul\u{0}byte")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::hash_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        Just("login_name"),
        Just("password"),
        Just("display_name"),
        Just("score"),
        Just("users"),
        Just("scores"),
        Just("seed"),
        Just("metadata"),
        Just("id"),
        Just("name"),
        Just("order"),
        Just("operator"),
        Just("reset"),
        Just("timezone"),
        Just("archive_periods"),
        Just("min_score"),
        Just("max_score"),
        Just("current_password")
    ];
    prop_oneof![
        prop::collection::hash_map(field, json_value(), 0..5).prop_map(|fields| serde_json::to_vec(
            &fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<serde_json::Map<_, _>>()
        )
        .unwrap()),
        json_value().prop_map(|value| serde_json::to_vec(&value).unwrap()),
        prop::collection::vec(any::<u8>(), 0..300),
        (1usize..3_000).prop_map(|depth| format!("{}1{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| format!("{{\"score\": {a}, \"score\": {b}}}").into_bytes()),
        Just(b"{\"score\": 1e999999}".to_vec()),
        Just(b"{\"score\": 123456789012345678901234567890}".to_vec()),
        Just(vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}']),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,25}",
        "-[0-9]{1,5}",
        "best|total|worst|fuzzed-board|ticking",
        "[A-Za-z%._~-]{0,30}",
        Just("%00".to_owned()),
        Just("%FF%FE".to_owned()),
        Just("1.5".to_owned()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("limit"),
        Just("offset"),
        Just("cursor"),
        Just("before"),
        Just("ids"),
        Just("radius"),
        Just("period"),
        Just("board"),
        Just("x")
    ];
    let value = prop_oneof![
        "-?[0-9]{0,25}",
        "[0-9,]{0,60}",
        "[A-Za-z0-9_=-]{0,60}",
        Just("%FF".to_owned()),
        Just("1e9".to_owned())
    ];
    prop::collection::vec((key, value), 0..4)
        .prop_map(|pairs| pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"))
}

/// What a client may claim to be forwarded for: addresses, lists, garbage.
fn forwarded_for() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}")),
        any::<[u16; 8]>().prop_map(|parts| parts.map(|p| format!("{p:x}")).join(":")),
        "[0-9.]{0,20}",
        "[ -~]{0,80}",
        (any::<[u8; 4]>(), "[ -~]{0,20}").prop_map(|([a, b, c, d], junk)| format!("{junk}, {a}.{b}.{c}.{d}")),
        Just("1.2.3.4, ".repeat(500)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let route = prop::sample::select(hiscore::routes::ROUTES.to_vec());
    let method = prop_oneof![
        8 => prop::sample::select(vec!["GET", "POST", "DELETE", "PUT", "PATCH"]).prop_map(str::to_owned),
        1 => "[A-Z]{3,12}",
    ];
    let headers = (prop::option::of(forwarded_for()), prop::option::weighted(0.05, 1_000usize..12_000));
    (
        route,
        method,
        segment(),
        segment(),
        query(),
        body(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of("[!-~]{0,70}"),
        headers,
    )
        .prop_map(|((route_method, path), other_method, a, b, query, body, json, authenticated, key, headers)| {
            // Mostly the route's own method, sometimes another one.
            let method = if json { route_method_name(route_method).to_owned() } else { other_method };
            let path = path.replacen("{board}", &a, 1).replacen("{id}", &a, 1).replacen("{user_id}", &b, 1);
            Case {
                method,
                path,
                query,
                body,
                json_content_type: json || authenticated,
                authenticated,
                idempotency_key: key,
                forwarded_for: headers.0,
                huge_header: headers.1,
            }
        })
}

fn route_method_name(method: &str) -> &'static str {
    match method {
        "post" => "POST",
        "delete" => "DELETE",
        "patch" => "PATCH",
        _ => "GET",
    }
}

#[actix_web::test]
async fn generated_requests_never_break_the_contract() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    // Trusting `X-Forwarded-For` as behind nginx: only its last hop, and
    // only a well-formed address, may become a limiter key.
    let app = spawn_app_on(&db, &["--admin-token", ADMIN, "--trust-forwarded-for"]).await;
    let player = app.register("fuzzed").await;
    app.post_score(&player, 10).await;
    // Custom boards to aim at: one plain, one resetting every second.
    app.create_board(&serde_json::json!({"id": "fuzzed-board", "name": "Fuzzed", "order": "asc", "min_score": -1000}))
        .await;
    app.create_board(
        &serde_json::json!({"id": "ticking", "name": "Ticking", "operator": "total", "reset": "* * * * * *"}),
    )
    .await;
    app.post_board_score(&player, "fuzzed-board", 5).await;

    // A fixed seed keeps CI reproducible; FUZZ_SEED=<n> explores other cases.
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261130);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(Config { cases: CASES as u32, ..Config::default() }, rng);
    let strategy = case();
    let cases: Vec<Case> = (0..CASES).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect();
    let cases_forwarded: Vec<String> = cases.iter().filter_map(|case| case.forwarded_for.clone()).collect();

    let outcomes = stream::iter(cases)
        .map(|case| {
            let app = &app;
            let token = player.token.clone();
            async move {
                let url = if case.query.is_empty() {
                    app.url(&case.path)
                } else {
                    format!("{}?{}", app.url(&case.path), case.query)
                };
                let method = reqwest::Method::from_bytes(case.method.as_bytes()).unwrap();
                let mut request = app.client.request(method, &url);
                if let Some(forwarded) = &case.forwarded_for {
                    request = request.header("x-forwarded-for", forwarded);
                }
                if let Some(bytes) = case.huge_header {
                    request = request.header("x-fuzz", "h".repeat(bytes));
                }
                request = request.body(case.body.clone());
                if case.json_content_type {
                    request = request.header("content-type", "application/json");
                }
                if case.authenticated {
                    // Admin routes get the admin token, the others the player's.
                    let bearer = if case.path.starts_with("/api/admin") { ADMIN } else { &token };
                    request = request.bearer_auth(bearer);
                }
                if let Some(key) = &case.idempotency_key {
                    request = request.header("idempotency-key", key);
                }
                let Ok(response) = request.send().await else { return Ok(()) }; // e.g. an URL reqwest refuses
                let status = response.status().as_u16();
                if response.headers().get("content-type").is_some_and(|value| value == "text/event-stream") {
                    // A live page never ends: its first event must come at once.
                    let mut response = response;
                    let first = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await;
                    return match first {
                        Ok(Ok(Some(chunk))) if status == 200 && chunk.starts_with(b"event: page\n") => Ok(()),
                        other => Err(format!("{status}: a live page without its first event for {case:?}: {other:?}")),
                    };
                }
                let text = response.text().await.unwrap_or_default();
                if status >= 500 {
                    return Err(format!("{status} for {case:?}: {text}"));
                }
                if status >= 400 {
                    let envelope: Value = serde_json::from_str(&text)
                        .map_err(|_| format!("{status} without JSON for {case:?}: {text}"))?;
                    if !envelope["error"]["code"].is_string() || !envelope["error"]["message"].is_string() {
                        return Err(format!("{status} without the error envelope for {case:?}: {text}"));
                    }
                }
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<Result<(), String>>>()
        .await;
    let addresses: std::collections::HashSet<std::net::IpAddr> =
        cases_forwarded.iter().filter_map(|value| value.rsplit(',').next()?.trim().parse().ok()).collect();
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {CASES} cases (seed {seed}) broke the contract: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );

    // Memory stays bounded: metric series only of the fixed labels, limiter
    // keys only for well-formed addresses (and the few accounts and players
    // of the run), kept pages within their budget.
    let metrics = app.get("/metrics").await.text().await.unwrap();
    let known_methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"];
    for line in metrics.lines().filter(|line| line.starts_with("hiscore_http_requests_total{")) {
        let label = |name: &str| line.split(&format!("{name}=\"")).nth(1).and_then(|rest| rest.split('"').next());
        let (method, route) = (label("method").unwrap(), label("route").unwrap());
        assert!(known_methods.contains(&method), "a series for method {method}: {line}");
        let known_route = hiscore::routes::ROUTES.iter().any(|(_, path)| *path == route)
            || ["static", "unmatched", "panicked"].contains(&route);
        assert!(known_route, "a series for route {route}: {line}");
    }
    let gauge = |name: &str| -> i64 {
        metrics.lines().find_map(|line| line.strip_prefix(&format!("{name} "))?.trim().parse().ok()).unwrap()
    };
    let limiter_keys = gauge("hiscore_limiter_keys");
    assert!(
        limiter_keys <= addresses.len() as i64 + 50,
        "{limiter_keys} limiter keys for {} well-formed addresses sent",
        addresses.len()
    );
    assert!(gauge("hiscore_page_cache_bytes") <= 4 << 20);

    // Whatever was accepted, the books still balance.
    let pool = db.connect().await;
    let (logged, plays): (i64, i64) =
        sqlx::query_as("SELECT (SELECT COUNT(*) FROM scores), (SELECT COALESCE(SUM(play_count), 0) FROM users)")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(logged, plays);
    // (The player's token may be dead now: some cases were authenticated logouts.)
    assert!(logged >= 1);
    let (posted, counted): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM board_scores), (SELECT COALESCE(SUM(plays), 0) FROM board_entries)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(posted, counted, "custom boards: every kept post is counted on its entry");
}
