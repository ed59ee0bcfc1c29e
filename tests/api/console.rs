//! The operator's console (`/admin/`) in a real headless Chromium, through
//! nginx in front of the real service: a moderator's session (find a
//! player, remove a post, accept a held post, see both in the audit log,
//! be refused board and key changes) and the admin's (create boards with
//! feeds, rewards and a partition, see a period close, its grants and its
//! exports, and the reward in the player's list). Skipped like the ranking
//! page's test where the browser tools are missing.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::{browser_through_nginx, Browser};
use crate::helpers::{json_of, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

/// Where the test leaves its screenshots (the README's and docs/moderation.md's come from here).
const SCREENSHOTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/browser-test");

/// Signs in from the keyboard: the token typed, then Enter.
async fn sign_in(browser: &Browser, site: &str, token: &str, role: &str) {
    browser.open(&format!("{site}/admin/")).await;
    browser.wait("document.getElementById('token') !== null").await;
    browser.send_keys("token", &format!("{token}\u{E007}")).await;
    browser.wait(&format!("document.getElementById('actor').textContent.endsWith('({role})')")).await;
    browser.wait("document.getElementById('boards-table') !== null").await;
}

async fn message(browser: &Browser, containing: &str) {
    browser.wait(&format!("document.getElementById('message').textContent.includes({containing:?})")).await;
}

async fn text_of(browser: &Browser, id: &str) -> String {
    let found = browser.script(&format!("return document.getElementById({id:?}).textContent;")).await;
    found.as_str().unwrap().to_owned()
}

async fn audit_entries(app: &TestApp) -> Vec<Value> {
    let (status, audit) = app.admin(reqwest::Method::GET, "/api/admin/audit?limit=100", None).await;
    assert_eq!(status, 200, "{audit}");
    audit["entries"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn an_operators_session_in_the_console_through_nginx() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let app = spawn_app_on(&db, &["--admin-token", ADMIN, "--static-dir", static_dir, "--webhook-allow-private"]).await;
    let Some(front) = browser_through_nginx(&app).await else { return };
    let (browser, site) = (&front.browser, front.site.as_str());

    // A board that holds big jumps, a cheat's posts on it and on the
    // built-in boards, and a moderator's key.
    app.create_board(&json!({"id": "arena", "name": "Arena", "hold_beyond": 1000})).await;
    let honest = app.register("honest_hal").await;
    let mallory = app.register("mallory").await;
    app.post_board_score(&honest, "arena", 500).await;
    let (status, held) = app.post_board_score_raw(&mallory.token, "arena", &json!({"score": 5000}), None).await;
    assert_eq!(status, 202, "{held}");
    let held_id = held["score"]["id"].as_i64().unwrap();
    let removed_id = app.post_score(&mallory, 777).await["score"]["id"].as_i64().unwrap();
    let (status, key) = app
        .admin(reqwest::Method::POST, "/api/admin/keys", Some(&json!({"name": "moderators", "role": "moderator"})))
        .await;
    assert_eq!(status, 201, "{key}");
    let moderator = format!("key:{}", key["id"]);

    // The moderator signs in; the key is kept for the tab only.
    sign_in(browser, site, key["key"].as_str().unwrap(), "moderator").await;
    assert_eq!(browser.script("return window.localStorage.length;").await, json!(0));
    assert_eq!(browser.script("return document.cookie;").await, json!(""));

    // Finds the player and removes their post on the built-in boards. A
    // view shown moves the focus to its title (keyboard users start there).
    browser.click("nav-players").await;
    browser.wait("document.activeElement.id === 'players-title'").await;
    browser.type_into("player-query", "mall").await;
    browser.click("player-search-button").await;
    browser.click_when_shown(&format!("open-player-{}", mallory.id)).await;
    browser.click_when_shown(&format!("remove-post-{removed_id}")).await;
    message(browser, &format!("Post {removed_id} removed.")).await;
    let (_, profile) = app.get_json(&format!("/api/users/{}", mallory.id)).await;
    assert_eq!(profile["best_score"], 0, "{profile}");
    // Renames them, bans them, and unbans them.
    browser.type_into("rename-input", "Mallory (renamed)").await;
    browser.click("rename").await;
    message(browser, "Renamed.").await;
    browser.wait("document.getElementById('player-title').textContent.endsWith('Mallory (renamed)')").await;
    browser.type_into("ban-reason", "cheating, then forgiven").await;
    browser.click("ban").await;
    browser.wait("document.getElementById('unban') !== null").await;
    let (status, _) = app.get_json(&format!("/api/users/{}", mallory.id)).await;
    assert_eq!(status, 404, "banned: off every board");
    message(browser, "Banned.").await;
    browser.wait("document.getElementById('player-title').textContent.includes('(banned)')").await;
    browser.click("unban").await;
    message(browser, "Unbanned.").await;
    browser.wait("document.getElementById('ban') !== null").await;
    let (_, profile) = app.get_json(&format!("/api/users/{}", mallory.id)).await;
    assert_eq!(profile["display_name"], "Mallory (renamed)", "{profile}");

    // Accepts the held post with a note: it ranks first at once.
    browser.click("nav-held").await;
    browser.wait(&format!("document.getElementById('accept-{held_id}') !== null")).await;
    browser.screenshot(&Path::new(SCREENSHOTS).join("console-held.png")).await;
    browser
        .script(&format!("document.querySelector('[aria-label=\"Note on post {held_id}\"]').value = 'seen on stream';"))
        .await;
    browser.click(&format!("accept-{held_id}")).await;
    message(browser, &format!("Post {held_id} accepted.")).await;
    browser.wait("document.getElementById('held-table').textContent === 'Nothing is held.'").await;
    let (_, arena) = app.get_json("/api/rankings/arena").await;
    assert_eq!(arena["entries"][0]["user"]["id"], mallory.id, "{arena}");

    // Sees both in the audit log, under the key's name.
    browser.click("nav-audit").await;
    browser.wait("document.getElementById('audit-table') !== null").await;
    let rows = browser
        .script("return [...document.querySelectorAll('#audit-table tbody tr')].map(tr => [...tr.cells].slice(1, 3).map(td => td.textContent));")
        .await;
    for action in ["accept_score", "delete_score", "rename", "ban", "unban"] {
        assert!(rows.as_array().unwrap().contains(&json!([moderator, action])), "{action} by {moderator}: {rows}");
    }
    browser.screenshot(&Path::new(SCREENSHOTS).join("console-audit.png")).await;

    // Board and key changes are refused for the role, and nothing changes.
    browser.click("nav-boards").await;
    browser.click_when_shown("open-board-arena").await;
    browser.wait("document.getElementById('edit-board-name') !== null").await;
    browser.type_into("edit-board-name", "Renamed by a moderator").await;
    browser.click("board-save").await;
    message(browser, "forbidden_for_role").await;
    let (_, board) = app.get_json("/api/boards/arena").await;
    assert_eq!(board["name"], "Arena");
    browser.click("nav-keys").await;
    browser.wait("document.getElementById('keys-table') !== null").await;
    browser.script("document.getElementById('key-new').open = true;").await;
    browser.type_into("key-name", "a key of my own").await;
    browser.click("key-create").await;
    message(browser, "forbidden_for_role").await;
    let (_, keys) = app.admin(reqwest::Method::GET, "/api/admin/keys", None).await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
    let refused = audit_entries(&app).await.iter().filter(|entry| entry["actor"] == moderator).count();
    assert_eq!(refused, 5, "the refused changes left no entry");

    // Signing out forgets the key.
    browser.click("sign-out").await;
    browser.wait("!document.getElementById('sign-in').hidden").await;
    assert_eq!(browser.script("return window.sessionStorage.length;").await, json!(0));

    // The admin: a daily board with rewards, and a season board feeding
    // it, partitioned by city, with rewards of its own; both from the form.
    sign_in(browser, site, ADMIN, "admin").await;
    let rewards = json!([{"ranks": [1, 1], "reward": {"gems": 100}}]);
    for (id, fields) in [
        (
            "daily",
            json!({"name": "Daily", "reset": "*/4 * * * * *", "archive_periods": "1000", "rewards": rewards.to_string()}),
        ),
        (
            "season",
            json!({"name": "Season", "reset": "*/4 * * * * *", "archive_periods": "1000", "feeds": "daily",
            "partition_by": "city", "rewards": rewards.to_string()}),
        ),
    ] {
        browser.script("document.getElementById('board-new').open = true;").await;
        browser.type_into("new-board-id", id).await;
        for (field, value) in fields.as_object().unwrap() {
            browser.type_into(&format!("new-board-{field}"), value.as_str().unwrap()).await;
        }
        browser.click("board-create").await;
        message(browser, &format!("Board {id} created.")).await;
    }
    let (_, season) = app.get_json("/api/boards/season").await;
    assert_eq!(
        (&season["feeds"], &season["partition_by"], &season["rewards"]),
        (&json!(["daily"]), &json!("city"), &rewards)
    );
    browser.screenshot(&Path::new(SCREENSHOTS).join("console-boards.png")).await;

    // A league with rewards per cohort, then renamed.
    browser.click("nav-leagues").await;
    browser.wait("document.getElementById('leagues-table') !== null").await;
    browser.script("document.getElementById('league-new').open = true;").await;
    for (field, value) in [
        ("id", "weekly"),
        ("name", "Weekly"),
        ("tiers", "Bronze, Silver"),
        ("cohort_size", "30"),
        ("promote", "1"),
        ("demote", "1"),
        ("reset", "0 0 * * 1"),
        ("rewards", &rewards.to_string()),
    ] {
        browser.type_into(&format!("new-league-{field}"), value).await;
    }
    browser.click("league-create").await;
    message(browser, "League weekly created.").await;
    browser.wait("document.getElementById('edit-league-name') !== null").await;
    browser.type_into("edit-league-name", "Weekly ladder").await;
    browser.click("league-save").await;
    message(browser, "League weekly changed.").await;
    let (_, league) = app.get_json("/api/leagues/weekly").await;
    assert_eq!(
        (&league["name"], &league["tiers"], &league["rewards"]),
        (&json!("Weekly ladder"), &json!(["Bronze", "Silver"]), &rewards)
    );

    // A webhook for the close (its secret shown once), and a viewer's key.
    browser.click("nav-webhooks").await;
    browser.wait("document.getElementById('webhooks-table') !== null").await;
    browser.script("document.getElementById('webhook-new').open = true;").await;
    browser.type_into("webhook-url", "http://127.0.0.1:9/hooks").await;
    browser.script("document.querySelector('#webhook-form input[value=\"reward.granted\"]').checked = true;").await;
    browser.click("webhook-create").await;
    message(browser, "Webhook created.").await;
    browser.wait("document.querySelector('#webhook-detail code')?.textContent.length > 0").await;
    let (_, webhooks) = app.admin(reqwest::Method::GET, "/api/admin/webhooks", None).await;
    let webhook = webhooks["webhooks"][0]["id"].clone();
    assert_eq!(webhooks["webhooks"][0]["events"], json!(["reward.granted"]), "{webhooks}");
    browser.click("nav-keys").await;
    browser.wait("document.getElementById('keys-table') !== null").await;
    browser.script("document.getElementById('key-new').open = true;").await;
    browser.type_into("key-name", "dashboards").await;
    browser.script("document.getElementById('key-role').value = 'viewer';").await;
    browser.click("key-create").await;
    message(browser, "Key created.").await;
    let shown_key = browser.script("return document.querySelector('#key-created code').textContent;").await;
    let (status, who) = json_of(
        app.client.get(app.url("/api/admin/whoami")).bearer_auth(shown_key.as_str().unwrap()).send().await.unwrap(),
    )
    .await;
    assert_eq!((status.as_u16(), &who["role"]), (200, &json!("viewer")), "the key shown works: {who}");
    browser.click("nav-boards").await;
    browser.wait("document.getElementById('boards-table') !== null").await;

    // A post to it (the game's part), then the period's close.
    let winner = app.register("winner_wu").await;
    let (status, posted) = app
        .post_board_score_raw(&winner.token, "season", &json!({"score": 42, "metadata": {"city": "Lyon"}}), None)
        .await;
    assert_eq!(status, 201, "{posted}");
    let period = posted["period"]["index"].as_i64().unwrap();
    // The close grants the season's reward and the fed daily board's.
    let started = Instant::now();
    loop {
        let (_, listed) = json_of(
            app.client
                .get(app.url(&format!("/api/users/{}/rewards?status=all", winner.id)))
                .bearer_auth(ADMIN)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let mut boards: Vec<&str> =
            listed["rewards"].as_array().unwrap().iter().filter_map(|r| r["board"].as_str()).collect();
        boards.sort_unstable();
        if boards == ["daily", "season"] {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "period {period} never closed: {listed}");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }

    // The period's grants and exports, from the board's page.
    browser.click("nav-boards").await;
    browser.click_when_shown("open-board-season").await;
    browser.click_when_shown(&format!("grants-{period}")).await;
    browser.wait("document.getElementById('grants-table')?.tagName === 'TABLE'").await;
    assert!(text_of(browser, "grants-table").await.contains("{\"gems\":100}"));
    browser.click(&format!("export-csv-{period}")).await;
    let name = format!("season-period-{period}.csv");
    browser.wait(&format!("document.getElementById('export-preview').dataset.name === {name:?}")).await;
    let exported = app
        .client
        .get(app.url(&format!("/api/admin/boards/season/export?period={period}")))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let preview = browser.script("return document.querySelector('#export-preview pre').textContent;").await;
    assert_eq!(preview.as_str().unwrap(), exported.trim_end().replace("\r\n", "\n"), "the console shows what it saved");
    assert!(exported.contains("winner_wu"), "{exported}");
    browser.click(&format!("partitions-{period}")).await;
    browser.click_when_shown("export-partition-Lyon").await;
    let name = format!("season-Lyon-period-{period}.csv");
    browser.wait(&format!("document.getElementById('export-preview').dataset.name === {name:?}")).await;

    // The close's delivery in the webhook's log (nothing listens there).
    browser.click("nav-webhooks").await;
    browser.click_when_shown(&format!("deliveries-{webhook}")).await;
    browser.wait("document.querySelectorAll('#deliveries-table tbody tr').length >= 1").await;
    assert!(text_of(browser, "deliveries-table").await.contains("reward.granted"));

    // The reward in the player's list.
    browser.click("nav-players").await;
    browser.type_into("player-query", "winner").await;
    browser.click("player-search-button").await;
    browser.click_when_shown(&format!("open-player-{}", winner.id)).await;
    browser.wait("document.getElementById('player-rewards-table')?.tagName === 'TABLE'").await;
    let shown = text_of(browser, "player-rewards-table").await;
    assert!(shown.contains("season") && shown.contains("{\"gems\":100}"), "{shown}");
    browser.screenshot(&Path::new(SCREENSHOTS).join("console-player.png")).await;

    browser.call(reqwest::Method::DELETE, "", Value::Null).await;
}
