//! Exports (v4): a period as CSV and as NDJSON equals the ranking pages of
//! that period, line by line, with names and metadata that CSV must quote
//! or defuse; and the export's errors.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_admin_app, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

backend_tests!(
    an_export_equals_the_pages_of_its_period,
    export_requests_are_validated,
    a_player_exports_everything_held_about_them
);

/// Parses RFC 4180 text: rows of cells, CRLF line ends, quoted cells with
/// doubled quotes and line breaks inside.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut cell) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') => {
                assert_eq!(chars.next(), Some('\n'), "CRLF line ends");
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    assert!(row.is_empty() && cell.is_empty(), "the last line ends with CRLF");
    rows
}

async fn export(app: &TestApp, query: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let response =
        app.client.get(app.url(&format!("/api/admin/boards/{query}"))).bearer_auth(ADMIN).send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.text().await.unwrap())
}

/// What a CSV cell holds for a text a spreadsheet would run as a formula.
fn defused(text: &str) -> String {
    match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    }
}

async fn an_export_equals_the_pages_of_its_period(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "exp", "name": "Export", "order": "asc", "min_score": -100})).await;
    let names = ["=HYPERLINK(1)", "comma, name", "say \"hi\"", "@home", "+plus", "plain", "Zoë"];
    let mut players = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let player = app.register(&format!("exp{i}")).await;
        let (status, body) = app
            .client
            .patch(app.url("/api/me"))
            .bearer_auth(&player.token)
            .json(&json!({"display_name": name}))
            .send()
            .await
            .map(|r| (r.status(), r))
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{:?}", body.text().await);
        players.push(player);
    }
    // Ties on score, a negative score (a cell starting with `-`), and
    // metadata with a comma, a quote and a line break.
    for (i, player) in players.iter().enumerate() {
        let score = [5, -3, 5, 7, 5, 9, -3][i];
        let metadata = if i % 2 == 0 { json!({"note": format!("run {i}, \"fast\"\nline two")}) } else { Value::Null };
        let body = json!({"score": score, "metadata": metadata});
        let (status, answer) = app.post_board_score_raw(&player.token, "exp", &body, None).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let page = app.ranking("exp", "limit=100").await;
    let entries = page["entries"].as_array().unwrap();
    assert_eq!(entries.len(), names.len());

    let (status, headers, csv) = export(&app, "exp/export").await;
    assert_eq!(status, StatusCode::OK, "{csv}");
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert_eq!(headers["content-disposition"], "attachment; filename=\"exp-period-0.csv\"");
    let rows = parse_csv(&csv);
    assert_eq!(rows[0], ["rank", "user_id", "display_name", "score", "subscores", "achieved_at", "metadata"]);
    assert_eq!(rows.len(), entries.len() + 1);
    for (row, entry) in rows[1..].iter().zip(entries) {
        let metadata = if entry["metadata"].is_null() { String::new() } else { entry["metadata"].to_string() };
        let expected = [
            entry["rank"].to_string(),
            entry["user"]["id"].to_string(),
            defused(entry["user"]["display_name"].as_str().unwrap()),
            defused(&entry["score"].to_string()),
            "[]".to_owned(),
            entry["achieved_at"].as_str().unwrap().to_owned(),
            metadata,
        ];
        assert_eq!(row, &expected);
    }

    let (status, headers, ndjson) = export(&app, "exp/export?format=ndjson&period=0").await;
    assert_eq!(status, StatusCode::OK, "{ndjson}");
    assert_eq!(headers["content-type"], "application/x-ndjson");
    let lines: Vec<Value> = ndjson.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), entries.len());
    for (line, entry) in lines.iter().zip(entries) {
        let expected = json!({
            "rank": entry["rank"], "user_id": entry["user"]["id"], "display_name": entry["user"]["display_name"],
            "score": entry["score"], "subscores": [], "achieved_at": entry["achieved_at"], "metadata": entry["metadata"],
        });
        assert_eq!(line, &expected);
    }

    // The built-in boards export too; `total` has no `achieved_at`.
    for (id, score) in [(0, 30), (1, 10), (2, 30)] {
        app.post_score(&players[id], score).await;
    }
    let (status, _, csv) = export(&app, "total/export").await;
    assert_eq!(status, StatusCode::OK, "{csv}");
    let rows = parse_csv(&csv);
    let ranks: Vec<(&str, &str, &str)> =
        rows[1..].iter().map(|r| (r[0].as_str(), r[3].as_str(), r[5].as_str())).collect();
    assert_eq!(ranks, [("1", "30", ""), ("1", "30", ""), ("3", "10", "")]);
    // An empty period is a header alone.
    app.create_board(&json!({"id": "empty", "name": "Empty"})).await;
    let (status, _, csv) = export(&app, "empty/export").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(csv, "rank,user_id,display_name,score,subscores,achieved_at,metadata\r\n");
}

async fn export_requests_are_validated(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "exp", "name": "Export"})).await;
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?format=xml", None).await;
    assert_error(status, &body, 422, "invalid_format");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?period=7", None).await;
    assert_error(status, &body, 404, "period_not_found");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?period=soon", None).await;
    assert_error(status, &body, 400, "invalid_period");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/nope/export", None).await;
    assert_error(status, &body, 404, "board_not_found");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?partition=FR", None).await;
    assert_error(status, &body, 404, "partition_not_found");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?partition=F.R", None).await;
    assert_error(status, &body, 404, "partition_not_found");
    let (status, body) = app.admin(Method::GET, "/api/admin/boards/exp/export?limit=5", None).await;
    assert_error(status, &body, 400, "invalid_query");
    let (status, body) = json_of(app.get("/api/admin/boards/exp/export").await).await;
    assert_error(status, &body, 401, "admin_token_required");
}

/// `GET /api/me/export`: one JSON document with every post (built-in,
/// custom, fed), entry, league place, tournament place and audit record
/// about the player, and none of their secrets.
async fn a_player_exports_everything_held_about_them(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "daily", "name": "Daily", "reset": "0 0 * * *"})).await;
    app.create_board(&json!({"id": "main", "name": "Main", "feeds": ["daily"]})).await;
    app.create_board(&json!({"id": "cup", "name": "Cup", "join_required": true})).await;
    let (status, league) = app
        .admin(
            Method::POST,
            "/api/admin/leagues",
            Some(&json!({"id": "ladder", "name": "Ladder", "tiers": ["Low", "High"], "cohort_size": 5,
                "promote": 1, "demote": 1, "reset": "0 0 * * *"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{league}");
    let player = app.register("exporter").await;
    let other = app.register("bystander").await;
    app.post_score(&player, 40).await;
    app.post_score(&other, 99).await;
    let (status, answer) =
        app.post_board_score_raw(&player.token, "main", &json!({"score": 7, "metadata": {"car": "red"}}), None).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let response = app.client.post(app.url("/api/boards/cup/entrants")).bearer_auth(&player.token).send().await;
    assert_eq!(response.unwrap().status(), StatusCode::CREATED);
    let response =
        app.client.post(app.url("/api/leagues/ladder/scores")).bearer_auth(&player.token).json(&json!({"score": 3}));
    assert_eq!(response.send().await.unwrap().status(), StatusCode::CREATED);
    let (status, _) = app
        .admin(Method::PATCH, &format!("/api/admin/users/{}", player.id), Some(&json!({"display_name": "Ex"})))
        .await;
    assert_eq!(status, StatusCode::OK);

    let response = app.client.get(app.url("/api/me/export")).bearer_auth(&player.token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-disposition"],
        format!("attachment; filename=\"hiscore-{}.json\"", player.id)
    );
    let text = response.text().await.unwrap();
    assert!(!text.contains(&player.token) && !text.contains("password") && !text.contains("$2"), "{text}");
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["account"]["login_name"], "exporter");
    assert_eq!(document["account"]["display_name"], "Ex");
    let posts = document["posts"].as_array().unwrap();
    let boards: Vec<(&str, i64, Option<&str>)> =
        posts.iter().map(|p| (p["board"].as_str().unwrap(), p["score"].as_i64().unwrap(), p["via"].as_str())).collect();
    assert_eq!(boards, [("best", 40, None), ("main", 7, None), ("daily", 7, Some("main")), ("ladder", 3, None)]);
    assert_eq!(posts[1]["metadata"], json!({"car": "red"}));
    assert!(posts.iter().all(|p| p["status"] == "accepted"), "{text}");
    let entries: Vec<&str> =
        document["entries"].as_array().unwrap().iter().map(|e| e["board"].as_str().unwrap()).collect();
    assert_eq!(entries, ["daily", "ladder", "main"]);
    assert_eq!(document["leagues"]["memberships"], json!([{"league": "ladder", "tier": 0}]));
    assert_eq!(document["leagues"]["history"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(document["entrants"][0]["board"], "cup");
    assert_eq!(document["rewards"], json!([]));
    let actions: Vec<&str> =
        document["audit"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["rename"]);
    // Nothing of the other player.
    assert!(!text.contains("bystander"), "{text}");
    let (status, body) = json_of(app.get("/api/me/export").await).await;
    assert_error(status, &body, 401, "session_required");
}

/// Two board exports run at once on an instance; a third is 429 with
/// `Retry-After` while both stream, and a slot is free again once a
/// client goes away. The board is large enough (about 250,000 entries,
/// some 34 MB of NDJSON) that neither held export can finish into the
/// sockets' buffers while its client reads nothing.
#[actix_web::test]
async fn a_third_board_export_waits_for_a_slot() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    let (status, body) = app.initialize(ADMIN, &json!({"users": 400_000, "scores": 400_000, "seed": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let open = || async {
        let url = app.url("/api/admin/boards/best/export?format=ndjson");
        app.client.get(url).bearer_auth(ADMIN).send().await.unwrap()
    };
    let first = open().await;
    let second = open().await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let third = open().await;
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key("retry-after"), "{:?}", third.headers());
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_requests", "{body}");

    drop(first);
    let mut freed = false;
    for _ in 0..50 {
        let again = open().await;
        if again.status() == StatusCode::OK {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(freed, "the slot of an export whose client went away is given back");
    drop(second);
}
