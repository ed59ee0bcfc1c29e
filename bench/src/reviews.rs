//! With an admin token, the run reviews held posts (v3 score integrity):
//! a board of its own holds a post better than a bound, or better than
//! the player's entry by more than a factor. Its player posts a sequence
//! whose fate the bench works out itself (202 held or 201), the reviewer
//! accepts some of the held posts and rejects the others, and the board,
//! the queue and the player's history must then be exactly what the
//! accepted posts give: an accepted post counts from when it was made,
//! a held or rejected one never.

use std::sync::Arc;

use reqwest::Method;
use serde_json::json;

use super::context::Context;
use super::registration::own_account;
use super::stats::Work;

const HOLD_BEYOND: i64 = 900;
const HOLD_JUMP: i64 = 3;
/// The player's posts, in order: some held beyond the bound, some for a
/// jump over their entry at that moment, the rest counted.
const POSTS: [i64; 7] = [100, 950, 400, 250, 800, 60, 700];

/// One post as the bench knows it.
struct Posted {
    id: i64,
    score: i64,
    created_at: String,
    status: &'static str,
}

/// Whether the board's rules hold `score` for a player whose entry is `entry`.
fn held(score: i64, entry: Option<i64>) -> bool {
    score > HOLD_BEYOND || entry.is_some_and(|entry| score > entry * HOLD_JUMP)
}

/// The best accepted post (the first that reached it), as the board must show it.
fn best(posts: &[Posted]) -> Option<&Posted> {
    posts.iter().filter(|p| p.status == "accepted").fold(None, |best: Option<&Posted>, post| match best {
        Some(best) if best.score >= post.score => Some(best),
        _ => Some(post),
    })
}

pub async fn reviewer(ctx: Arc<Context>) {
    let Some(token) = ctx.admin_token.clone() else { return };
    let board = format!("held-{}", ctx.run_id.to_ascii_lowercase());
    let definition =
        json!({"id": board, "name": "Held for review", "hold_beyond": HOLD_BEYOND, "hold_jump": HOLD_JUMP});
    let request = ctx.api.request(Method::POST, "/api/admin/boards").bearer_auth(&token).json(&definition);
    let Some(reply) = ctx.api.send("POST /api/admin/boards", request).await else { return };
    if reply.status == 404 {
        return; // no custom boards at all: `boards::create` said so
    }
    if !ctx.expect("create a board that holds posts", &reply, 201, None) {
        return;
    }
    if reply.body.get("hold_beyond").is_none() {
        eprintln!("held posts are not served (no hold_beyond on boards): their review is skipped");
        return;
    }
    let Some((player_id, player_token)) = register(&ctx).await else { return };

    let mut posts: Vec<Posted> = Vec::new();
    for score in POSTS {
        let path = format!("/api/boards/{board}/scores");
        let request = ctx.api.request(Method::POST, &path).bearer_auth(&player_token).json(&json!({"score": score}));
        let Some(reply) = ctx.api.send("POST /api/boards/{id}/scores", request).await else { return };
        let entry = best(&posts).map(|p| p.score);
        let expected = if held(score, entry) { 202 } else { 201 };
        if !ctx.expect(&format!("post {score} over an entry of {entry:?} (hold rules)"), &reply, expected, None) {
            return;
        }
        if expected == 202 && (reply.body["entry"]["score"].as_i64() != entry || reply.body["improved"] != false) {
            ctx.critical(format!("a held post changed the entry (it was {entry:?}): {}", reply.body));
        }
        let (Some(id), Some(created_at)) =
            (reply.body["score"]["id"].as_i64(), reply.body["score"]["created_at"].as_str())
        else {
            return ctx.critical(format!("a post's answer without its id or time: {}", reply.body));
        };
        let status = if expected == 202 { "held" } else { "accepted" };
        posts.push(Posted { id, score, created_at: created_at.to_owned(), status });
        ctx.recorder.succeeded(Work::Write);
    }

    // The queue holds exactly the held posts, oldest first.
    let path = format!("/api/admin/held?board={board}&limit=100");
    let Some(reply) =
        ctx.api.send("GET /api/admin/held", ctx.api.request(Method::GET, &path).bearer_auth(&token)).await
    else {
        return;
    };
    if !ctx.expect("the review queue", &reply, 200, None) {
        return;
    }
    let queued: Vec<i64> =
        reply.body["held"].as_array().into_iter().flatten().filter_map(|h| h["score"]["id"].as_i64()).collect();
    let held_ids: Vec<i64> = posts.iter().filter(|p| p.status == "held").map(|p| p.id).collect();
    if queued != held_ids {
        ctx.critical(format!("the review queue of {board} lists {queued:?}, the held posts are {held_ids:?}"));
    }

    // Accept every other held post, reject the rest; a second decision is refused.
    for (turn, id) in held_ids.iter().enumerate() {
        let decision = if turn % 2 == 0 { "accept" } else { "reject" };
        let path = format!("/api/admin/held/{id}");
        let body = json!({"decision": decision, "board": board, "note": "bench"});
        let request = ctx.api.request(Method::POST, &path).bearer_auth(&token).json(&body);
        let Some(reply) = ctx.api.send("POST /api/admin/held/{id}", request).await else { return };
        // A retry after a lost answer meets its own first decision.
        let decided_before = reply.retried && reply.status == 409;
        if !decided_before && !ctx.expect(&format!("{decision} a held post"), &reply, 200, None) {
            return;
        }
        if let Some(post) = posts.iter_mut().find(|p| p.id == *id) {
            post.status = if decision == "accept" { "accepted" } else { "rejected" };
        }
        ctx.recorder.succeeded(Work::Write);
    }
    if let Some(id) = held_ids.first() {
        let request = ctx
            .api
            .request(Method::POST, &format!("/api/admin/held/{id}"))
            .bearer_auth(&token)
            .json(&json!({"decision": "reject", "board": board}));
        if let Some(reply) = ctx.api.send("POST /api/admin/held/{id}", request).await {
            ctx.expect("a second decision", &reply, 409, Some("already_decided"));
        }
    }
    check_board(&ctx, &board, player_id, &posts).await;
    check_history(&ctx, &board, player_id, &posts).await;

    let request = ctx.api.request(Method::DELETE, &format!("/api/admin/boards/{board}")).bearer_auth(&token);
    if let Some(reply) = ctx.api.send("DELETE /api/admin/boards/{id}", request).await {
        ctx.expect("delete the review board", &reply, 204, None);
    }
}

async fn register(ctx: &Context) -> Option<(i64, String)> {
    let (login_name, password) = (format!("r{}", ctx.run_id), format!("reviewed-{}", ctx.run_id));
    own_account(ctx, "register (reviewer's player)", &login_name, &password).await
}

/// The board shows the player at their best accepted post, reached when it was made.
async fn check_board(ctx: &Context, board: &str, player_id: i64, posts: &[Posted]) {
    let path = format!("/api/rankings/{board}");
    let Some(reply) = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, &path)).await else {
        return;
    };
    if !ctx.expect("the review board", &reply, 200, None) {
        return;
    }
    let entry = &reply.body["entries"][0];
    let shown = (entry["user"]["id"].as_i64(), entry["score"].as_i64(), entry["achieved_at"].as_str());
    let expected = best(posts).map(|p| (Some(player_id), Some(p.score), Some(p.created_at.as_str())));
    if Some(shown) != expected {
        ctx.critical(format!(
            "after the review, {board} shows (player, score, achieved_at) {shown:?}, the accepted posts give {expected:?}"
        ));
    }
}

/// The player's history shows each post's fate.
async fn check_history(ctx: &Context, board: &str, player_id: i64, posts: &[Posted]) {
    let path = format!("/api/users/{player_id}/scores?board={board}&limit=100");
    let Some(reply) = ctx.api.send("GET /api/users/{id}/scores", ctx.api.request(Method::GET, &path)).await else {
        return;
    };
    if !ctx.expect("the reviewed player's history", &reply, 200, None) {
        return;
    }
    let shown: Vec<(Option<i64>, Option<&str>)> = reply.body["scores"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (p["id"].as_i64(), p["status"].as_str()))
        .collect();
    let expected: Vec<(Option<i64>, Option<&str>)> = posts.iter().rev().map(|p| (Some(p.id), Some(p.status))).collect();
    if shown != expected {
        ctx.critical(format!("the history of {board} shows (id, status) {shown:?}, the review gives {expected:?}"));
    }
}
