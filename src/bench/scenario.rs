//! The virtual users: players who register, post and check themselves, and
//! viewers who read the boards like a ranking page does. Every answer is
//! checked against the contract and the bench's model.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::Method;
use serde_json::{json, Value};

use super::http::{shorten, Api, Reply};
use super::model::{Movements, PlayerModel};
use super::stats::{Recorder, Severity, Work};
use super::validate::{check_page, Board, Entry, PageView, Walk};

/// Boards larger than this are not walked end to end during the run.
pub const FULL_WALK_LIMIT: i64 = 20_000;
const WALK_PAGE: i64 = 100;

/// What every virtual user shares.
pub struct Context {
    pub api: Api,
    pub recorder: Arc<Recorder>,
    pub deadline: Instant,
    /// Makes this run's login names unique on a target that is not wiped.
    pub run_id: String,
    pub movements: Movements,
    /// Players found on the quiet board before the load (best, total).
    /// The bench never posts for them, so they never move.
    pub resident: HashMap<i64, (i64, i64)>,
    /// Whether boards are small enough to walk end to end.
    pub full_walks: bool,
    /// Static assets of the target's page (`/` first), if it serves one.
    pub static_paths: Vec<String>,
    /// Players whose runs ended, for the final exact check (and to carry
    /// on as, once `max_players` are registered).
    pub finished: std::sync::Mutex<Vec<PlayerModel>>,
    pub max_players: Option<usize>,
    pub registered: AtomicUsize,
    /// The custom boards this run created (with an admin token).
    pub boards: Vec<Arc<super::boards::BenchBoard>>,
    /// With an admin token the run also moderates (see `bench::moderation`).
    pub admin_token: Option<String>,
    /// Players being moderated (`None`) or when their last moderation
    /// ended: a page read before it may still show them as they were.
    pub moderated: std::sync::Mutex<HashMap<i64, Option<Instant>>>,
    pub randomness: Randomness,
}

/// Where each task of the scenario gets its random numbers: fresh
/// randomness, or with `--scenario-seed` one stream per task derived from
/// the seed (the n-th task started gets the n-th stream).
pub struct Randomness {
    seed: Option<u64>,
    streams: std::sync::atomic::AtomicU64,
}

impl Randomness {
    pub fn new(seed: Option<u64>) -> Self {
        Self { seed, streams: std::sync::atomic::AtomicU64::new(0) }
    }

    pub fn stream(&self) -> StdRng {
        match self.seed {
            Some(seed) => {
                let stream = self.streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Spread the streams apart (SplitMix64's increment).
                StdRng::seed_from_u64(seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            }
            None => StdRng::from_entropy(),
        }
    }
}

impl Context {
    pub fn running(&self) -> bool {
        Instant::now() < self.deadline && !self.recorder.failed()
    }

    /// Whether a player was moderated lately (or is being): what a page
    /// read a moment ago showed of them may have changed since.
    pub fn moderated_lately(&self, id: i64) -> bool {
        const LATELY: std::time::Duration = std::time::Duration::from_secs(10);
        let Ok(moderated) = self.moderated.lock() else { return false };
        moderated.get(&id).is_some_and(|ended| ended.is_none_or(|ended| ended.elapsed() < LATELY))
    }

    /// Whether a player was ever moderated in this run.
    pub fn was_moderated(&self, id: i64) -> bool {
        self.moderated.lock().map_or(true, |moderated| moderated.contains_key(&id))
    }

    /// Whether a moderation ran at some point since `since`.
    pub fn moderated_since(&self, since: Instant) -> bool {
        let Ok(moderated) = self.moderated.lock() else { return true };
        moderated.values().any(|ended| ended.is_none_or(|ended| ended >= since))
    }

    pub fn critical(&self, text: String) {
        self.recorder.error(Severity::Critical, text);
    }

    /// Checks status and (optionally) error code; a mismatch is critical.
    pub fn expect(&self, what: &str, reply: &Reply, status: u16, code: Option<&str>) -> bool {
        self.expect_one_of(what, reply, &[(status, code)])
    }

    /// Like [`Context::expect`], where the contract allows several answers
    /// (each a status and, if it names one, an error code).
    pub fn expect_one_of(&self, what: &str, reply: &Reply, allowed: &[(u16, Option<&str>)]) -> bool {
        let fits = |(status, code): &(u16, Option<&str>)| {
            reply.status == *status && code.is_none_or(|code| reply.error_code() == Some(code))
        };
        if allowed.iter().any(fits) {
            return true;
        }
        let wanted: Vec<String> = allowed
            .iter()
            .map(|(status, code)| code.map_or(status.to_string(), |code| format!("{status} {code}")))
            .collect();
        self.critical(format!(
            "{what}: expected {}, got {}: {}",
            wanted.join(" or "),
            reply.status,
            shorten(&reply.text)
        ));
        false
    }
}

/// A score as a game might produce: mostly modest, sometimes huge.
fn random_score(rng: &mut StdRng) -> i64 {
    let x: f64 = rng.gen();
    (x * x * x * 1_000_000.0) as i64
}

// ---------------------------------------------------------------- players

/// One player's life: register, then a mix of posts and self-checks.
pub async fn player(ctx: Arc<Context>, worker: usize) {
    let mut rng = ctx.randomness.stream();
    let mut generation = 0;
    while ctx.running() {
        generation += 1;
        let Some(mut model) = next_player(&ctx, &mut rng, worker, generation).await else { continue };
        // A game session starts as a client's does: the player's own
        // profile, then a level played (a custom board post) and a score.
        // (Fixed, so that even a run of a few seconds on a busy machine
        // exercises each of them.)
        check_me(&ctx, &model).await;
        super::boards::post(&ctx, &mut rng, &mut model).await;
        post(&ctx, &mut rng, &mut model).await;
        let steps = rng.gen_range(5..25);
        for _ in 0..steps {
            if !ctx.running() {
                break;
            }
            match rng.gen_range(0..100) {
                0..=34 => post(&ctx, &mut rng, &mut model).await,
                35..=49 => super::boards::post(&ctx, &mut rng, &mut model).await,
                50..=64 => check_me(&ctx, &model).await,
                65..=74 => check_history(&ctx, &model).await,
                75..=86 => check_around(&ctx, &model).await,
                87..=89 => invalid_score(&ctx, &mut rng, &model).await,
                _ => relogin(&ctx, &mut rng, &mut model).await,
            }
        }
        if let Ok(mut finished) = ctx.finished.lock() {
            finished.push(model);
        }
    }
}

/// A new player, or once `max_players` are registered an earlier one whose
/// run ended (their session is still valid; their model stays exact).
async fn next_player(ctx: &Context, rng: &mut StdRng, worker: usize, generation: usize) -> Option<PlayerModel> {
    if ctx.max_players.is_some_and(|max| ctx.registered.load(Ordering::Relaxed) >= max) {
        let earlier = ctx.finished.lock().ok().and_then(|mut finished| {
            let index = rng.gen_range(0..finished.len().max(1));
            (index < finished.len()).then(|| finished.swap_remove(index))
        });
        if earlier.is_some() {
            return earlier;
        }
    }
    ctx.registered.fetch_add(1, Ordering::Relaxed);
    register(ctx, rng, worker, generation).await
}

pub(super) async fn register(ctx: &Context, rng: &mut StdRng, worker: usize, generation: usize) -> Option<PlayerModel> {
    let login_name = format!("b{}w{worker}g{generation}", ctx.run_id);
    let password = Alphanumeric.sample_string(rng, 16);
    let body = json!({"login_name": login_name, "password": password});
    let reply = ctx.api.send("POST /api/users", ctx.api.request(Method::POST, "/api/users").json(&body)).await?;
    if reply.retried && reply.status == 409 {
        // The attempt that got a 503 had registered the player after all.
        return log_in_as_registered(ctx, login_name, password).await;
    }
    if !ctx.expect("register", &reply, 201, None) {
        return None;
    }
    let user = &reply.body["user"];
    let (Some(id), Some(token)) = (user["id"].as_i64(), reply.body["token"].as_str()) else {
        ctx.critical(format!("register: no user.id or token in {}", shorten(&reply.text)));
        return None;
    };
    if user["login_name"] != login_name.as_str()
        || user["play_count"] != 0
        || !user["best_rank"].is_null()
        || user["image"] != id % 10 + 1
    {
        ctx.critical(format!("register: wrong new player {}", shorten(&reply.text)));
    }
    ctx.recorder.succeeded(Work::Login);
    Some(PlayerModel::new(id, login_name, password, token.to_owned()))
}

async fn log_in_as_registered(ctx: &Context, login_name: String, password: String) -> Option<PlayerModel> {
    let body = json!({"login_name": login_name, "password": password});
    let reply = ctx.api.send("POST /api/sessions", ctx.api.request(Method::POST, "/api/sessions").json(&body)).await?;
    if !ctx.expect("login after a registration answered 503", &reply, 200, None) {
        return None;
    }
    let (Some(id), Some(token)) = (reply.body["user"]["id"].as_i64(), reply.body["token"].as_str()) else {
        ctx.critical(format!("login: no user.id or token in {}", shorten(&reply.text)));
        return None;
    };
    let model = PlayerModel::new(id, login_name, password, token.to_owned());
    check_user(ctx, "login after a registration answered 503", &reply.body["user"], &model);
    ctx.recorder.succeeded(Work::Login);
    Some(model)
}

/// Compares a Me (or PublicUser) with the model.
fn check_user(ctx: &Context, what: &str, user: &Value, model: &PlayerModel) {
    if model.uncertain {
        return;
    }
    let expected = json!({
        "best_score": model.best, "total_score": model.total, "play_count": model.count, "best_at": model.best_at,
    });
    let actual = json!({
        "best_score": user["best_score"], "total_score": user["total_score"],
        "play_count": user["play_count"], "best_at": user["best_at"],
    });
    if actual != expected {
        ctx.critical(format!("{what}: player {} is {actual} but the bench posted {expected}", model.id));
    }
    let ranked =
        user["best_rank"].as_i64().is_some_and(|r| r >= 1) && user["total_rank"].as_i64().is_some_and(|r| r >= 1);
    if ranked != (model.count > 0) {
        ctx.critical(format!(
            "{what}: player {} has ranks {}/{} with {} plays",
            model.id, user["best_rank"], user["total_rank"], model.count
        ));
    }
}

async fn post(ctx: &Context, rng: &mut StdRng, model: &mut PlayerModel) {
    let score = random_score(rng);
    let key = rng.gen_bool(0.25).then(|| format!("k{}", Alphanumeric.sample_string(rng, 20)));
    let token = model.token.clone();
    let send = |key: Option<&String>| {
        let mut request =
            ctx.api.request(Method::POST, "/api/scores").bearer_auth(&token).json(&json!({"score": score}));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        ctx.api.send("POST /api/scores", request)
    };
    ctx.movements.post_started(model.id);
    let reply = send(key.as_ref()).await;
    let Some(reply) = reply else {
        model.uncertain = true; // it may or may not have been applied
        ctx.movements.post_finished(model.id, model.count > 0);
        return;
    };
    if reply.status == 503 {
        // Only an unkeyed post comes back as a 503: see whether it counted
        // (the player is on the board only if it, or an earlier one, did).
        resolve_unanswered_post(ctx, model, score).await;
        ctx.movements.post_finished(model.id, model.count > 0 && !model.uncertain);
        return;
    }
    ctx.movements.post_finished(model.id, true);
    // A keyed post sent again after a 503 may meet its own first attempt.
    let replayed_after_retry = reply.retried && reply.status == 200;
    if !replayed_after_retry && !ctx.expect("post score", &reply, 201, None) {
        return;
    }
    let (Some(score_id), Some(created_at)) =
        (reply.body["score"]["id"].as_i64(), reply.body["score"]["created_at"].as_str())
    else {
        ctx.critical(format!("post score: no score.id / created_at in {}", shorten(&reply.text)));
        return;
    };
    if reply.body["score"]["score"] != score {
        ctx.critical(format!("post score: posted {score}, answer says {}", reply.body["score"]["score"]));
    }
    let new_best = model.apply(score_id, score, created_at);
    if reply.body["new_best"] != new_best {
        ctx.critical(format!(
            "post score: new_best is {} after posting {score} (best was {})",
            reply.body["new_best"], model.best
        ));
    }
    check_user(ctx, "post score result", &reply.body["user"], model);
    ctx.recorder.succeeded(Work::Write);

    // Retry with the same key: the first answer again, nothing counted twice.
    if let Some(key) = key.filter(|_| rng.gen_bool(0.5)) {
        ctx.movements.post_started(model.id);
        let replay = send(Some(&key)).await;
        ctx.movements.post_finished(model.id, true);
        let Some(replay) = replay else {
            model.uncertain = true;
            return;
        };
        if !(replay.status == 200 || replay.status == 201) || replay.body != reply.body {
            ctx.critical(format!(
                "idempotent replay: expected the first response again, got {}: {}",
                replay.status,
                shorten(&replay.text)
            ));
        } else {
            ctx.recorder.succeeded(Work::Read);
        }
    }
}

/// A post without a key answered 503 may still have been applied (say, the
/// database committed and then went away). The player's newest score tells:
/// either the log is as the model says, or it ends with exactly this post,
/// and the aggregates must agree with whichever it is.
async fn resolve_unanswered_post(ctx: &Context, model: &mut PlayerModel, score: i64) {
    model.uncertain = true; // until the history says otherwise
    let path = format!("/api/users/{}/scores?limit=1", model.id);
    let Some(reply) = ctx.api.send("GET /api/users/{id}/scores", ctx.api.request(Method::GET, &path)).await else {
        return;
    };
    if !ctx.expect("history after a post answered 503", &reply, 200, None) {
        return;
    }
    let newest = &reply.body["scores"][0];
    let newest_id = newest["id"].as_i64();
    if newest_id != model.last_score.map(|(id, _)| id) {
        let (Some(id), Some(created_at)) = (newest_id, newest["created_at"].as_str()) else {
            return ctx.critical(format!("history of {}: malformed {}", model.id, shorten(&reply.text)));
        };
        if newest["score"] != score {
            return ctx.critical(format!(
                "history of {}: newest is {newest}, but the bench's last post (answered 503) was {score}",
                model.id
            ));
        }
        model.apply(id, score, created_at);
    }
    model.uncertain = false;
    check_me(ctx, model).await;
}

async fn check_me(ctx: &Context, model: &PlayerModel) {
    let Some(reply) =
        ctx.api.send("GET /api/me", ctx.api.request(Method::GET, "/api/me").bearer_auth(&model.token)).await
    else {
        return;
    };
    if ctx.expect("me", &reply, 200, None) {
        if reply.body["id"] != model.id || reply.body["login_name"] != model.login_name.as_str() {
            ctx.critical(format!("me: answered for someone else: {}", shorten(&reply.text)));
        }
        check_user(ctx, "me", &reply.body, model);
        ctx.recorder.succeeded(Work::Read);
    }
}

async fn check_history(ctx: &Context, model: &PlayerModel) {
    let path = format!("/api/users/{}/scores?limit=5", model.id);
    let Some(reply) = ctx.api.send("GET /api/users/{id}/scores", ctx.api.request(Method::GET, &path)).await else {
        return;
    };
    if !ctx.expect("history", &reply, 200, None) {
        return;
    }
    let scores = reply.body["scores"].as_array().cloned().unwrap_or_default();
    let ids: Vec<i64> = scores.iter().filter_map(|s| s["id"].as_i64()).collect();
    if ids.windows(2).any(|w| w[0] <= w[1]) {
        ctx.critical(format!("history of {}: not newest first: {ids:?}", model.id));
    }
    if !model.uncertain {
        let newest = scores.first().map(|s| (s["id"].as_i64().unwrap_or(-1), s["score"].as_i64().unwrap_or(-1)));
        if newest != model.last_score || scores.len() as i64 != model.count.min(5) {
            ctx.critical(format!(
                "history of {}: newest is {newest:?}, the bench last posted {:?}",
                model.id, model.last_score
            ));
        }
    }
    ctx.recorder.succeeded(Work::Read);
}

async fn check_around(ctx: &Context, model: &PlayerModel) {
    let path = format!("/api/rankings/best/around/{}?radius=3", model.id);
    let endpoint = "GET /api/rankings/{board}/around/{id}";
    let Some(reply) = ctx.api.send(endpoint, ctx.api.request(Method::GET, &path)).await else { return };
    if model.count == 0 && !model.uncertain {
        ctx.expect("around a player without scores", &reply, 404, None);
        return;
    }
    if !ctx.expect("around me", &reply, 200, None) {
        return;
    }
    let page = match PageView::parse(&Board::Best, &reply.body).and_then(|page| check_page(&page, None).map(|()| page))
    {
        Ok(page) => page,
        Err(why) => return ctx.critical(format!("around {}: {why}", model.id)),
    };
    match page.entries.iter().find(|e| e.id == model.id) {
        None => ctx.critical(format!("around {}: the player is not in their own window", model.id)),
        Some(me) if !model.uncertain && (me.score != model.best || me.at != model.best_at) => ctx.critical(format!(
            "around {}: shows score {} at {:?}, the bench's best is {} at {:?}",
            model.id, me.score, me.at, model.best, model.best_at
        )),
        Some(_) => ctx.recorder.succeeded(Work::Read),
    }
}

async fn invalid_score(ctx: &Context, rng: &mut StdRng, model: &PlayerModel) {
    let bad =
        [json!({"score": -1}), json!({"score": 1.5}), json!({"score": "100"}), json!({"score": 1_000_000_001_i64})];
    let body = &bad[rng.gen_range(0..bad.len())];
    let request = ctx.api.request(Method::POST, "/api/scores").bearer_auth(&model.token).json(body);
    if let Some(reply) = ctx.api.send_never_counted("POST /api/scores", request).await {
        if ctx.expect(&format!("invalid score {body}"), &reply, 422, Some("invalid_score")) {
            ctx.recorder.succeeded(Work::Read);
        }
    }
}

async fn relogin(ctx: &Context, rng: &mut StdRng, model: &mut PlayerModel) {
    let logout = ctx.api.request(Method::DELETE, "/api/sessions").bearer_auth(&model.token);
    let Some(reply) = ctx.api.send("DELETE /api/sessions", logout).await else { return };
    // Sent again after a 503, a logout may find its first attempt succeeded.
    let logged_out_by_first_attempt = reply.retried && reply.status == 401;
    if !logged_out_by_first_attempt && !ctx.expect("logout", &reply, 204, None) {
        return;
    }
    let dead = ctx.api.request(Method::GET, "/api/me").bearer_auth(&model.token);
    if let Some(reply) = ctx.api.send("GET /api/me", dead).await {
        ctx.expect("a logged-out token", &reply, 401, None);
    }
    if rng.gen_bool(0.3) {
        let wrong = json!({"login_name": model.login_name, "password": "definitely-wrong"});
        let request = ctx.api.request(Method::POST, "/api/sessions").json(&wrong);
        if let Some(reply) = ctx.api.send("POST /api/sessions", request).await {
            ctx.expect("login with a wrong password", &reply, 401, Some("invalid_credentials"));
        }
    }
    let body = json!({"login_name": model.login_name, "password": model.password});
    let Some(reply) =
        ctx.api.send("POST /api/sessions", ctx.api.request(Method::POST, "/api/sessions").json(&body)).await
    else {
        return;
    };
    if ctx.expect("login", &reply, 200, None) {
        match reply.body["token"].as_str() {
            Some(token) => model.token = token.to_owned(),
            None => ctx.critical(format!("login: no token in {}", shorten(&reply.text))),
        }
        check_user(ctx, "login", &reply.body["user"], model);
        ctx.recorder.succeeded(Work::Login);
    }
}

// ---------------------------------------------------------------- viewers

/// An anonymous visitor of the ranking page.
pub async fn viewer(ctx: Arc<Context>) {
    let mut rng = ctx.randomness.stream();
    while ctx.running() {
        if !ctx.static_paths.is_empty() && rng.gen_bool(0.1) {
            fetch_static(&ctx).await;
        }
        let board = match rng.gen_range(0..10) {
            0..=4 => Board::Best,
            5..=6 => Board::Total,
            _ => super::boards::pick(&ctx, &mut rng).unwrap_or(Board::Best),
        };
        let keyset = rng.gen_bool(0.5);
        let limit = [10, 20, 50][rng.gen_range(0..3)];
        let pages = rng.gen_range(1..=5);
        browse(&ctx, &mut rng, board, keyset, limit, pages).await;
        match rng.gen_range(0..100) {
            0..=4 => bad_cursor(&ctx).await,
            5..=7 => unknown_board(&ctx).await,
            _ => {}
        }
    }
}

async fn fetch_static(ctx: &Context) {
    for path in &ctx.static_paths {
        let endpoint = if path == "/" { "GET /" } else { "GET /static-asset" };
        if let Some(reply) = ctx.api.send(endpoint, ctx.api.request(Method::GET, path)).await {
            if ctx.expect(&format!("static {path}"), &reply, 200, None) {
                ctx.recorder.succeeded(Work::Read);
            }
        }
    }
}

/// Reads `pages` pages of a board by cursor or offset, checking each page,
/// the continuity between them, and a batched lookup of the first page.
async fn browse(ctx: &Context, rng: &mut StdRng, board: Board, keyset: bool, limit: i64, pages: usize) {
    let started = Instant::now();
    let mut walk = Walk::default();
    let mut query = format!("limit={limit}");
    let mut offset = 0;
    for page_number in 0..pages {
        let path = format!("/api/rankings/{board}?{query}");
        let Some(reply) = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, &path)).await else {
            return;
        };
        if !ctx.expect(&format!("ranking page {path}"), &reply, 200, None) {
            return;
        }
        let page = match PageView::parse(&board, &reply.body) {
            Ok(page) => page,
            Err(why) => return ctx.critical(format!("{path}: {why}")),
        };
        // An offset page is one snapshot whose first entry is at `offset`.
        let snapshot = if keyset { Ok(()) } else { check_page(&page, Some(offset)) };
        walk.demotions = ctx.moderated_since(started);
        if let Err(why) = snapshot.and_then(|()| walk.add(page.clone(), keyset, false)) {
            return ctx.critical(format!("{path}: {why}"));
        }
        ctx.recorder.succeeded(Work::Read);
        if page_number == 0 {
            lookup_page_users(ctx, &board, &page, started).await;
            if let Some(entry) = page.entries.get(rng.gen_range(0..page.entries.len().max(1))) {
                open_profile(ctx, &board, entry.id).await;
            }
        }
        match (keyset, &page.next_cursor, page.next_offset) {
            (true, Some(cursor), _) => query = format!("limit={limit}&cursor={cursor}"),
            (false, _, Some(next)) => {
                offset = next;
                query = format!("limit={limit}&offset={next}");
            }
            _ => return,
        }
    }
}

/// One batched call for a page's users: order kept, and residents (who
/// never move) show the page's score with a rank no better than the page's.
/// `read_at`: when the page was asked for.
async fn lookup_page_users(ctx: &Context, board: &Board, page: &PageView, read_at: Instant) {
    if page.entries.is_empty() {
        return;
    }
    let ids: Vec<String> = page.entries.iter().map(|e| e.id.to_string()).collect();
    let path = format!("/api/users?ids={}", ids.join(","));
    let Some(reply) = ctx.api.send("GET /api/users", ctx.api.request(Method::GET, &path)).await else { return };
    if !ctx.expect("batched lookup", &reply, 200, None) {
        return;
    }
    let users = reply.body["users"].as_array().cloned().unwrap_or_default();
    let got: Vec<i64> = users.iter().filter_map(|u| u["id"].as_i64()).collect();
    // A player banned since the page was read is left out.
    let asked: Vec<i64> =
        page.entries.iter().map(|e| e.id).filter(|id| got.contains(id) || !ctx.moderated_lately(*id)).collect();
    if got != asked {
        return ctx.critical(format!("batched lookup: asked {asked:?}, got {got:?}"));
    }
    let (score_field, rank_field) = match board {
        Board::Best => ("best_score", "best_rank"),
        Board::Total => ("total_score", "total_rank"),
        // Profiles show the built-in boards only.
        Board::Custom { .. } => return ctx.recorder.succeeded(Work::Read),
    };
    let entries = page.entries.iter().filter(|entry| got.contains(&entry.id));
    for (user, entry) in users.iter().zip(entries) {
        if user.get("login_name").is_some() {
            return ctx.critical(format!("batched lookup: login_name is public for {}", entry.id));
        }
        if !ctx.resident.contains_key(&entry.id) {
            continue;
        }
        // Ranks only get worse as others post; a moderation (a player
        // above removed or moved down) can also make them better.
        let rank = user[rank_field].as_i64().unwrap_or(0);
        let rank_fell = rank < entry.rank && !ctx.moderated_since(read_at);
        if user[score_field] != entry.score || rank_fell {
            return ctx.critical(format!(
                "player {}: profile says {score_field} {} rank {rank}, the board said {} rank {} a moment before",
                entry.id, user[score_field], entry.score, entry.rank
            ));
        }
    }
    ctx.recorder.succeeded(Work::Read);
}

/// A profile of a player on a page: on a built-in board they have played;
/// on a custom board they need not have posted to `/api/scores`.
async fn open_profile(ctx: &Context, board: &Board, id: i64) {
    let path = format!("/api/users/{id}");
    let Some(reply) = ctx.api.send("GET /api/users/{id}", ctx.api.request(Method::GET, &path)).await else { return };
    // Banned, or their last post removed, since the page was read.
    let moderated = ctx.moderated_lately(id);
    if moderated && reply.status == 404 {
        return ctx.recorder.succeeded(Work::Read);
    }
    if !ctx.expect("profile", &reply, 200, None) {
        return;
    }
    let user = &reply.body;
    let plays = user["play_count"].as_i64().unwrap_or(-1);
    let ranked = moderated || (plays >= 1 && !user["best_rank"].is_null());
    if user["id"] != id || user.get("login_name").is_some() || (!ranked && !matches!(board, Board::Custom { .. })) {
        return ctx
            .critical(format!("profile {id}: wrong public profile of a ranked player: {}", shorten(&reply.text)));
    }
    ctx.recorder.succeeded(Work::Read);
}

async fn bad_cursor(ctx: &Context) {
    let path = "/api/rankings/best?cursor=not-a-cursor!";
    if let Some(reply) = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, path)).await {
        if ctx.expect("a bad cursor", &reply, 400, Some("invalid_cursor")) {
            ctx.recorder.succeeded(Work::Read);
        }
    }
}

async fn unknown_board(ctx: &Context) {
    let path = "/api/rankings/nonsense";
    if let Some(reply) = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, path)).await {
        if ctx.expect("an unknown board", &reply, 404, Some("board_not_found")) {
            ctx.recorder.succeeded(Work::Read);
        }
    }
}

// ---------------------------------------------------------------- walks

/// Walks a whole board by cursor (or offset) in pages of 100. On a quiet
/// board (`exact`) every rank must be exactly right and `total_players`
/// must match the walk. Returns the entries, or `None` after reporting.
pub async fn full_walk(
    ctx: &Context,
    board: Board,
    period: Option<i64>,
    keyset: bool,
    exact: bool,
    max_pages: usize,
) -> Option<Vec<Entry>> {
    walk_in_pages(ctx, board, period, keyset, exact, max_pages, WALK_PAGE).await
}

/// [`full_walk`] in pages of `page_size` entries.
pub async fn walk_in_pages(
    ctx: &Context,
    board: Board,
    period: Option<i64>,
    keyset: bool,
    exact: bool,
    max_pages: usize,
    page_size: i64,
) -> Option<Vec<Entry>> {
    let started = Instant::now();
    let mut walk = Walk::default();
    let mut entries = Vec::new();
    let period = period.map_or(String::new(), |index| format!("&period={index}"));
    let mut query = format!("limit={page_size}{period}");
    for _ in 0..max_pages {
        let path = format!("/api/rankings/{board}?{query}");
        let reply = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, &path)).await?;
        if !ctx.expect(&format!("ranking page {path}"), &reply, 200, None) {
            return None;
        }
        let page = match PageView::parse(&board, &reply.body) {
            Ok(page) => page,
            Err(why) => {
                ctx.critical(format!("{path}: {why}"));
                return None;
            }
        };
        walk.demotions = ctx.moderated_since(started);
        // A quiet board is not quiet while a moderation runs: it moves
        // players off, on or down (every period, ended ones included).
        let exact = exact && !walk.demotions;
        if let Err(why) = walk.add(page.clone(), keyset, exact) {
            ctx.critical(format!(
                "{path} (walking the {board} board by {}): {why}",
                if keyset { "cursor" } else { "offset" }
            ));
            return None;
        }

        ctx.recorder.succeeded(Work::Read);
        let total_players = page.total_players;
        entries.extend(page.entries.iter().cloned());
        query = match (keyset, &page.next_cursor, page.next_offset) {
            (true, Some(cursor), _) => format!("limit={page_size}&cursor={cursor}{period}"),
            (false, _, Some(next)) => format!("limit={page_size}&offset={next}{period}"),
            _ => {
                if exact && !ctx.moderated_since(started) && total_players != entries.len() as i64 {
                    ctx.critical(format!(
                        "the {board} board lists {} players but says total_players = {total_players}",
                        entries.len()
                    ));
                    return None;
                }
                return Some(entries);
            }
        };
    }
    Some(entries)
}

/// During the load: walks the best board again and again; nobody twice,
/// and nobody who stood still may be missing.
pub async fn walker(ctx: Arc<Context>) {
    while ctx.running() {
        let started = Instant::now();
        let Some(entries) = full_walk(&ctx, Board::Best, None, true, false, usize::MAX).await else { continue };
        let seen: std::collections::HashSet<i64> = entries.iter().map(|entry| entry.id).collect();
        // Moderated players are left out: one whose last post was removed
        // has left the board (the moderation checked that exactly).
        let unmoved = ctx.movements.unmoved_since(started).into_iter().filter(|id| !ctx.was_moderated(*id));
        let must_see = ctx.resident.keys().copied().chain(unmoved);
        for id in must_see {
            if !seen.contains(&id) {
                ctx.critical(format!(
                    "a cursor walk of the best board skipped player {id}, whose score did not change"
                ));
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}
