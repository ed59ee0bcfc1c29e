//! A new player of the run: registered (or logged in, when a registration
//! answered 503 had in fact gone through) and checked against the model.

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::StdRng;
use reqwest::Method;
use serde_json::{json, Value};

use super::context::Context;
use super::http::shorten;
use super::model::PlayerModel;
use super::stats::Work;

/// A new player of this run (`generation` tells apart the players one
/// worker registers in turn).
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

/// A player a scenario keeps for itself (beside the load's players), as
/// its id and token: registered, or logged in when the registration
/// answered 503 had gone through after all (its retry finds the name taken:
/// a commit whose answer was lost, as when a database node dies).
pub(super) async fn own_account(ctx: &Context, what: &str, login_name: &str, password: &str) -> Option<(i64, String)> {
    let body = json!({"login_name": login_name, "password": password});
    let reply = ctx.api.send("POST /api/users", ctx.api.request(Method::POST, "/api/users").json(&body)).await?;
    let reply = if reply.retried && reply.status == 409 {
        let login = ctx.api.request(Method::POST, "/api/sessions").json(&body);
        let reply = ctx.api.send("POST /api/sessions", login).await?;
        if !ctx.expect(&format!("{what}: login after a registration answered 503"), &reply, 200, None) {
            return None;
        }
        reply
    } else if ctx.expect(what, &reply, 201, None) {
        reply
    } else {
        return None;
    };
    Some((reply.body["user"]["id"].as_i64()?, reply.body["token"].as_str()?.to_owned()))
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
pub(super) fn check_user(ctx: &Context, what: &str, user: &Value, model: &PlayerModel) {
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
