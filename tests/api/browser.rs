//! The ranking page in a real headless Chromium, through nginx in front of
//! the real service: register, post scores, open the board, "load more"
//! twice, and check the ranks shown. Needs nginx, chromium and chromedriver
//! (`.ci/run` installs them and sets TEST_REQUIRE_BROWSER=1, which turns a
//! missing tool into a failure instead of a skip).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::external::{free_port, nginx_in_front_of, tool, wait_for_port, Process};
use crate::helpers::{ranks_and_ids, spawn_app_on, Backend, TestDatabase, ADMIN};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Just enough of the WebDriver protocol, over the HTTP client we have.
pub(crate) struct Browser {
    client: reqwest::Client,
    session: String,
}

impl Browser {
    async fn start(driver: &str) -> Self {
        let client = reqwest::Client::new();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1000,1400",
                // A name that is not localhost: the page runs in an insecure
                // context there (no crypto.randomUUID), as on a LAN address.
                "--host-resolver-rules=MAP game.test 127.0.0.1",
            ]},
        }}});
        let response: Value =
            client.post(format!("{driver}/session")).json(&capabilities).send().await.unwrap().json().await.unwrap();
        let session = response["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {response}"));
        Self { client, session: format!("{driver}/session/{session}") }
    }

    pub(crate) async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let request = self.client.request(method, format!("{}{path}", self.session));
        let request = if body.is_null() { request } else { request.json(&body) };
        let response: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(response["value"]["error"].is_null(), "{path}: {response}");
        response["value"].clone()
    }

    pub(crate) async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({"url": url})).await;
    }

    pub(crate) async fn script(&self, script: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/sync", json!({"script": script, "args": []})).await
    }

    /// Waits until `condition` (a JS expression) is truthy: up to 30 s,
    /// since CI runs this beside hundreds of other tests on two cores (a
    /// 10 s wait for "load more" timed out once there, never alone).
    pub(crate) async fn wait(&self, condition: &str) {
        let started = Instant::now();
        while self.script(&format!("return !!({condition});")).await != json!(true) {
            assert!(started.elapsed() < Duration::from_secs(30), "timed out waiting for {condition}");
            actix_web::rt::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn type_into(&self, id: &str, text: &str) {
        self.script(&format!(
            "const e = document.getElementById({id:?}); e.value = {text:?}; e.dispatchEvent(new Event('input'));"
        ))
        .await;
    }

    /// Types into the element as a keyboard does (WebDriver key codes:
    /// `\u{E007}` is Enter).
    pub(crate) async fn send_keys(&self, id: &str, keys: &str) {
        let element = self.element(id).await;
        self.call(reqwest::Method::POST, &format!("/element/{element}/value"), json!({"text": keys})).await;
    }

    async fn element(&self, id: &str) -> String {
        let element = self
            .call(reqwest::Method::POST, "/element", json!({"using": "css selector", "value": format!("#{id}")}))
            .await;
        element.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).unwrap().to_owned()
    }

    /// Clicks the element once it exists and the page is not busy (the
    /// console marks itself `aria-busy` while a view or action loads, and
    /// may then render the element again).
    pub(crate) async fn click_when_shown(&self, id: &str) {
        self.wait(&format!("document.getElementById({id:?}) !== null && !document.body.hasAttribute('aria-busy')"))
            .await;
        self.click(id).await;
    }

    pub(crate) async fn click(&self, id: &str) {
        let element = self.element(id).await;
        self.call(reqwest::Method::POST, &format!("/element/{element}/click"), json!({})).await;
    }

    pub(crate) async fn screenshot(&self, path: &Path) {
        let png = self.call(reqwest::Method::GET, "/screenshot", Value::Null).await;
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    async fn ranks_shown(&self) -> Vec<(i64, i64)> {
        let shown = self
            .script("return [...document.querySelectorAll('#entries li')].map(li => [Number(li.dataset.rank), Number(li.dataset.userId)]);")
            .await;
        serde_json::from_value(shown).unwrap()
    }
}

/// Chromium driven through chromedriver, looking at nginx in front of
/// `app` exactly as nginx/run-local.sh runs it; None (the test skips)
/// where a tool is missing and TEST_REQUIRE_BROWSER is not set.
pub(crate) struct BrowserFront {
    pub browser: Browser,
    /// `http://127.0.0.1:<nginx port>`.
    pub site: String,
    /// The same site at a name that is not localhost (no secure context).
    pub lan_site: String,
    _nginx: crate::external::Fronted,
    _driver: Process,
}

pub(crate) async fn browser_through_nginx(app: &crate::helpers::TestApp) -> Option<BrowserFront> {
    let required = crate::helpers::switch_on("TEST_REQUIRE_BROWSER");
    let (Some(_), Some(chromedriver), true) = (tool("nginx"), tool("chromedriver"), Path::new(CHROMIUM).is_file())
    else {
        assert!(!required, "TEST_REQUIRE_BROWSER=1 but nginx, chromedriver or chromium is missing");
        let _ = writeln!(
            std::io::stderr(),
            "\nnote: nginx/chromium/chromedriver not installed: the browser test is SKIPPED\n"
        );
        return None;
    };
    let nginx = nginx_in_front_of(app.address.trim_start_matches("http://")).await?;
    let driver_port = free_port();
    let driver =
        Process(Command::new(chromedriver).arg(format!("--port={driver_port}")).stdout(Stdio::null()).spawn().unwrap());
    wait_for_port(driver_port).await;
    let browser = Browser::start(&format!("http://127.0.0.1:{driver_port}")).await;
    let site = nginx.site.clone();
    let lan_site = site.replace("127.0.0.1", "game.test");
    Some(BrowserFront { browser, site, lan_site, _nginx: nginx, _driver: driver })
}

#[actix_web::test]
async fn the_ranking_page_works_in_chromium_through_nginx() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let app = spawn_app_on(&db, &["--admin-token", ADMIN, "--static-dir", static_dir]).await;
    let (status, _) = app.initialize(ADMIN, &json!({"users": 60, "scores": 600, "seed": 11})).await;
    assert_eq!(status, 200);
    // A lowest-time board that resets every second, with entries in two
    // periods. It keeps the most ended periods the contract allows: the
    // page steps back to the first one a minute or more later on a loaded
    // machine.
    app.create_board(
        &json!({"id": "laps", "name": "Lap time (ms)", "order": "asc", "reset": "* * * * * *", "archive_periods": 1000}),
    )
    .await;
    let runners = [app.register("runner_a").await, app.register("runner_b").await];
    // Both runners in one period: on a loaded machine the second post can
    // land in the next second's (a CI run failed on it), so the pair is
    // posted again until both land in the same one.
    let first_period = loop {
        let a = app.post_board_score(&runners[0], "laps", 61_250).await["period"]["index"].as_i64().unwrap();
        let b = app.post_board_score(&runners[1], "laps", 59_900).await["period"]["index"].as_i64().unwrap();
        if a == b {
            break a;
        }
    };
    let mut later_period = first_period;
    while later_period == first_period {
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        later_period = app.post_board_score(&runners[1], "laps", 58_000).await["period"]["index"].as_i64().unwrap();
    }

    // A board with tie-breakers: most kills, then least time, after the score.
    app.create_board(&json!({"id": "arena", "name": "Arena", "subscores":
        [{"name": "kills", "order": "desc"}, {"name": "time_ms", "order": "asc"}]}))
        .await;
    let (status, posted) = app
        .post_board_score_raw(&runners[0].token, "arena", &json!({"score": 300, "subscores": [12, 95_000]}), None)
        .await;
    assert_eq!(status, 201, "{posted}");
    // A board with partitions: one runner in each of two cities.
    app.create_board(&json!({"id": "cities", "name": "Cities", "partition_by": "city"})).await;
    for (runner, city, score) in [(&runners[0], "Lyon", 40), (&runners[1], "Oslo", 50)] {
        let body = json!({"score": score, "metadata": {"city": city}});
        let (status, posted) = app.post_board_score_raw(&runner.token, "cities", &body, None).await;
        assert_eq!(status, 201, "{posted}");
    }

    // A league with two players placed in one cohort (ranks 1 and 2 of 3
    // once the page's player posts between them).
    let league = json!({"id": "weekly", "name": "Weekly league", "tiers": ["Bronze", "Silver"], "cohort_size": 30,
        "promote": 1, "demote": 1, "reset": "0 0 * * 1"});
    assert_eq!(app.admin(reqwest::Method::POST, "/api/admin/leagues", Some(&league)).await.0, 201);
    for (name, score) in [("leader", 500), ("trailer", 300)] {
        let player = app.register(name).await;
        let posted = app.client.post(app.url("/api/leagues/weekly/scores")).bearer_auth(&player.token);
        assert_eq!(posted.json(&json!({"score": score})).send().await.unwrap().status(), 201);
    }
    // nginx in front, exactly as nginx/run-local.sh runs it.
    let Some(front) = browser_through_nginx(&app).await else { return };
    let (browser, site) = (&front.browser, &front.site);

    // Register and post two scores through the page, opened at a name that
    // is not localhost: no secure context, no crypto.randomUUID.
    browser.open(&format!("{}/", front.lan_site)).await;
    browser.wait("document.querySelectorAll('#entries li').length === 10").await;
    assert_eq!(browser.script("return window.isSecureContext;").await, json!(false));
    browser.type_into("login-name", "browser_player").await;
    browser.type_into("password", "a good password").await;
    browser.type_into("display-name", "Browser Bea").await;
    browser.click("register").await;
    browser.wait("!document.getElementById('logged-in').classList.contains('hidden')").await;
    browser.wait("document.getElementById('whoami').textContent.startsWith('Browser Bea')").await;
    for (score, shown) in [("1000", "New best: 1,000!"), ("2000000", "New best: 2,000,000!")] {
        browser.type_into("score", score).await;
        browser.click("post-score").await;
        browser.wait(&format!("document.getElementById('score-message').textContent === {shown:?}")).await;
    }

    // The league: placed by a post from the page, the player sees their
    // cohort ranked, with each row's zone and their own.
    browser.wait("!document.getElementById('league-section').hidden").await;
    browser.wait("document.getElementById('league-summary').textContent.includes('to be placed')").await;
    browser.type_into("league-score", "400").await;
    browser.click("league-post").await;
    browser.wait("document.querySelectorAll('#league-entries li').length === 3").await;
    let zones = browser
        .script("return [...document.querySelectorAll('#league-entries li')].map(li => [Number(li.dataset.rank), li.dataset.zone, li.classList.contains('me')]);")
        .await;
    assert_eq!(zones, json!([[1, "promote", false], [2, "stay", true], [3, "stay", false]]), "tier 0 demotes no one");
    assert_eq!(browser.script("return document.getElementById('league-summary').dataset.zone;").await, json!("stay"));

    // The board, then "load more" twice: ranks 1..30 as the API ranks them.
    // A double click loads one page, not two.
    // "load more" is disabled while a page loads: the clicks wait for the
    // tab's own load (the ten rows already shown are the last load's, and
    // clicks on a disabled button are lost: a CI run timed out on it).
    browser.click("tab-best").await;
    browser
        .wait("document.querySelectorAll('#entries li').length === 10 && !document.getElementById('more').disabled")
        .await;
    browser.script("const more = document.getElementById('more'); more.click(); more.click();").await;
    browser.wait("document.querySelectorAll('#entries li').length === 20").await;
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        browser.script("return document.querySelectorAll('#entries li').length;").await,
        json!(20),
        "a double click appended twice"
    );
    browser.click("more").await;
    browser.wait("document.querySelectorAll('#entries li').length === 30").await;
    let shown = browser.ranks_shown().await;
    let (_, expected) =
        crate::helpers::json_of(reqwest::get(format!("{site}/api/rankings/best?limit=30")).await.unwrap()).await;
    assert_eq!(shown, ranks_and_ids(&expected), "the page shows the API's ranks");
    assert_eq!(shown[0].0, 1);
    assert!(shown.windows(2).all(|w| w[1].0 >= w[0].0), "ranks never go back: {shown:?}");
    // Each row says how far up the board it is, as the API does.
    let tops =
        browser.script("return [...document.querySelectorAll('#entries li .top')].map(t => t.textContent);").await;
    let expected_tops: Vec<String> =
        expected["entries"].as_array().unwrap().iter().map(|entry| format!("top {}%", entry["top_percent"])).collect();
    assert_eq!(tops, json!(expected_tops));
    let ids: std::collections::HashSet<i64> = shown.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), 30, "nobody twice");
    assert!(
        browser.script("return document.querySelector('#entries li.me') !== null;").await == json!(true),
        "the player is highlighted"
    );

    // Around me is live too: a score posted elsewhere just above the
    // player appears in the window without a reload.
    browser.click("around").await;
    browser.wait("document.querySelectorAll('#entries li').length <= 11 && document.querySelector('#entries li.me') !== null").await;
    actix_web::rt::time::sleep(Duration::from_millis(500)).await; // the live window connects
    browser.script("window.aroundNotReloaded = true;").await;
    let above = app.register("just_above").await;
    app.post_score(&above, 2_000_001).await;
    browser
        .wait("window.aroundNotReloaded === true && [...document.querySelectorAll('#entries li')].some(li => li.textContent.includes('just_above'))")
        .await;

    // A custom board from the picker: lowest time first, then an earlier period.
    browser.script("const p = document.getElementById('board-picker'); p.value = 'laps'; p.dispatchEvent(new Event('change'));").await;
    browser.wait("document.getElementById('summary').textContent.includes('lowest first')").await;
    browser.wait("!document.getElementById('period').hidden").await;
    let current = browser.script("return Number(document.getElementById('period-label').dataset.index);").await;
    assert!(current.as_i64().unwrap() >= later_period, "{current}");
    // Step back to the first period: its two runners, lowest time first.
    for earlier in (first_period..current.as_i64().unwrap()).rev() {
        browser.click("period-earlier").await;
        browser.wait(&format!("Number(document.getElementById('period-label').dataset.index) === {earlier}")).await;
    }
    browser.wait("document.getElementById('period-label').textContent.includes('(ended)')").await;
    browser.wait("document.querySelectorAll('#entries li').length === 2").await;
    let (_, period_page) = crate::helpers::json_of(
        reqwest::get(format!("{site}/api/rankings/laps?limit=10&period={first_period}")).await.unwrap(),
    )
    .await;
    assert_eq!(browser.ranks_shown().await, ranks_and_ids(&period_page), "the page shows the period as the API does");
    assert_eq!(ranks_and_ids(&period_page), [(1, runners[1].id), (2, runners[0].id)], "lowest time first");

    // The board with subscores: an input per subscore, by name; a post from
    // the page with more kills ranks first, each row shows its subscores.
    browser.script("const p = document.getElementById('board-picker'); p.value = 'arena'; p.dispatchEvent(new Event('change'));").await;
    browser.wait("document.querySelectorAll('#subscore-inputs input').length === 2").await;
    browser.wait("document.querySelectorAll('#entries li').length === 1").await;
    let names = browser
        .script("return [...document.querySelectorAll('#subscore-inputs input')].map(i => i.dataset.subscore);")
        .await;
    assert_eq!(names, json!(["kills", "time_ms"]));
    browser.type_into("score", "300").await;
    browser
        .script(
            "const [k, t] = document.querySelectorAll('#subscore-inputs input'); k.value = '13'; t.value = '99000';",
        )
        .await;
    browser.click("post-score").await;
    browser.wait("document.querySelectorAll('#entries li').length === 2").await;
    let (_, arena) = crate::helpers::json_of(reqwest::get(format!("{site}/api/rankings/arena")).await.unwrap()).await;
    assert_eq!(arena["entries"][0]["subscores"], json!([13, 99_000]), "{arena}");
    assert_eq!(browser.ranks_shown().await, ranks_and_ids(&arena), "the page ranks ties as the API does");
    let shown = browser
        .script("return [...document.querySelectorAll('#entries li .subscores')].map(s => s.textContent.replace(/[^a-z0-9_ ·]/g, ''));")
        .await;
    assert_eq!(shown, json!(["kills 13 · time_ms 99000", "kills 12 · time_ms 95000"]), "digit groups aside");

    // The board with partitions: a picker of its partitions; one picked
    // shows its own entries and ranks; a post from the page to a partition
    // lands there.
    browser.script("const p = document.getElementById('board-picker'); p.value = 'cities'; p.dispatchEvent(new Event('change'));").await;
    browser.wait("!document.getElementById('partition-field').hidden").await;
    browser.wait("document.querySelectorAll('#partition-picker option').length === 3").await;
    let options =
        browser.script("return [...document.querySelectorAll('#partition-picker option')].map(o => o.value);").await;
    assert_eq!(options, json!(["", "Lyon", "Oslo"]));
    browser.wait("document.querySelectorAll('#entries li').length === 2").await;
    browser.script("const p = document.getElementById('partition-picker'); p.value = 'Lyon'; p.dispatchEvent(new Event('change'));").await;
    browser.wait("document.querySelectorAll('#entries li').length === 1").await;
    browser.wait("document.getElementById('summary').textContent.includes('in Lyon')").await;
    browser.type_into("score", "45").await;
    browser.click("post-score").await;
    browser.wait("document.querySelectorAll('#entries li').length === 2").await;
    let (_, lyon) =
        crate::helpers::json_of(reqwest::get(format!("{site}/api/rankings/cities?partition=Lyon")).await.unwrap())
            .await;
    assert_eq!(lyon["total_players"], 2, "{lyon}");
    assert_eq!(browser.ranks_shown().await, ranks_and_ids(&lyon), "the page shows the partition as the API does");
    browser.script("const p = document.getElementById('board-picker'); p.value = 'best'; p.dispatchEvent(new Event('change'));").await;
    browser.wait("document.querySelectorAll('#subscore-inputs input').length === 0").await;
    browser.wait("document.getElementById('partition-field').hidden").await;

    // The player's own account: a new display name shows on the board; a
    // new password needs the current one; deleting needs a confirmation
    // and takes the player off every board.
    browser.click("tab-best").await;
    browser.script("document.getElementById('settings').open = true;").await;
    browser.type_into("new-display-name", "Bea Renamed").await;
    browser.click("change-name").await;
    browser.wait("document.getElementById('whoami').textContent.startsWith('Bea Renamed')").await;
    browser
        .wait("[...document.querySelectorAll('#entries li.me .name')].some(n => n.textContent === 'Bea Renamed')")
        .await;
    browser.type_into("current-password", "not my password").await;
    browser.type_into("new-password", "an even better one").await;
    browser.click("change-password").await;
    browser.wait("document.getElementById('settings-message').classList.contains('error')").await;
    browser.type_into("current-password", "a good password").await;
    browser.click("change-password").await;
    browser.wait("document.getElementById('settings-message').textContent.startsWith('Password changed')").await;
    let (status, _) = app.login("browser_player", "an even better one").await;
    assert_eq!(status, 200, "the new password logs in");
    browser.type_into("delete-password", "an even better one").await;
    browser.click("delete-account").await;
    browser.wait("!document.getElementById('delete-confirm').hidden").await;
    assert_eq!(
        app.login("browser_player", "an even better one").await.0,
        200,
        "nothing deleted before the confirmation"
    );
    browser.click("delete-confirm").await;
    browser.wait("!document.getElementById('logged-out').classList.contains('hidden')").await;
    browser.wait("document.querySelectorAll('#entries li.me').length === 0").await;
    assert_eq!(app.login("browser_player", "an even better one").await.0, 401, "the account is gone");
    let (_, top) =
        crate::helpers::json_of(reqwest::get(format!("{site}/api/rankings/best?limit=100")).await.unwrap()).await;
    assert!(!top.to_string().contains("Bea Renamed"), "{top}");

    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-test/ranking-page.png");

    // The board is live: a score posted elsewhere appears without a reload
    // (a reload would lose the mark set on the window).
    browser.click("tab-best").await;
    browser.wait("document.querySelectorAll('#entries li').length === 10").await;
    actix_web::rt::time::sleep(Duration::from_millis(500)).await; // the live page connects
    browser.script("window.notReloaded = true;").await;
    let elsewhere = app.register("posted_elsewhere").await;
    app.post_score(&elsewhere, 999_999_999).await;
    browser
        .wait("window.notReloaded === true && document.querySelector('#entries li').textContent.includes('posted_elsewhere')")
        .await;
    browser.screenshot(&screenshot).await;
    browser.call(reqwest::Method::DELETE, "", Value::Null).await;
}

#[actix_web::test]
async fn nginx_caches_assets_compresses_and_keeps_upstream_connections_alive() {
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let app = spawn_app_on(&db, &["--static-dir", concat!(env!("CARGO_MANIFEST_DIR"), "/static")]).await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let Some(front) = nginx_in_front_of(&upstream).await else { return };
    let client = reqwest::Client::new();

    let page = client.get(format!("{}/", front.site)).send().await.unwrap();
    assert_eq!(page.headers()["cache-control"], "no-cache", "index.html is revalidated");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    let asset = html.split("src=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    assert!(asset.starts_with("/assets/app."), "{asset}");
    let script = client.get(format!("{}{asset}", front.site)).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(script.status(), 200);
    assert_eq!(script.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(script.headers()["content-encoding"], "gzip");

    // /api goes to the app, compressed, over kept-alive upstream connections:
    // 60 requests leave (almost) no closed connections towards the app.
    for _ in 0..60 {
        let response = client
            .get(format!("{}/api/rankings/best?limit=100", front.site))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let app_port = upstream.rsplit(':').next().unwrap();
    let closed =
        Command::new("ss").args(["-tan", "state", "time-wait", &format!("( dport = :{app_port} )")]).output().unwrap();
    let closed = String::from_utf8_lossy(&closed.stdout).lines().skip(1).count();
    assert!(closed < 10, "{closed} upstream connections were closed: keepalive is not working");

    // A live page passes through nginx event by event (no buffering): the
    // first page at once, the next when a post changes it.
    let mut live =
        crate::helpers::Events::open_url(&client, &format!("{}/api/rankings/best/live", front.site), None).await;
    let first = live.next(Duration::from_secs(5)).await.expect("the first page through nginx");
    assert_eq!(first.data["total_players"], 0);
    let player = app.register("live_through_nginx").await;
    app.post_score(&player, 77).await;
    let next = live.next(Duration::from_secs(5)).await.expect("the next page through nginx, unbuffered");
    assert_eq!(ranks_and_ids(&next.data), [(1, player.id)]);
    drop(live);

    // Metrics are not for the public (nginx denies all but localhost, and
    // this request comes from localhost, so only check it is proxied).
    assert_eq!(client.get(format!("{}/metrics", front.site)).send().await.unwrap().status(), 200);
    // An encoded slash or dot never reaches a route: nginx matches the
    // decoded path (/api/x here, past the admin block) but would pass on
    // the raw one (an admin route).
    for sneaky in [
        "/api/admin/boards/..%2F..%2Fx",
        "/api/rankings/best%2f..%2F..%2Fadmin%2Fusers",
        "/api/%2e%2e%2fadmin%2fboards%2fx",
    ] {
        let response = client.delete(format!("{}{sneaky}", front.site)).send().await.unwrap();
        assert_eq!(response.status(), 400, "{sneaky}");
        assert!(response.headers().get("x-request-id").is_none(), "nginx itself refused {sneaky}, not the app");
        assert_eq!(response.json::<Value>().await.unwrap()["error"]["code"], "invalid_path", "{sneaky}");
    }
    // The console: nginx serves it with the same policy as the app.
    for path in ["/admin/", "/admin/index.html"] {
        let page = client.get(format!("{}{path}", front.site)).send().await.unwrap();
        assert_eq!(page.status(), 200, "{path}");
        assert_eq!(page.headers()["content-security-policy"], hiscore::routes::CONSOLE_POLICY, "{path}");
        assert_eq!(page.headers()["cache-control"], "no-cache", "{path}");
        assert!(page.text().await.unwrap().contains("/assets/console."), "{path}");
    }
    let missing = client.get(format!("{}/api/nope", front.site)).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"]["code"], "not_found", "API errors pass through as JSON");
}
