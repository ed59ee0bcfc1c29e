//! The virtual users: players who register, post and check themselves, and
//! viewers who read the boards like a ranking page does. Every answer is
//! checked against the contract and the bench's model.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::StdRng;
use rand::Rng;
use reqwest::Method;
use serde_json::json;

use super::context::Context;
use super::http::shorten;
use super::model::PlayerModel;
use super::registration::{check_user, register};
use super::stats::Work;
use super::validate::{check_page, Board, PageView, Walk};
use super::walks::full_walk;

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
