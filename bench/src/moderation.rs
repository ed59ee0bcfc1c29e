//! With an admin token, the run moderates its own players while the load
//! goes on: it removes some of their posts and bans and unbans some of
//! them, and checks at the next read what the contract promises: the
//! player's profile recounted from the remaining posts, their entry on
//! the boards at the recounted score (a rank engine left stale by a
//! removal is caught here), a banned player gone from the boards and
//! profiles, with a dead session, and back after the unban. The final
//! check then compares every board with the bench's models.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::Rng;
use reqwest::Method;
use serde_json::json;

use super::context::Context;
use super::model::PlayerModel;
use super::registration::own_account;
use super::stats::Work;

/// Time between two moderations.
const PAUSE: Duration = Duration::from_millis(400);

/// Takes finished, exactly known players one at a time (no session of
/// theirs runs meanwhile), moderates them, and puts them back.
pub async fn moderator(ctx: Arc<Context>) {
    let Some(token) = ctx.admin_token.clone() else { return };
    let mut rng = ctx.randomness.stream();
    // Its own player first, both ways, so that even a short run moderates.
    if let Some(mut own) = own_player(&ctx).await {
        mark(&ctx, own.id, None);
        remove_a_post(&ctx, &token, &mut rng, &mut own).await;
        ban_and_unban(&ctx, &token, &mut own).await;
        mark(&ctx, own.id, Some(Instant::now()));
        finish(&ctx, own);
    }
    let mut round = 0_u64;
    while ctx.running() {
        round += 1;
        if let Some(mut model) = take_player(&ctx, &mut rng) {
            mark(&ctx, model.id, None);
            if round.is_multiple_of(3) {
                ban_and_unban(&ctx, &token, &mut model).await;
            } else {
                remove_a_post(&ctx, &token, &mut rng, &mut model).await;
            }
            mark(&ctx, model.id, Some(Instant::now()));
            finish(&ctx, model);
        }
        tokio::time::sleep(PAUSE).await;
    }
}

/// Notes a moderation in progress (`None`) or when it ended.
fn mark(ctx: &Context, id: i64, ended: Option<Instant>) {
    if let Ok(mut moderated) = ctx.moderated.lock() {
        moderated.insert(id, ended);
    }
}

fn finish(ctx: &Context, model: PlayerModel) {
    if let Ok(mut finished) = ctx.finished.lock() {
        finished.push(model);
    }
}

/// A finished player whose aggregates the bench knows exactly.
fn take_player(ctx: &Context, rng: &mut StdRng) -> Option<PlayerModel> {
    let mut finished = ctx.finished.lock().ok()?;
    let candidates: Vec<usize> =
        (0..finished.len()).filter(|i| !finished[*i].uncertain && !finished[*i].posts.is_empty()).collect();
    let index = *candidates.get(rng.gen_range(0..candidates.len().max(1)))?;
    Some(finished.swap_remove(index))
}

/// The moderator's own player, with a few posts.
async fn own_player(ctx: &Context) -> Option<PlayerModel> {
    let login_name = format!("m{}", ctx.run_id);
    let password = format!("moderated-{}", ctx.run_id);
    let (id, token) = own_account(ctx, "register (moderator's player)", &login_name, &password).await?;
    let mut model = PlayerModel::new(id, login_name, password, token);
    for score in [300, 900_000, 300, 50] {
        let request =
            ctx.api.request(Method::POST, "/api/scores").bearer_auth(&model.token).json(&json!({"score": score}));
        ctx.movements.post_started(id);
        let reply = ctx.api.send("POST /api/scores", request).await;
        ctx.movements.post_finished(id, true);
        let reply = reply?;
        if !ctx.expect("post score (moderator's player)", &reply, 201, None) {
            return None;
        }
        let (Some(score_id), Some(created_at)) =
            (reply.body["score"]["id"].as_i64(), reply.body["score"]["created_at"].as_str())
        else {
            return None;
        };
        model.apply(score_id, score, created_at);
        ctx.recorder.succeeded(Work::Write);
    }
    Some(model)
}

/// Removes one of the player's posts (the best one half the time: what a
/// cheater's removal looks like), then checks the recount everywhere.
async fn remove_a_post(ctx: &Context, token: &str, rng: &mut StdRng, model: &mut PlayerModel) {
    let index = if rng.gen_bool(0.5) {
        (0..model.posts.len()).max_by_key(|i| model.posts[*i].1).unwrap_or(0)
    } else {
        rng.gen_range(0..model.posts.len())
    };
    let score_id = model.posts[index].0;
    let path = format!("/api/admin/scores/{score_id}");
    ctx.movements.post_started(model.id);
    let reply =
        ctx.api.send("DELETE /api/admin/scores/{id}", ctx.api.request(Method::DELETE, &path).bearer_auth(token)).await;
    ctx.movements.post_finished(model.id, model.count > 0);
    let Some(reply) = reply else {
        model.uncertain = true;
        return;
    };
    // A retry after a 503 may meet its own first attempt's removal.
    let removed_before = reply.retried && reply.status == 404;
    if !removed_before && !ctx.expect("remove a post", &reply, 204, None) {
        return;
    }
    model.remove(score_id);
    ctx.recorder.succeeded(Work::Write);
    check_profile(ctx, "after a removed post", model).await;
    check_entries(ctx, "after a removed post", model, true).await;
}

/// Bans the player: gone from profiles and boards, session dead; then
/// unbans: back where the scores put them. The player logs in again.
async fn ban_and_unban(ctx: &Context, token: &str, model: &mut PlayerModel) {
    let path = format!("/api/admin/users/{}/ban", model.id);
    ctx.movements.post_started(model.id);
    let ban = ctx.api.request(Method::POST, &path).bearer_auth(token).json(&json!({"reason": "bench"}));
    let banned = ctx.api.send("POST /api/admin/users/{id}/ban", ban).await;
    let ok = banned.is_some_and(|reply| (reply.retried && reply.status == 409) || ctx.expect("ban", &reply, 200, None));
    if ok {
        ctx.recorder.succeeded(Work::Write);
        let profile = format!("/api/users/{}", model.id);
        if let Some(reply) = ctx.api.send("GET /api/users/{id}", ctx.api.request(Method::GET, &profile)).await {
            ctx.expect("a banned player's profile", &reply, 404, Some("user_not_found"));
        }
        let me = ctx.api.request(Method::GET, "/api/me").bearer_auth(&model.token);
        if let Some(reply) = ctx.api.send("GET /api/me", me).await {
            // "Their sessions die, logins and posts get 403 banned": an old
            // token may be dead (401) or meet the ban (403).
            ctx.expect_one_of("a banned player's session", &reply, &[(403, Some("banned")), (401, None)]);
        }
        check_entries(ctx, "after a ban", model, false).await;
    }
    let unban = ctx.api.request(Method::DELETE, &path).bearer_auth(token);
    let unbanned = ctx.api.send("DELETE /api/admin/users/{id}/ban", unban).await;
    ctx.movements.post_finished(model.id, model.count > 0);
    let Some(reply) = unbanned else {
        model.uncertain = true;
        return;
    };
    let unbanned_before = reply.retried && reply.status == 409;
    if !unbanned_before && !ctx.expect("unban", &reply, 200, None) {
        model.uncertain = true;
        return;
    }
    ctx.recorder.succeeded(Work::Write);
    check_entries(ctx, "after an unban", model, true).await;
    // The ban ended the session: a new one for the player's next run.
    let body = json!({"login_name": model.login_name, "password": model.password});
    let login = ctx.api.send("POST /api/sessions", ctx.api.request(Method::POST, "/api/sessions").json(&body)).await;
    match login.and_then(|reply| ctx.expect("login after an unban", &reply, 200, None).then_some(reply)) {
        Some(reply) => {
            model.token = reply.body["token"].as_str().unwrap_or_default().to_owned();
            ctx.recorder.succeeded(Work::Login);
        }
        None => model.uncertain = true,
    }
}

async fn check_profile(ctx: &Context, what: &str, model: &PlayerModel) {
    let path = format!("/api/users/{}", model.id);
    let Some(reply) = ctx.api.send("GET /api/users/{id}", ctx.api.request(Method::GET, &path)).await else { return };
    if !ctx.expect(&format!("profile {what}"), &reply, 200, None) {
        return;
    }
    let actual =
        (reply.body["best_score"].as_i64(), reply.body["total_score"].as_i64(), reply.body["play_count"].as_i64());
    if actual != (Some(model.best), Some(model.total), Some(model.count))
        || reply.body["best_at"].as_str() != model.best_at.as_deref()
    {
        ctx.critical(format!(
            "profile {what}: player {} is best/total/plays {actual:?} at {}, recounted from the bench's posts {}/{}/{} at {:?}",
            model.id, reply.body["best_at"], model.best, model.total, model.count, model.best_at
        ));
    }
    ctx.recorder.succeeded(Work::Read);
}

/// The player's entries on both built-in boards, as a friends board reads
/// them (the rank engine's answer): at the model's scores when `listed`,
/// absent otherwise (banned, or no post left).
async fn check_entries(ctx: &Context, what: &str, model: &PlayerModel, listed: bool) {
    for (board, expected) in [("best", model.best), ("total", model.total)] {
        let path = format!("/api/rankings/{board}/users?ids={}", model.id);
        let Some(reply) = ctx.api.send("GET /api/rankings/{board}/users", ctx.api.request(Method::GET, &path)).await
        else {
            return;
        };
        if !ctx.expect(&format!("friends board {what}"), &reply, 200, None) {
            return;
        }
        let shown =
            reply.body["entries"].as_array().and_then(|entries| entries.first()).map(|entry| entry["score"].as_i64());
        let wanted = (listed && model.count > 0).then_some(Some(expected));
        if shown != wanted {
            ctx.critical(format!(
                "the {board} board {what}: player {} shows {shown:?}, the bench expects {wanted:?}",
                model.id
            ));
            return;
        }
        ctx.recorder.succeeded(Work::Read);
    }
}
