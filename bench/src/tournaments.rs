//! With an admin token, the run holds a tournament (v3) and checks its
//! limits against its own count: a board of its own takes 3 entrants and
//! 2 attempts each; its 4 players join (three 201s, then 409
//! `board_full`), a player who did not join is refused (403
//! `not_joined`), each entrant posts twice (201), a replay of a post's
//! `Idempotency-Key` is its first answer (not an attempt), a third post is
//! 409 `attempts_exhausted`, and `GET /api/boards/{id}/me` counts what the
//! bench counted.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{json, Value};

use super::context::Context;
use super::http::Reply;
use super::registration::own_account;
use super::stats::Work;

const ENTRANTS: i64 = 3;
const ATTEMPTS: i64 = 2;

pub async fn referee(ctx: Arc<Context>) {
    let Some(token) = ctx.admin_token.clone() else { return };
    let board = format!("cup-{}", ctx.run_id.to_ascii_lowercase());
    let definition = json!({"id": board, "name": "Bench cup", "join_required": true,
        "max_entrants": ENTRANTS, "max_attempts": ATTEMPTS});
    let request = ctx.api.request(Method::POST, "/api/admin/boards").bearer_auth(&token).json(&definition);
    let Some(reply) = ctx.api.send("POST /api/admin/boards", request).await else { return };
    if reply.status == 404 {
        return; // no custom boards at all
    }
    if reply.retried && reply.status == 409 {
        // Created by the attempt whose answer was lost (a failover): its
        // definition was not seen, so the tournament is not played.
        return eprintln!("the tournament board's creation answered 503 then 409: the tournament is skipped");
    }
    if !ctx.expect("create a tournament board", &reply, 201, None) {
        return;
    }
    if reply.body.get("join_required") != Some(&json!(true)) {
        eprintln!("tournaments are not served (no join_required on boards): the tournament is skipped");
        return;
    }
    let mut players = Vec::new();
    for index in 0..=ENTRANTS {
        let Some(player) = register(&ctx, index).await else { return };
        players.push(player);
    }

    // The last player does not join yet: refused.
    let outsider = &players[ENTRANTS as usize];
    let Some(reply) = post(&ctx, &board, outsider, 1, "outsider").await else { return };
    if !ctx.expect("a post before joining", &reply, 403, Some("not_joined")) {
        return;
    }
    for (index, player) in players.iter().enumerate() {
        let path = format!("/api/boards/{board}/entrants");
        let request = ctx.api.request(Method::POST, &path).bearer_auth(player);
        let Some(reply) = ctx.api.send("POST /api/boards/{id}/entrants", request).await else { return };
        let joined = (index as i64) < ENTRANTS;
        // A retried join after a lost answer meets its own first join (200).
        let ok = if joined {
            ctx.expect_one_of("join a tournament", &reply, &[(201, None), (200, None)])
        } else {
            ctx.expect("join a full tournament", &reply, 409, Some("board_full"))
        };
        if !ok {
            return;
        }
        if joined && reply.body["entrants"].as_i64() != Some(index as i64 + 1) {
            ctx.critical(format!("entrant {} of {board} was told {} entrants", index + 1, reply.body["entrants"]));
        }
        ctx.recorder.succeeded(Work::Write);
    }
    for (index, player) in players.iter().take(ENTRANTS as usize).enumerate() {
        for attempt in 1..=ATTEMPTS {
            let key = format!("{}-{index}-{attempt}", ctx.run_id);
            let Some(reply) = post(&ctx, &board, player, index as i64 * 10 + attempt, &key).await else { return };
            // A retry after a lost answer gets the first one replayed (200).
            let replayed = reply.retried && reply.status == 200;
            if !replayed && !ctx.expect("a post with an attempt left", &reply, 201, None) {
                return;
            }
            ctx.recorder.succeeded(Work::Write);
            // The same key again: the first answer, no attempt used.
            let Some(again) = post(&ctx, &board, player, index as i64 * 10 + attempt, &key).await else { return };
            if !ctx.expect("a replay of a tournament post", &again, 200, None) {
                return;
            }
        }
        let Some(reply) = post(&ctx, &board, player, 99, &format!("{}-{index}-over", ctx.run_id)).await else { return };
        if !ctx.expect("a post with no attempt left", &reply, 409, Some("attempts_exhausted")) {
            return;
        }
        check_standing(&ctx, &board, player, index as i64 * 10 + ATTEMPTS).await;
    }
    let request = ctx.api.request(Method::DELETE, &format!("/api/admin/boards/{board}")).bearer_auth(&token);
    if let Some(reply) = ctx.api.send("DELETE /api/admin/boards/{id}", request).await {
        // A retry after a lost answer finds it gone (404).
        if !(reply.retried && reply.status == 404) {
            ctx.expect("delete the tournament board", &reply, 204, None);
        }
    }
}

async fn post(ctx: &Context, board: &str, token: &str, score: i64, key: &str) -> Option<Reply> {
    let path = format!("/api/boards/{board}/scores");
    let request = ctx
        .api
        .request(Method::POST, &path)
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(&json!({"score": score}));
    ctx.api.send("POST /api/boards/{id}/scores", request).await
}

/// `me`: joined, every attempt used, the best post as the entry.
async fn check_standing(ctx: &Context, board: &str, token: &str, best: i64) {
    let path = format!("/api/boards/{board}/me");
    let request = ctx.api.request(Method::GET, &path).bearer_auth(token);
    let Some(reply) = ctx.api.send("GET /api/boards/{id}/me", request).await else { return };
    if !ctx.expect("a tournament standing", &reply, 200, None) {
        return;
    }
    let shown =
        (&reply.body["joined"], &reply.body["attempts"], &reply.body["attempts_left"], &reply.body["entry"]["score"]);
    let wanted = (&json!(true), &json!(ATTEMPTS), &json!(0), &Value::from(best));
    if shown != wanted {
        ctx.critical(format!(
            "{board}/me shows (joined, attempts, attempts_left, score) {shown:?}, the bench counted {wanted:?}"
        ));
    }
}

async fn register(ctx: &Context, index: i64) -> Option<String> {
    let (login_name, password) = (format!("t{index}{}", ctx.run_id), format!("cup-{}", ctx.run_id));
    Some(own_account(ctx, "register (tournament player)", &login_name, &password).await?.1)
}
