//! Scoped admin keys (v4): every admin route of the OpenAPI document,
//! called with the admin token and with a key of each role, answers as the
//! contract's roles say (written out here, apart from the service's own
//! table); the audit log names the key that acted; only `server` keys post.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backend_tests;
use crate::helpers::{assert_error, json_of, spawn_admin_app, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

backend_tests!(every_admin_route_answers_each_role_as_documented, keys_act_under_their_own_name);

/// What the contract lets each role call: a viewer every admin read, a
/// moderator also these; the admin token everything; a server key nothing.
const MODERATION: [(&str, &str); 6] = [
    ("delete", "/api/admin/scores/{id}"),
    ("delete", "/api/admin/boards/{board}/scores/{id}"),
    ("patch", "/api/admin/users/{id}"),
    ("post", "/api/admin/users/{id}/ban"),
    ("delete", "/api/admin/users/{id}/ban"),
    ("post", "/api/admin/held/{score_id}"),
];

fn allowed(role: &str, method: &str, path: &str) -> bool {
    match role {
        "admin" => true,
        "moderator" => method == "get" || MODERATION.contains(&(method, path)),
        "viewer" => method == "get",
        _ => false,
    }
}

async fn make_key(app: &TestApp, role: &str) -> (i64, String) {
    let (status, key) = app.admin(Method::POST, "/api/admin/keys", Some(&json!({"name": role, "role": role}))).await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    assert_eq!(key["role"], role);
    (key["id"].as_i64().unwrap(), key["key"].as_str().unwrap().to_owned())
}

async fn call(app: &TestApp, method: &str, path: &str, token: &str, body: Option<&Value>) -> (StatusCode, Value) {
    let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    let mut request = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(body);
    }
    json_of(request.send().await.unwrap()).await
}

async fn every_admin_route_answers_each_role_as_documented(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    // (Wrong tokens are limited per address: this test sends one per route.)
    let app = spawn_app_on(&db, &["--admin-token", ADMIN, "--rate-admin-per-address", "0"]).await;
    let mut tokens = vec![("admin".to_owned(), ADMIN.to_owned())];
    for role in ["moderator", "viewer", "server"] {
        tokens.push((role.to_owned(), make_key(&app, role).await.1));
    }
    let (_, document) = app.get_json("/api/openapi.json").await;
    let mut routes = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        if !path.starts_with("/api/admin/") {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            routes.push((method.clone(), path.clone()));
        }
    }
    assert!(routes.len() >= 22, "{routes:?}");
    for (method, path) in &routes {
        // Ids that name nothing, and bodies that fail validation: an
        // allowed call answers 404 or 422 and changes nothing.
        let url = path.replace("{board}", "no-such-board").replace("{id}", "999999").replace("{score_id}", "999999");
        let body = match method.as_str() {
            "post" if path == "/api/admin/initialize" => Some(json!({"users": "not a number"})),
            "post" | "patch" => Some(json!({})),
            _ => None,
        };
        for (role, token) in &tokens {
            let (status, answer) = call(&app, method, &url, token, body.as_ref()).await;
            if allowed(role, method, path) {
                assert!(
                    !matches!(status.as_u16(), 401 | 403),
                    "{role} may call {method} {path}, and got {status} {answer}"
                );
            } else {
                assert_error(status, &answer, 403, "forbidden_for_role");
            }
        }
        // Any other bearer is 401, and a cookie is never read.
        let (status, answer) = call(&app, method, &url, "hsk_not-a-live-key", body.as_ref()).await;
        assert_error(status, &answer, 401, "invalid_admin_token");
    }
}

async fn keys_act_under_their_own_name(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let (moderator_id, moderator) = make_key(&app, "moderator").await;
    let (viewer_id, viewer) = make_key(&app, "viewer").await;
    let (_, server) = make_key(&app, "server").await;
    let (status, listed) = app.admin(Method::GET, "/api/admin/keys", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let roles: Vec<&str> = listed["keys"].as_array().unwrap().iter().map(|k| k["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["moderator", "viewer", "server"]);
    assert!(!listed.to_string().contains(&moderator), "a key's value is shown once");
    let (status, body) = app.admin(Method::POST, "/api/admin/keys", Some(&json!({"name": "x", "role": "admin"}))).await;
    assert_error(status, &body, 422, "invalid_role");

    for (token, actor, role) in [
        (ADMIN, "admin".to_owned(), "admin"),
        (moderator.as_str(), format!("key:{moderator_id}"), "moderator"),
        (viewer.as_str(), format!("key:{viewer_id}"), "viewer"),
    ] {
        let (status, me) = call(&app, "get", "/api/admin/whoami", token, None).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me, json!({"actor": actor, "role": role}));
    }

    // A moderator bans; the audit log names the key.
    let player = app.register("scoped").await;
    let (status, body) = call(
        &app,
        "post",
        &format!("/api/admin/users/{}/ban", player.id),
        &moderator,
        Some(&json!({"reason": "test"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, audit) = call(&app, "get", "/api/admin/audit?limit=1", &viewer, None).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    assert_eq!(audit["entries"][0]["action"], "ban");
    assert_eq!(audit["entries"][0]["actor"], format!("key:{moderator_id}"));
    // A viewer finds players by id or by the start of a login (any case)
    // or display name, banned ones included with `banned_at`.
    let other = app.register("ScopedOther").await;
    for (q, expected) in [
        (player.id.to_string(), vec![player.id]),
        ("SCOPED".to_owned(), vec![player.id, other.id]),
        ("scopedo".to_owned(), vec![other.id]),
    ] {
        let (status, found) = call(&app, "get", &format!("/api/admin/users?q={q}"), &viewer, None).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        let ids: Vec<i64> = found["users"].as_array().unwrap().iter().map(|u| u["id"].as_i64().unwrap()).collect();
        assert_eq!(ids, expected, "{q}: {found}");
    }
    let (_, found) = call(&app, "get", &format!("/api/admin/users?q={}", player.id), &viewer, None).await;
    assert!(found["users"][0]["banned_at"].is_string(), "{found}");
    assert_eq!(found["users"][0]["login_name"], "scoped");
    // LIKE's wildcards are plain characters here.
    for q in ["_", "%25", "s_oped", "%C3%8E0%0F~%F2%B9%BB%A4%0F", "%C3%A9"] {
        let (status, found) = call(&app, "get", &format!("/api/admin/users?q={q}"), &viewer, None).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(found["users"], json!([]), "{q}");
    }
    let (status, body) = call(&app, "get", "/api/admin/users?q=", &viewer, None).await;
    assert_error(status, &body, 400, "invalid_query");
    let (status, body) = call(&app, "delete", &format!("/api/admin/users/{}/ban", player.id), &moderator, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, found) = call(&app, "get", "/api/admin/users?q=scoped&limit=1", &viewer, None).await;
    assert!(found["users"][0]["banned_at"].is_null() && found["users"].as_array().unwrap().len() == 1, "{found}");

    // Only server keys post scores for players; admin keys post nothing.
    let post = json!({"score": 5, "user_id": player.id});
    for (token, expected) in [(&moderator, 403), (&viewer, 403), (&server, 201)] {
        let (status, body) = call(&app, "post", "/api/scores", token, Some(&post)).await;
        assert_eq!(status.as_u16(), expected, "{body}");
        if expected == 403 {
            assert_error(status, &body, 403, "forbidden_for_role");
        }
    }
    // A revoked key reaches nothing.
    let (status, _) = app.admin(Method::DELETE, &format!("/api/admin/keys/{viewer_id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = call(&app, "get", "/api/admin/audit", &viewer, None).await;
    assert_error(status, &body, 401, "invalid_admin_token");
    // Admin routes read only the Authorization header, never a cookie.
    let response = app
        .client
        .get(app.url("/api/admin/audit"))
        .header("Cookie", format!("session={}", player.token))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_error(status, &body, 401, "admin_token_required");
}
