//! Moderation and self-service: removed posts recounted exactly, bans and
//! unbans, renames, password changes and erasure, on every board.

use reqwest::Method;
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{
    assert_error, json_of, ranks_and_ids, spawn_admin_app, Backend, Player, TestApp, TestDatabase, PASSWORD,
};

backend_tests!(
    removing_a_post_recounts_the_player_exactly,
    removing_a_post_on_a_custom_board_recounts_its_entry,
    a_ban_takes_a_player_off_every_board_and_an_unban_brings_them_back,
    renames_show_on_every_page,
    a_new_password_ends_every_other_session,
    an_erased_player_leaves_nothing_behind,
    removing_posts_while_the_player_posts_loses_nothing,
    moderation_refuses_bad_requests_clearly,
    walks_skip_nobody_after_moderation_takes_entries_off,
);

async fn profile(app: &TestApp, player: &Player) -> Value {
    let (status, body) = app.get_json(&format!("/api/users/{}", player.id)).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The player's posts, oldest first, from their history.
async fn history(app: &TestApp, player: &Player) -> Vec<Value> {
    let (status, body) = app.get_json(&format!("/api/users/{}/scores?limit=100", player.id)).await;
    assert_eq!(status, 200, "{body}");
    let mut posts = body["scores"].as_array().unwrap().clone();
    posts.reverse();
    posts
}

/// Asserts that a profile's aggregates equal a recount of the history:
/// the sum, the count, the best and when the first post reached it.
async fn assert_recounted(app: &TestApp, player: &Player) {
    let posts = history(app, player).await;
    let me = profile(app, player).await;
    let total: i64 = posts.iter().map(|p| p["score"].as_i64().unwrap()).sum();
    let best = posts.iter().map(|p| p["score"].as_i64().unwrap()).max();
    let best_at = best.and_then(|best| posts.iter().find(|p| p["score"] == best)).map(|p| p["created_at"].clone());
    assert_eq!(me["total_score"], total, "{me}");
    assert_eq!(me["play_count"], posts.len(), "{me}");
    assert_eq!(me["best_score"], best.unwrap_or(0), "{me}");
    assert_eq!(me["best_at"], best_at.unwrap_or(Value::Null), "{me}");
}

async fn delete(app: &TestApp, path: &str) -> (reqwest::StatusCode, Value) {
    app.admin(Method::DELETE, path, None).await
}

async fn removing_a_post_recounts_the_player_exactly(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let cheat = app.register("cheater").await;
    let rival = app.register("rival").await;
    app.post_score(&rival, 70).await;
    let mut ids = Vec::new();
    for score in [50, 80, 80, 30] {
        ids.push(app.post_score(&cheat, score).await["score"]["id"].as_i64().unwrap());
    }
    let huge = app.post_score(&cheat, 999_999_999).await["score"]["id"].as_i64().unwrap();
    assert_eq!(ranks_and_ids(&app.ranking("best", "").await), [(1, cheat.id), (2, rival.id)]);

    // The cheat goes: back to 80, reached first by the second post.
    let (status, body) = delete(&app, &format!("/api/admin/scores/{huge}")).await;
    assert_eq!(status, 204, "{body}");
    assert_recounted(&app, &cheat).await;
    assert_eq!(profile(&app, &cheat).await["best_score"], 80);
    assert_eq!(ranks_and_ids(&app.ranking("best", "").await), [(1, cheat.id), (2, rival.id)]);
    assert_eq!(app.ranking("total", "").await["entries"][0]["score"], 240);

    // The first 80 goes: still 80, now reached by the third post.
    let first_80_at = history(&app, &cheat).await[1]["created_at"].clone();
    delete(&app, &format!("/api/admin/scores/{}", ids[1])).await;
    assert_recounted(&app, &cheat).await;
    let third_80_at = history(&app, &cheat).await[1]["created_at"].clone();
    assert_eq!(profile(&app, &cheat).await["best_at"], third_80_at);
    let _ = first_80_at;

    // The second 80 goes: 50 now, below the rival.
    delete(&app, &format!("/api/admin/scores/{}", ids[2])).await;
    assert_recounted(&app, &cheat).await;
    assert_eq!(ranks_and_ids(&app.ranking("best", "").await), [(1, rival.id), (2, cheat.id)]);
    assert_eq!(profile(&app, &cheat).await["best_rank"], 2);

    // Gone already: 404; the rest goes and the player leaves the boards.
    let (status, body) = delete(&app, &format!("/api/admin/scores/{}", ids[2])).await;
    assert_error(status, &body, 404, "score_not_found");
    for id in [ids[0], ids[3]] {
        assert_eq!(delete(&app, &format!("/api/admin/scores/{id}")).await.0, 204);
    }
    assert_recounted(&app, &cheat).await;
    for board in ["best", "total"] {
        let page = app.ranking(board, "").await;
        assert_eq!(ranks_and_ids(&page), [(1, rival.id)], "{board}");
        assert_eq!(page["total_players"], 1, "{board}");
    }
    assert_eq!(profile(&app, &cheat).await["best_rank"], Value::Null);
    // Playing again puts them back as a new player.
    app.post_score(&cheat, 10).await;
    assert_eq!(app.ranking("best", "").await["total_players"], 2);
    assert_recounted(&app, &cheat).await;
}

async fn removing_a_post_on_a_custom_board_recounts_its_entry(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "lap", "name": "Lap", "order": "asc"})).await;
    let racer = app.register("racer").await;
    let other = app.register("other").await;
    app.post_board_score(&other, "lap", 22).await;
    let mut ids = Vec::new();
    for (score, run) in [(30, 1), (20, 2), (25, 3)] {
        let body = json!({"score": score, "metadata": {"run": run}});
        let (status, posted) = app.post_board_score_raw(&racer.token, "lap", &body, None).await;
        assert_eq!(status, 201, "{posted}");
        ids.push(posted["score"]["id"].as_i64().unwrap());
    }
    assert_eq!(ranks_and_ids(&app.ranking("lap", "").await), [(1, racer.id), (2, other.id)]);

    // The 20 goes: the entry is the 25, with that post's metadata and time.
    assert_eq!(delete(&app, &format!("/api/admin/boards/lap/scores/{}", ids[1])).await.0, 204);
    let page = app.ranking("lap", "").await;
    assert_eq!(ranks_and_ids(&page), [(1, other.id), (2, racer.id)]);
    let entry = &page["entries"][1];
    assert_eq!((entry["score"].clone(), entry["metadata"].clone()), (json!(25), json!({"run": 3})));
    let (_, posts) = app.get_json(&format!("/api/users/{}/scores?board=lap", racer.id)).await;
    assert_eq!(entry["achieved_at"], posts["scores"][0]["created_at"]);

    // A post of another board or none at all: 404.
    let (status, body) = delete(&app, &format!("/api/admin/boards/lap/scores/{}", ids[1])).await;
    assert_error(status, &body, 404, "score_not_found");
    let (status, body) = delete(&app, &format!("/api/admin/boards/nope/scores/{}", ids[0])).await;
    assert_error(status, &body, 404, "board_not_found");

    // The rest goes: off the board, and the period counts one player fewer.
    for id in [ids[0], ids[2]] {
        assert_eq!(delete(&app, &format!("/api/admin/boards/lap/scores/{id}")).await.0, 204);
    }
    let page = app.ranking("lap", "").await;
    assert_eq!((ranks_and_ids(&page), page["total_players"].clone()), (vec![(1, other.id)], json!(1)));
    let (_, periods) = app.get_json("/api/boards/lap/periods").await;
    assert_eq!(periods["periods"][0]["players"], 1, "{periods}");
    let (_, boards) = app.get_json(&format!("/api/users/{}/boards", racer.id)).await;
    assert!(boards["entries"].as_array().unwrap().iter().all(|e| e["board"] != "lap"), "{boards}");
}

async fn a_ban_takes_a_player_off_every_board_and_an_unban_brings_them_back(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "level-1", "name": "Level 1"})).await;
    let players = [app.register("ace").await, app.register("bee").await, app.register("cee").await];
    for (player, score) in players.iter().zip([100, 90, 80]) {
        app.post_score(player, score).await;
        app.post_board_score(player, "level-1", score).await;
    }
    let [ace, bee, cee] = &players;
    let before: Vec<Value> = futures_pages(&app).await;

    let (status, body) = app
        .admin(
            Method::POST,
            &format!("/api/admin/users/{}/ban", ace.id),
            Some(&json!({"reason": "999,999,999 in a second"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for board in ["best", "total", "level-1"] {
        let page = app.ranking(board, "").await;
        assert_eq!(ranks_and_ids(&page), [(1, bee.id), (2, cee.id)], "{board}");
        assert_eq!(page["total_players"], 2, "{board}");
        let (status, body) = app.get_json(&format!("/api/rankings/{board}/around/{}", ace.id)).await;
        assert_error(status, &body, 404, "user_not_found");
        let friends = app.ranking(&format!("{board}/users"), &format!("ids={},{}", ace.id, cee.id)).await;
        assert_eq!(ranks_and_ids(&friends), [(2, cee.id)], "{board}");
    }
    let (_, periods) = app.get_json("/api/boards/level-1/periods").await;
    assert_eq!(periods["periods"][0]["players"], 2);
    for path in ["", "/scores", "/scores?board=level-1", "/boards"] {
        let (status, body) = app.get_json(&format!("/api/users/{}{path}", ace.id)).await;
        assert_error(status, &body, 404, "user_not_found");
    }
    let (_, batch) = app.get_json(&format!("/api/users?ids={},{}", ace.id, bee.id)).await;
    assert_eq!(batch["users"].as_array().unwrap().len(), 1, "{batch}");
    // The session is refused at every use, posts included; logins too.
    let (status, body) = app.get_authed("/api/me", &ace.token).await;
    assert_error(status, &body, 403, "banned");
    let (status, body) = app.post_score_raw(&ace.token, &json!({"score": 5}), None).await;
    assert_error(status, &body, 403, "banned");
    let (status, body) = app.post_board_score_raw(&ace.token, "level-1", &json!({"score": 5}), None).await;
    assert_error(status, &body, 403, "banned");
    let (status, body) = app.login("ace", PASSWORD).await;
    assert_error(status, &body, 403, "banned");
    let (status, body) = app.login("ace", "not the password").await;
    assert_error(status, &body, 401, "invalid_credentials");
    let (status, body) =
        app.admin(Method::POST, &format!("/api/admin/users/{}/ban", ace.id), Some(&json!({"reason": "again"}))).await;
    assert_error(status, &body, 409, "already_banned");

    // Unbanned: exactly where the scores put them, on every board.
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/users/{}/ban", ace.id), None).await;
    assert_eq!((status.as_u16(), body["best_rank"].clone()), (200, json!(1)), "{body}");
    assert_eq!(futures_pages(&app).await, before);
    // The unban ended the old session: the player logs in again.
    let (status, body) = app.get_authed("/api/me", &ace.token).await;
    assert_error(status, &body, 401, "invalid_session");
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/users/{}/ban", ace.id), None).await;
    assert_error(status, &body, 409, "not_banned");
    let (status, session) = app.login("ace", PASSWORD).await;
    assert_eq!(status, 200, "{session}");
    let token = session["token"].as_str().unwrap();
    let (status, _) = app.post_score_raw(token, &json!({"score": 5}), None).await;
    assert_eq!(status, 201);

    // The audit log names both, newest first, and never the token.
    let (status, audit) = app.admin(Method::GET, "/api/admin/audit?limit=2", None).await;
    assert_eq!(status, 200, "{audit}");
    let actions: Vec<&str> =
        audit["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["unban", "ban"]);
    assert_eq!(audit["entries"][1]["target"], format!("user:{}", ace.id));
    assert_eq!(audit["entries"][1]["detail"]["reason"], "999,999,999 in a second");
    assert_eq!(audit["entries"][1]["actor"], "admin");
    assert!(!audit.to_string().contains(crate::helpers::ADMIN));
    let next = audit["next_before"].as_i64().expect("more records (create_board)");
    let (_, older) = app.admin(Method::GET, &format!("/api/admin/audit?before={next}"), None).await;
    assert_eq!(older["entries"][0]["action"], "create_board", "{older}");
    assert_eq!(older["next_before"], Value::Null);
}

/// Every board's first page, for before/after comparisons.
async fn futures_pages(app: &TestApp) -> Vec<Value> {
    let mut pages = Vec::new();
    for board in ["best", "total", "level-1"] {
        pages.push(app.ranking(board, "").await);
    }
    pages
}

async fn renames_show_on_every_page(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let player = app.register("renamed").await;
    app.post_score(&player, 10).await;
    assert_eq!(app.ranking("best", "").await["entries"][0]["user"]["display_name"], "renamed");

    let body = json!({"display_name": "Nice Name"});
    let (status, user) = app.admin(Method::PATCH, &format!("/api/admin/users/{}", player.id), Some(&body)).await;
    assert_eq!((status.as_u16(), user["display_name"].clone()), (200, json!("Nice Name")), "{user}");
    assert_eq!(app.ranking("best", "").await["entries"][0]["user"]["display_name"], "Nice Name");
    assert_eq!(profile(&app, &player).await["display_name"], "Nice Name");

    let me = patch_me(&app, &player.token, &json!({"display_name": "Mine"})).await;
    assert_eq!((me.0.as_u16(), me.1["display_name"].clone()), (200, json!("Mine")), "{}", me.1);
    assert_eq!(app.ranking("best", "").await["entries"][0]["user"]["display_name"], "Mine");
    assert_eq!(app.ranking("total", "").await["entries"][0]["user"]["display_name"], "Mine");
}

async fn patch_me(app: &TestApp, token: &str, body: &Value) -> (reqwest::StatusCode, Value) {
    json_of(app.client.patch(app.url("/api/me")).bearer_auth(token).json(body).send().await.unwrap()).await
}

async fn delete_me(app: &TestApp, token: &str, body: &Value) -> (reqwest::StatusCode, Value) {
    json_of(app.client.delete(app.url("/api/me")).bearer_auth(token).json(body).send().await.unwrap()).await
}

async fn a_new_password_ends_every_other_session(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let player = app.register("keyholder").await;
    let (_, other) = app.login("keyholder", PASSWORD).await;
    let other = other["token"].as_str().unwrap().to_owned();

    let (status, body) = patch_me(&app, &player.token, &json!({"password": "a brand new one"})).await;
    assert_error(status, &body, 422, "invalid_current_password");
    let wrong = json!({"password": "a brand new one", "current_password": "not it at all"});
    let (status, body) = patch_me(&app, &player.token, &wrong).await;
    assert_error(status, &body, 401, "invalid_credentials");
    assert_eq!(app.get_authed("/api/me", &other).await.0, 200, "a failed change ends nothing");

    let right = json!({"password": "a brand new one", "current_password": PASSWORD});
    let (status, body) = patch_me(&app, &player.token, &right).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.get_authed("/api/me", &player.token).await.0, 200, "the session that changed it stays");
    assert_eq!(app.get_authed("/api/me", &other).await.0, 401, "every other session ends");
    assert_eq!(app.login("keyholder", PASSWORD).await.0, 401);
    assert_eq!(app.login("keyholder", "a brand new one").await.0, 200);
}

async fn an_erased_player_leaves_nothing_behind(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    // On one Redis, the service connects as a user that may not SCAN or
    // KEYS: erasure must find what it deletes by name, never by a scan.
    let redis = match &db.redis {
        Some(redis) if !redis.url.starts_with("redis+cluster://") => Some(without_scans(redis).await),
        other => other.clone(),
    };
    let app = crate::helpers::spawn_app_at(&db.url, redis.as_ref(), &["--admin-token", crate::helpers::ADMIN]).await;
    app.create_board(&json!({"id": "weekly", "name": "Weekly", "reset": "0 0 * * 1"})).await;
    let gone = app.register("leaving_soon").await;
    let stays = app.register("staying").await;
    app.post_score(&stays, 20).await;
    let (status, _) = app.post_score_raw(&gone.token, &json!({"score": 777_001}), Some("key-1")).await;
    assert_eq!(status, 201);
    app.post_board_score(&gone, "weekly", 777_002).await;
    app.post_board_score(&stays, "weekly", 5).await;
    let (_, second) = app.login("leaving_soon", PASSWORD).await;
    let second = second["token"].as_str().unwrap().to_owned();
    assert_eq!(app.login("leaving_soon", "a wrong password").await.0, 401); // a failure window
    app.get_json(&format!("/api/users/{}", gone.id)).await; // cached in Redis, if any

    let (status, body) = delete_me(&app, &gone.token, &json!({"password": "wrong password"})).await;
    assert_error(status, &body, 401, "invalid_credentials");
    let (status, body) = delete_me(&app, &gone.token, &json!({"password": PASSWORD})).await;
    assert_eq!(status, 204, "{body}");

    // Every board closes up; sessions are dead; the profile is gone.
    for board in ["best", "total", "weekly"] {
        let page = app.ranking(board, "").await;
        assert_eq!((ranks_and_ids(&page), page["total_players"].clone()), (vec![(1, stays.id)], json!(1)), "{board}");
    }
    for token in [&gone.token, &second] {
        assert_eq!(app.get_authed("/api/me", token).await.0, 401);
    }
    assert_eq!(app.get_json(&format!("/api/users/{}", gone.id)).await.0, 404);

    // Nothing of theirs in any table.
    let pool = db.connect().await;
    let checks = [
        ("users", "id"),
        ("scores", "user_id"),
        ("sessions", "user_id"),
        ("idempotency_keys", "user_id"),
        ("board_entries", "user_id"),
        ("board_scores", "user_id"),
    ];
    for (table, column) in checks {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE {column} = {}", gone.id);
        assert_eq!(sqlx::query_scalar::<_, i64>(&sql).fetch_one(&pool).await.unwrap(), 0, "{table}");
    }
    let players: i64 =
        sqlx::query_scalar("SELECT players FROM board_stats WHERE id = 1").fetch_one(&pool).await.unwrap();
    assert_eq!(players, 1);
    // Nor in Redis: no value names them or holds their scores, no board
    // member is theirs (what remains is an id-only mark that keeps late
    // copies from coming back).
    if let Some(redis) = &db.redis {
        let dump = redis_dump(redis).await;
        for trace in ["leaving_soon", "777001", "777002"] {
            assert!(!dump.contains(trace), "Redis still holds {trace}: {dump}");
        }
    }

    // The login name is free again, for a new player with a new id.
    let again = app.register("leaving_soon").await;
    assert!(again.id > stays.id);
}

/// The same Redis through a user without the keyspace-walking commands.
async fn without_scans(redis: &crate::helpers::TestRedis) -> crate::helpers::TestRedis {
    let client = deadpool_redis::redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = deadpool_redis::redis::cmd("ACL")
        .arg(&["SETUSER", "hiscore-no-scans", "on", ">no-scans-password", "~*", "&*", "+@all", "-scan", "-keys"])
        .query_async(&mut conn)
        .await
        .unwrap();
    let url = redis.url.replacen("redis://", "redis://hiscore-no-scans:no-scans-password@", 1);
    crate::helpers::TestRedis { url, prefix: redis.prefix.clone() }
}

/// Every key and value under a test's prefix, as text (on every node of a
/// cluster: replicas hold copies).
async fn redis_dump(redis: &crate::helpers::TestRedis) -> String {
    let nodes = match redis.url.strip_prefix("redis+cluster://") {
        Some(_) => {
            crate::external::shared_redis_cluster().ports.iter().map(|p| format!("redis://127.0.0.1:{p}")).collect()
        }
        None => vec![redis.url.clone()],
    };
    let mut dump = String::new();
    for node in nodes {
        dump.push_str(&redis_dump_node(&node, &redis.prefix).await);
    }
    dump
}

async fn redis_dump_node(url: &str, prefix: &str) -> String {
    let client = deadpool_redis::redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    // A replica answers reads only after READONLY (a master ignores it).
    let _: Result<(), _> = deadpool_redis::redis::cmd("READONLY").query_async(&mut conn).await;
    let keys: Vec<String> =
        deadpool_redis::redis::cmd("KEYS").arg(format!("{prefix}:*")).query_async(&mut conn).await.unwrap();
    let mut dump = String::new();
    for key in keys {
        let kind: String = deadpool_redis::redis::cmd("TYPE").arg(&key).query_async(&mut conn).await.unwrap();
        let value: Vec<String> = match kind.as_str() {
            "string" => vec![deadpool_redis::redis::cmd("GET").arg(&key).query_async(&mut conn).await.unwrap()],
            "hash" => deadpool_redis::redis::cmd("HGETALL").arg(&key).query_async(&mut conn).await.unwrap(),
            "zset" => {
                deadpool_redis::redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).query_async(&mut conn).await.unwrap()
            }
            "list" => {
                deadpool_redis::redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query_async(&mut conn).await.unwrap()
            }
            _ => Vec::new(),
        };
        dump.push_str(&format!("{key} => {value:?}\n"));
    }
    dump
}

async fn removing_posts_while_the_player_posts_loses_nothing(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let player = app.register("busy").await;
    let mut early = Vec::new();
    for score in 1..=10 {
        early.push(app.post_score(&player, score * 100).await["score"]["id"].as_i64().unwrap());
    }
    let posting = async {
        for score in 1..=30 {
            app.post_score(&player, score * 7).await;
        }
    };
    let removing = async {
        for id in early.iter().rev().take(6) {
            assert_eq!(delete(&app, &format!("/api/admin/scores/{id}")).await.0, 204);
        }
    };
    tokio::join!(posting, removing);
    assert_eq!(history(&app, &player).await.len(), 34);
    assert_recounted(&app, &player).await;
    let page = app.ranking("total", "").await;
    assert_eq!(page["entries"][0]["score"], profile(&app, &player).await["total_score"]);
}

async fn moderation_refuses_bad_requests_clearly(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let player = app.register("someone").await;
    let cases: [(Method, String, Option<Value>, u16, &str); 9] = [
        (Method::DELETE, "/api/admin/scores/999999".into(), None, 404, "score_not_found"),
        (Method::DELETE, "/api/admin/scores/abc".into(), None, 404, "score_not_found"),
        (Method::POST, "/api/admin/users/999999/ban".into(), Some(json!({"reason": "x"})), 404, "user_not_found"),
        (Method::POST, format!("/api/admin/users/{}/ban", player.id), Some(json!({})), 422, "invalid_reason"),
        (
            Method::POST,
            format!("/api/admin/users/{}/ban", player.id),
            Some(json!({"reason": "a\nb"})),
            422,
            "invalid_reason",
        ),
        (Method::DELETE, format!("/api/admin/users/{}/ban", player.id), None, 409, "not_banned"),
        (
            Method::PATCH,
            format!("/api/admin/users/{}", player.id),
            Some(json!({"display_name": ""})),
            422,
            "invalid_display_name",
        ),
        (Method::DELETE, "/api/admin/boards/best/scores/1".into(), None, 403, "builtin_board"),
        (Method::GET, "/api/admin/audit?limit=0".into(), None, 400, "invalid_limit"),
    ];
    for (method, path, body, status, code) in cases {
        let (actual, answer) = app.admin(method.clone(), &path, body.as_ref()).await;
        assert_error(actual, &answer, status, code);
    }
    let (status, body) = patch_me(&app, &player.token, &json!({})).await;
    assert_error(status, &body, 422, "invalid_change");
    let (status, body) = patch_me(&app, &player.token, &json!({"display_name": 5})).await;
    assert_error(status, &body, 422, "invalid_display_name");
    let (status, body) = delete_me(&app, &player.token, &json!({})).await;
    assert_error(status, &body, 422, "invalid_password");
    let (status, body) = json_of(app.client.delete(app.url("/api/admin/scores/1")).send().await.unwrap()).await;
    assert_error(status, &body, 401, "admin_token_required");
}

/// An entry moderation takes off or puts back (its last post deleted, a
/// ban, an unban, an erasure) takes its period's next change number, as a
/// post's entry does. It used to move the period's count with no entry
/// taking the number: every rank source's count of the numbers it had
/// seen without a gap stopped there for good, and every cursor walk of a
/// `latest` board begun afterwards left out whoever posted after it
/// (found by the subscores model test under `MODEL_SEED=1`).
async fn walks_skip_nobody_after_moderation_takes_entries_off(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    app.create_board(&json!({"id": "laps", "name": "Laps", "operator": "latest"})).await;
    let mut players = Vec::new();
    for n in 0..9 {
        let player = app.register(&format!("walker{n}")).await;
        app.post_board_score(&player, "laps", 10 * (n + 1)).await;
        players.push(player);
    }
    let (_, posts) = app.get_json(&format!("/api/users/{}/scores?board=laps", players[0].id)).await;
    let only_post = posts["scores"][0]["id"].as_i64().unwrap();
    assert_eq!(delete(&app, &format!("/api/admin/boards/laps/scores/{only_post}")).await.0, 204);
    let ban = |player: &Player| format!("/api/admin/users/{}/ban", player.id);
    let reason = json!({"reason": "walk test"});
    for player in &players[1..3] {
        assert_eq!(app.admin(Method::POST, &ban(player), Some(&reason)).await.0, 200);
    }
    assert_eq!(app.admin(Method::DELETE, &ban(&players[2]), None).await.0, 200);
    assert_eq!(delete_me(&app, &players[3].token, &json!({"password": PASSWORD})).await.0, 204);
    for player in &players[4..] {
        app.post_board_score(player, "laps", 5).await;
    }

    let whole = app.ranking("laps", "limit=100").await["entries"].as_array().unwrap().clone();
    let mut listed: Vec<i64> = whole.iter().map(|entry| entry["user"]["id"].as_i64().unwrap()).collect();
    listed.sort_unstable();
    let expected: Vec<i64> = std::iter::once(&players[2]).chain(&players[4..]).map(|player| player.id).collect();
    assert_eq!(listed, expected);
    let mut walked = Vec::new();
    let mut query = "limit=2".to_owned();
    loop {
        let page = app.ranking("laps", &query).await;
        walked.extend(page["entries"].as_array().unwrap().iter().cloned());
        let Some(cursor) = page["next_cursor"].as_str() else { break };
        query = format!("limit=2&cursor={cursor}");
    }
    assert_eq!(walked, whole, "a cursor walk shows the whole board");
}
