//! Boards: competition ranks, ties across pages, offset and cursor paging,
//! cursor walks under concurrent overtaking, and "around me".

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::Value;

use crate::backend_tests;
use crate::helpers::{
    assert_error, board_definition, model_seed, ranks_and_ids, spawn_admin_app, spawn_app, Backend, Player, TestApp,
};

backend_tests!(
    ties_share_a_rank_across_offset_pages,
    ties_share_a_rank_across_cursor_pages,
    the_total_board_orders_by_total_then_id,
    players_who_never_played_are_not_on_the_boards,
    a_cursor_walk_survives_overtaking_at_the_page_boundary,
    around_me_is_centred_and_ranked,
    ranking_errors,
    pages_carry_an_etag_that_changes_with_the_board,
    a_page_answered_by_its_address_is_the_routed_answer,
);

/// Five players whose best scores are 50, 40, 40, 40, 30 (posted in that
/// order, so ties fall back to best_at) and totals 50, 40, 40, 40, 40.
async fn five_players(app: &TestApp) -> Vec<Player> {
    let mut players = Vec::new();
    for (name, scores) in [("pp1", &[50][..]), ("pp2", &[40]), ("pp3", &[40]), ("pp4", &[40]), ("pp5", &[10, 30])] {
        let player = app.register(name).await;
        for score in scores {
            app.post_score(&player, *score).await;
        }
        players.push(player);
    }
    players
}

fn next_cursor(page: &Value) -> Option<String> {
    page["next_cursor"].as_str().map(str::to_owned)
}

async fn ties_share_a_rank_across_offset_pages(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let p = five_players(&app).await;

    let first = app.ranking("best", "limit=3").await;
    assert_eq!(ranks_and_ids(&first), [(1, p[0].id), (2, p[1].id), (2, p[2].id)]);
    assert_eq!(first["board"], "best");
    assert_eq!(first["total_players"], 5);
    assert_eq!(first["next_offset"], 3);
    assert_eq!(first["entries"][0]["score"], 50);
    assert_eq!(first["entries"][0]["user"]["display_name"], "pp1");
    assert_eq!(first["entries"][0]["user"]["image"], p[0].id % 10 + 1);
    assert!(first["entries"][0]["achieved_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    // "Load more" continues at the shared rank, then skips to 5.
    let second = app.ranking("best", "limit=3&offset=3").await;
    assert_eq!(ranks_and_ids(&second), [(2, p[3].id), (5, p[4].id)]);
    assert!(second["next_offset"].is_null() && second["next_cursor"].is_null());

    // Past the end: an empty last page.
    let beyond = app.ranking("best", "offset=10").await;
    assert!(ranks_and_ids(&beyond).is_empty());
    assert_eq!(beyond["total_players"], 5);
    assert!(beyond["next_offset"].is_null());
}

async fn ties_share_a_rank_across_cursor_pages(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let p = five_players(&app).await;

    let mut seen = Vec::new();
    let mut page = app.ranking("best", "limit=2").await;
    loop {
        seen.extend(ranks_and_ids(&page));
        let Some(cursor) = next_cursor(&page) else {
            break;
        };
        page = app.ranking("best", &format!("limit=2&cursor={cursor}")).await;
    }
    assert_eq!(seen, [(1, p[0].id), (2, p[1].id), (2, p[2].id), (2, p[3].id), (5, p[4].id)]);

    // Cursor pages also say where they end by offset.
    let first = app.ranking("best", "limit=2").await;
    let cursor = next_cursor(&first).unwrap();
    let second = app.ranking("best", &format!("limit=2&cursor={cursor}")).await;
    assert_eq!(second["next_offset"], 4);
}

async fn the_total_board_orders_by_total_then_id(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let p = five_players(&app).await;

    let page = app.ranking("total", "limit=10").await;
    assert_eq!(page["board"], "total");
    assert_eq!(ranks_and_ids(&page), [(1, p[0].id), (2, p[1].id), (2, p[2].id), (2, p[3].id), (2, p[4].id)]);
    assert!(page["entries"].as_array().unwrap().iter().all(|e| e["achieved_at"].is_null()));
    assert_eq!(page["entries"][4]["score"], 40);

    let (_, profile) = app.get_json(&format!("/api/users/{}", p[4].id)).await;
    assert_eq!(profile["best_rank"], 5);
    assert_eq!(profile["total_rank"], 2);
}

async fn players_who_never_played_are_not_on_the_boards(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let idle = app.register("idle").await;
    let active = app.register("active").await;
    app.post_score(&active, 0).await;

    for board in ["best", "total"] {
        let page = app.ranking(board, "").await;
        assert_eq!(ranks_and_ids(&page), [(1, active.id)]);
        assert_eq!(page["total_players"], 1);
    }
    let (_, profile) = app.get_json(&format!("/api/users/{}", idle.id)).await;
    assert!(profile["best_rank"].is_null() && profile["total_rank"].is_null());
}

async fn a_cursor_walk_survives_overtaking_at_the_page_boundary(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    // p[0] = 120, p[1] = 110, …, p[11] = 10.
    let mut p = Vec::new();
    for i in 0..12 {
        let player = app.register(&format!("walker{i:02}")).await;
        app.post_score(&player, 120 - 10 * i).await;
        p.push(player);
    }

    let first = app.ranking("best", "limit=4").await;
    assert_eq!(ranks_and_ids(&first), [(1, p[0].id), (2, p[1].id), (3, p[2].id), (4, p[3].id)]);
    let offset_page_before = app.ranking("best", "limit=4&offset=4").await;
    assert_eq!(ranks_and_ids(&offset_page_before)[0].1, p[4].id);

    // Meanwhile: p[8] overtakes into page 1, p[2] climbs further, and
    // p[11] jumps into the middle of what page 2 will be.
    app.post_score(&p[8], 115).await;
    app.post_score(&p[2], 200).await;
    app.post_score(&p[11], 75).await;

    // OFFSET paging now shows p[3] a second time (the bug keysets avoid)…
    let offset_page = app.ranking("best", "limit=4&offset=4").await;
    assert_eq!(ranks_and_ids(&offset_page)[0].1, p[3].id);

    // …while the cursor walk shows nobody twice and skips no unmoved player.
    let mut seen: Vec<i64> = ranks_and_ids(&first).iter().map(|(_, id)| *id).collect();
    let mut cursor = next_cursor(&first);
    let mut pages = Vec::new();
    while let Some(c) = cursor {
        let page = app.ranking("best", &format!("limit=4&cursor={c}")).await;
        seen.extend(ranks_and_ids(&page).iter().map(|(_, id)| *id));
        cursor = next_cursor(&page);
        pages.push(page);
    }
    let unique: HashSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a player appeared twice: {seen:?}");
    let moved = [p[8].id, p[2].id, p[11].id];
    for player in p.iter().filter(|player| !moved.contains(&player.id)) {
        assert!(unique.contains(&player.id), "unmoved {} was skipped: {seen:?}", player.login_name);
    }
    // Ranks on the second page are current: 200, 115, 110, 100 are above p[4] (80).
    assert_eq!(ranks_and_ids(&pages[0])[0], (6, p[4].id));
    assert_eq!(ranks_and_ids(&pages[0])[1], (7, p[11].id));
}

async fn around_me_is_centred_and_ranked(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let p = five_players(&app).await;

    let page = app.ranking(&format!("best/around/{}", p[2].id), "radius=1").await;
    assert_eq!(ranks_and_ids(&page), [(2, p[1].id), (2, p[2].id), (2, p[3].id)]);
    assert_eq!(page["total_players"], 5);
    assert_eq!(page["next_offset"], 4);
    assert!(page["next_cursor"].is_string());

    let page = app.ranking(&format!("best/around/{}", p[0].id), "radius=2").await;
    assert_eq!(ranks_and_ids(&page), [(1, p[0].id), (2, p[1].id), (2, p[2].id)]);

    let page = app.ranking(&format!("total/around/{}", p[4].id), "radius=0").await;
    assert_eq!(ranks_and_ids(&page), [(2, p[4].id)]);
    assert!(page["next_cursor"].is_null());

    // The default radius is 5: the whole board here.
    let page = app.ranking(&format!("best/around/{}", p[4].id), "").await;
    assert_eq!(ranks_and_ids(&page).len(), 5);

    let idle = app.register("idle").await;
    let (status, body) = app.get_json(&format!("/api/rankings/best/around/{}", idle.id)).await;
    assert_error(status, &body, 404, "user_not_on_board");
    let (status, body) = app.get_json("/api/rankings/best/around/999999").await;
    assert_error(status, &body, 404, "user_not_found");
    let (status, body) = app.get_json(&format!("/api/rankings/best/around/{}?radius=51", p[0].id)).await;
    assert_error(status, &body, 400, "invalid_radius");
}

async fn ranking_errors(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    five_players(&app).await;
    let total_cursor = next_cursor(&app.ranking("total", "limit=1").await).unwrap();

    let cases = [
        ("/api/rankings/worst", 404, "board_not_found"),
        ("/api/rankings/best?cursor=garbage", 400, "invalid_cursor"),
        (&format!("/api/rankings/best?cursor={total_cursor}"), 400, "invalid_cursor"),
        ("/api/rankings/best?limit=0", 400, "invalid_limit"),
        ("/api/rankings/best?limit=101", 400, "invalid_limit"),
        ("/api/rankings/best?limit=ten", 400, "invalid_limit"),
        ("/api/rankings/best?offset=-1", 400, "invalid_offset"),
        (&format!("/api/rankings/total?offset=1&cursor={total_cursor}"), 400, "invalid_query"),
    ];
    for (path, status, code) in cases {
        let (actual, body) = app.get_json(path).await;
        assert_error(actual, &body, status, code);
    }
    let (status, _) = app.get_json("/api/rankings/best?limit=100").await;
    assert_eq!(status, StatusCode::OK);
}

backend_tests!(random_posts_match_a_brute_force_sort);

/// The property: after random posts with many ties, every page, cursor walk,
/// window and profile rank equals a brute-force sort of the database rows.
async fn random_posts_match_a_brute_force_sort(backend: Backend) {
    use rand::{Rng, SeedableRng};
    let (app, db) = spawn_app(&backend).await;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(model_seed(42));
    let mut players = Vec::new();
    for i in 0..12 {
        players.push(app.register(&format!("prop{i:02}")).await);
    }
    for _ in 0..80 {
        let player = &players[rng.gen_range(0..players.len())];
        app.post_score(player, rng.gen_range(0..6) * 10).await;
    }

    let pool = db.connect().await;
    let rows: Vec<(i64, i64, Option<i64>, i64, i64)> =
        sqlx::query_as("SELECT id, best_score, best_at, total_score, play_count FROM users")
            .fetch_all(&pool)
            .await
            .unwrap();
    for board in ["best", "total"] {
        // (score, tie-break, id) for everyone who played, in board order.
        let mut expected: Vec<(i64, i64, i64)> = rows
            .iter()
            .filter(|r| r.4 > 0)
            .map(|r| if board == "best" { (r.1, r.2.unwrap(), r.0) } else { (r.3, 0, r.0) })
            .collect();
        expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let ranked: Vec<(i64, i64)> =
            expected.iter().map(|e| (1 + expected.iter().filter(|o| o.0 > e.0).count() as i64, e.2)).collect();

        let mut by_offset = Vec::new();
        let mut offset = 0;
        loop {
            let page = app.ranking(board, &format!("limit=5&offset={offset}")).await;
            by_offset.extend(ranks_and_ids(&page));
            match page["next_offset"].as_i64() {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(by_offset, ranked, "{board} by offset");

        let mut by_cursor = Vec::new();
        let mut page = app.ranking(board, "limit=4").await;
        loop {
            by_cursor.extend(ranks_and_ids(&page));
            let Some(cursor) = next_cursor(&page) else { break };
            page = app.ranking(board, &format!("limit=4&cursor={cursor}")).await;
        }
        assert_eq!(by_cursor, ranked, "{board} by cursor");

        for (position, (rank, id)) in ranked.iter().enumerate() {
            let window = app.ranking(&format!("{board}/around/{id}"), "radius=2").await;
            let start = position.saturating_sub(2);
            let end = (position + 3).min(ranked.len());
            assert_eq!(ranks_and_ids(&window), ranked[start..end], "{board} around {id}");
            let (_, profile) = app.get_json(&format!("/api/users/{id}")).await;
            assert_eq!(profile[format!("{board}_rank")], *rank, "{board} rank of {id}");
        }
    }
}

/// The tag of a page fetched with `If-None-Match: held` (and the status).
async fn conditional_get(app: &TestApp, path: &str, held: Option<&str>) -> (StatusCode, String, String) {
    let mut request = app.client.get(app.url(path));
    if let Some(tag) = held {
        request = request.header("If-None-Match", tag);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let tag = response.headers().get("etag").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, tag, response.text().await.unwrap())
}

async fn pages_carry_an_etag_that_changes_with_the_board(backend: Backend) {
    let (app, _db) = spawn_app(&backend).await;
    let players = five_players(&app).await;
    let top = "/api/rankings/best?limit=2";
    let (status, tag, body) = conditional_get(&app, top, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(tag.starts_with('"') && tag.len() > 10, "{tag:?}");
    // Held and current: 304 with no body, again and again.
    for held in [tag.clone(), format!("W/{tag}"), format!("\"other\", {tag}"), "*".to_owned()] {
        let (status, again, empty) = conditional_get(&app, top, Some(&held)).await;
        assert_eq!((status, &again, empty.as_str()), (StatusCode::NOT_MODIFIED, &tag, ""), "{held}");
    }
    // A change below the page still changes the board, and so the tag.
    app.post_score(&players[4], 35).await;
    let (status, changed, new_body) = conditional_get(&app, top, Some(&tag)).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(changed, tag);
    assert_eq!(new_body, body, "the top two did not move");
    // Around a player: the same rules.
    let around = format!("/api/rankings/total/around/{}?radius=1", players[2].id);
    let (_, tag, _) = conditional_get(&app, &around, None).await;
    assert_eq!(conditional_get(&app, &around, Some(&tag)).await.0, StatusCode::NOT_MODIFIED);
    app.post_score(&players[0], 1).await;
    assert_eq!(conditional_get(&app, &around, Some(&tag)).await.0, StatusCode::OK);
}

/// A kept page (or, on a single instance, an around-me window or a
/// friends board) is answered by the address that asked for it before,
/// without the router (`front`, `routes::kept_answer`): the same answer,
/// headers, 304s and metrics as a routed one, never a page older than the
/// board, and for a custom board's address never once it names another
/// page (the board deleted or made again, its period ended, a partition
/// opened). With Redis, pages under their leases; the answers must be the
/// same.
async fn a_page_answered_by_its_address_is_the_routed_answer(backend: Backend) {
    let (app, _db) = spawn_admin_app(&backend).await;
    let players = five_players(&app).await;
    let top = "/api/rankings/best?limit=2";
    let routed = app.get(top).await;
    let routed_headers = routed.headers().clone();
    let routed_body = routed.text().await.unwrap();
    for _ in 0..3 {
        let kept = app.get(top).await;
        assert_eq!(kept.status(), StatusCode::OK);
        for header in ["etag", "content-type", "cache-control", "x-content-type-options"] {
            assert_eq!(kept.headers().get(header), routed_headers.get(header), "{header}");
        }
        let id = kept.headers().get("x-request-id").expect("a request id").clone();
        assert_ne!(Some(&id), routed_headers.get("x-request-id"), "each answer its own id");
        assert_eq!(kept.text().await.unwrap(), routed_body);
    }
    let tag = routed_headers["etag"].to_str().unwrap().to_owned();
    let (status, again, empty) = conditional_get(&app, top, Some(&tag)).await;
    assert_eq!((status, again.as_str(), empty.as_str()), (StatusCode::NOT_MODIFIED, tag.as_str(), ""));
    // 1 routed + 3 kept + 1 conditional, all under the page's route.
    let counted = r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}",status="200"}"#;
    assert_eq!(app.metric(counted).await, 4.0);
    let not_modified = r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}",status="304"}"#;
    assert_eq!(app.metric(not_modified).await, 1.0);

    // The same for a window around a player.
    let around = format!("/api/rankings/best/around/{}?radius=1", players[4].id);
    let (status, window_tag, window) = conditional_get(&app, &around, None).await;
    assert_eq!(status, StatusCode::OK);
    for _ in 0..2 {
        assert_eq!(conditional_get(&app, &around, None).await, (StatusCode::OK, window_tag.clone(), window.clone()));
    }
    assert_eq!(conditional_get(&app, &around, Some(&window_tag)).await.0, StatusCode::NOT_MODIFIED);
    let windows =
        r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}/around/{user_id}",status="200"}"#;
    assert_eq!(app.metric(windows).await, 3.0);
    // And for a friends board (no tag).
    let friends = format!("/api/rankings/best/users?ids={},{}", players[4].id, players[1].id);
    let friends_answer = conditional_get(&app, &friends, None).await;
    assert_eq!(friends_answer.0, StatusCode::OK);
    assert_eq!(conditional_get(&app, &friends, None).await, friends_answer);
    let counted_friends =
        r#"hiscore_http_requests_total{method="GET",route="/api/rankings/{board}/users",status="200"}"#;
    assert_eq!(app.metric(counted_friends).await, 2.0);

    // A post moves the board: the same addresses answer the new page and
    // window at once.
    app.post_score(&players[4], 60).await;
    let moved = app.ranking("best", "limit=2").await;
    assert_eq!(ranks_and_ids(&moved), [(1, players[4].id), (2, players[0].id)]);
    let (status, changed, _) = conditional_get(&app, top, Some(&tag)).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(changed, tag);
    let (_, _, window) = conditional_get(&app, &around, Some(&window_tag)).await;
    let window: serde_json::Value = serde_json::from_str(&window).unwrap();
    assert_eq!(ranks_and_ids(&window)[0], (1, players[4].id), "{window}");
    let friends_now: serde_json::Value = serde_json::from_str(&conditional_get(&app, &friends, None).await.2).unwrap();
    assert_eq!(ranks_and_ids(&friends_now), [(1, players[4].id), (3, players[1].id)], "{friends_now}");

    // A custom board's page, asked twice by one address, then deleted.
    app.create_board(&board_definition("runs", serde_json::json!({}))).await;
    app.post_board_score(&players[0], "runs", 5).await;
    for _ in 0..2 {
        assert_eq!(app.get_json("/api/rankings/runs?limit=2").await.0, StatusCode::OK);
    }
    let (status, _) = app.admin(reqwest::Method::DELETE, "/api/admin/boards/runs", None).await;
    assert!(status.is_success(), "{status}");
    let (status, body) = app.get_json("/api/rankings/runs?limit=2").await;
    assert_error(status, &body, 404, "board_not_found");
    // Made again under the same id: the address names the new board.
    app.create_board(&board_definition("runs", serde_json::json!({}))).await;
    for _ in 0..2 {
        let (status, again) = app.get_json("/api/rankings/runs?limit=2").await;
        assert_eq!((status, &again["total_players"]), (StatusCode::OK, &serde_json::json!(0)), "{again}");
    }

    // A resetting board's address names the period in force: once it ends,
    // the same address answers the next one, though nothing was posted.
    app.create_board(&board_definition("tick", serde_json::json!({"reset": "* * * * * *", "archive_periods": 2})))
        .await;
    let tick = "/api/rankings/tick?limit=2";
    let index = loop {
        let posted = app.post_board_score(&players[0], "tick", 5).await;
        let index = posted["period"]["index"].as_i64().unwrap();
        let mut pages = Vec::new();
        for _ in 0..3 {
            pages.push(app.get_json(tick).await.1);
        }
        // (Again if the period ended among these reads.)
        if pages.iter().all(|page| page["period"]["index"] == index) {
            assert_eq!(ranks_and_ids(&pages[2]), [(1, players[0].id)]);
            break index;
        }
    };
    actix_web::rt::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let (status, next) = app.get_json(tick).await;
    assert_eq!(status, StatusCode::OK);
    assert!(next["period"]["index"].as_i64().unwrap() > index, "{next}");
    assert_eq!(next["total_players"], 0, "{next}");
    // The ended period by its index, by address like any page.
    let ended = format!("/api/rankings/tick?limit=2&period={index}");
    for _ in 0..2 {
        let (status, page) = app.get_json(&ended).await;
        assert_eq!((status, ranks_and_ids(&page)), (StatusCode::OK, vec![(1, players[0].id)]), "{page}");
    }

    // A partition's page by its address; one no post opened yet shows the
    // post that opens it at once.
    app.create_board(&board_definition("world", serde_json::json!({"partition_by": "country"}))).await;
    let fr = "/api/rankings/world?partition=FR&limit=2";
    for _ in 0..2 {
        assert_eq!(app.get_json(fr).await.1["total_players"], 0);
    }
    for (player, score) in [(&players[1], 8), (&players[2], 9)] {
        let body = serde_json::json!({"score": score, "metadata": {"country": "FR"}});
        let (status, posted) = app.post_board_score_raw(&player.token, "world", &body, None).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        for _ in 0..2 {
            let page = app.get_json(fr).await.1;
            assert_eq!(ranks_and_ids(&page)[0], (1, player.id), "{page}");
        }
    }
}

/// Cursors are signed: a forged one (another key, another walk start) is
/// 400 (it is checked before anything is read: `usecases::rankings::page`
/// parses it first); instances on one database share the secret it keeps;
/// a rotated secret keeps the previous one's cursors valid while
/// `CURSOR_SECRET_PREVIOUS` names it. (Counting SQL statements around the
/// request was tried: the background tasks' own statements made it flaky.)
#[actix_web::test]
async fn cursors_are_signed_and_survive_a_rotation() {
    use crate::helpers::{spawn_app_on, TestDatabase};
    let db = TestDatabase::new(&Backend::Sqlite).await;
    let first = spawn_app_on(&db, &[]).await;
    for (i, score) in [50, 40, 30].iter().enumerate() {
        let player = first.register(&format!("player{i}")).await;
        first.post_score(&player, *score).await;
    }
    let cursor = first.ranking("best", "limit=1").await["next_cursor"].as_str().unwrap().to_owned();
    // Another instance on the same database takes it (the stored secret).
    let second = spawn_app_on(&db, &[]).await;
    assert_eq!(second.ranking("best", &format!("limit=1&cursor={cursor}")).await["entries"][0]["rank"], 2);

    // One character changed: refused, and without a single SQL statement.
    let mut forged: Vec<char> = cursor.chars().collect();
    let i = forged.len() / 2;
    forged[i] = if forged[i] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    let (status, body) = second.get_json(&format!("/api/rankings/best?limit=1&cursor={forged}")).await;
    assert_error(status, &body, 400, "invalid_cursor");

    // A configured secret: the stored one's cursors are refused, unless it
    // is kept as the previous one during a rotation.
    let signed = spawn_app_on(&db, &["--cursor-secret", "rotation-1"]).await;
    let (status, body) = signed.get_json(&format!("/api/rankings/best?limit=1&cursor={cursor}")).await;
    assert_error(status, &body, 400, "invalid_cursor");
    let old = signed.ranking("best", "limit=1").await["next_cursor"].as_str().unwrap().to_owned();
    let rotating =
        spawn_app_on(&db, &["--cursor-secret", "rotation-2", "--cursor-secret-previous", "rotation-1"]).await;
    assert_eq!(rotating.ranking("best", &format!("limit=1&cursor={old}")).await["entries"][0]["rank"], 2);
    let rotated = spawn_app_on(&db, &["--cursor-secret", "rotation-2"]).await;
    let (status, body) = rotated.get_json(&format!("/api/rankings/best?limit=1&cursor={old}")).await;
    assert_error(status, &body, 400, "invalid_cursor");
}
