//! Final standings of ended periods: written once the period ends (each
//! entry's position and rank on its row), read by pages, around-me and
//! friends boards of that period, and written again after moderation
//! changes the period (a ban, an unban, a deleted post, an erasure).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::backend_tests;
use crate::helpers::{ranks_and_ids, spawn_admin_app, Backend, Player, TestApp, PASSWORD};

backend_tests!(an_ended_period_is_settled_and_moderation_settles_it_again);

/// Players `scores` posted to a board that resets every second, all in
/// one period (a run that straddles a reset tries again on a new board):
/// the board's id, the period, and the players in `scores`' order.
async fn one_period_of(app: &TestApp, scores: &[i64]) -> (String, i64, Vec<Player>) {
    for attempt in 0..10 {
        let board = format!("tick{attempt}");
        app.create_board(&json!({"id": board, "name": "Tick", "reset": "* * * * * *", "archive_periods": 100})).await;
        let mut players = Vec::new();
        for i in 0..scores.len() {
            players.push(app.register(&format!("p{attempt}x{i}")).await);
        }
        let mut periods = Vec::new();
        for (player, score) in players.iter().zip(scores) {
            let posted = app.post_board_score(player, &board, *score).await;
            periods.push(posted["period"]["index"].as_i64().unwrap());
        }
        if periods.windows(2).all(|w| w[0] == w[1]) {
            return (board, periods[0], players);
        }
    }
    panic!("no run of posts stayed inside one period");
}

/// The period's row: (players, changes, standings_changes, standings_claimed_at).
async fn period_row(pool: &sqlx::AnyPool, board: &str, period: i64) -> (i64, i64, Option<i64>, Option<i64>) {
    sqlx::query_as(
        "SELECT p.players, p.changes, p.standings_changes, p.standings_claimed_at FROM board_periods p \
         JOIN boards b ON b.number = p.board WHERE b.id = ? AND p.period = ?",
    )
    .bind(board)
    .bind(period)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Waits until the period's standings hold; returns each listed entry's
/// (user id, final position, final rank) in position order.
async fn settled(pool: &sqlx::AnyPool, board: &str, period: i64) -> Vec<(i64, i64, i64)> {
    // The job looks every 2 s, at periods ended 2 s ago; a loaded CI
    // machine gets the rest of the 30 s.
    for _ in 0..300 {
        let (_, changes, standings, claim) = period_row(pool, board, period).await;
        if standings == Some(changes) {
            assert_eq!(claim, None, "a settled period keeps no claim");
            return sqlx::query_as(
                "SELECT e.user_id, e.final_position, e.final_rank FROM board_entries e JOIN boards b \
                 ON b.number = e.board WHERE b.id = ? AND e.period = ? AND e.final_position IS NOT NULL \
                 ORDER BY e.final_position",
            )
            .bind(board)
            .bind(period)
            .fetch_all(pool)
            .await
            .unwrap();
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the period's standings were not written");
}

/// Every read of the ended period agrees with `expected` (rank, id) in
/// board order: pages of two by offset and by cursor, around each player,
/// and a friends board of everyone.
async fn reads_agree(app: &TestApp, board: &str, period: i64, expected: &[(i64, i64)]) {
    let whole = app.ranking(board, &format!("period={period}&limit=100")).await;
    assert_eq!(ranks_and_ids(&whole), expected, "{whole}");
    assert_eq!(whole["total_players"], expected.len());
    let mut walked = Vec::new();
    let mut query = format!("period={period}&limit=2");
    loop {
        let page = app.ranking(board, &query).await;
        walked.extend(ranks_and_ids(&page));
        let Some(cursor) = page["next_cursor"].as_str() else { break };
        query = format!("period={period}&limit=2&cursor={cursor}");
    }
    assert_eq!(walked, expected, "a cursor walk");
    for offset in 0..expected.len() {
        let page = app.ranking(board, &format!("period={period}&limit=2&offset={offset}")).await;
        assert_eq!(ranks_and_ids(&page), &expected[offset..(offset + 2).min(expected.len())], "offset {offset}");
    }
    for (i, (_, id)) in expected.iter().enumerate() {
        let (status, around) =
            app.get_json(&format!("/api/rankings/{board}/around/{id}?period={period}&radius=1")).await;
        assert_eq!(status, 200, "{around}");
        assert_eq!(ranks_and_ids(&around), &expected[i.saturating_sub(1)..(i + 2).min(expected.len())], "around {id}");
    }
    let ids: Vec<String> = expected.iter().map(|(_, id)| id.to_string()).collect();
    let (status, friends) =
        app.get_json(&format!("/api/rankings/{board}/users?ids={}&period={period}", ids.join(","))).await;
    assert_eq!((status.as_u16(), ranks_and_ids(&friends)), (200, expected.to_vec()), "{friends}");
}

async fn an_ended_period_is_settled_and_moderation_settles_it_again(backend: Backend) {
    let (app, db) = spawn_admin_app(&backend).await;
    let pool = db.connect().await;
    // Ranks 1, 2, 2, 4, 5 (a tie), and a player whose first post is beaten
    // by a second (a deleted post moves them back).
    let (board, period, players) = one_period_of(&app, &[30, 20, 20, 10, 5]).await;
    let ids: Vec<i64> = players.iter().map(|p| p.id).collect();

    // Once the period ends: each entry's place is on its row, once.
    let placed = settled(&pool, &board, period).await;
    let full = [(1, ids[0]), (2, ids[1]), (2, ids[2]), (4, ids[3]), (5, ids[4])];
    let expected_rows: Vec<(i64, i64, i64)> =
        full.iter().enumerate().map(|(position, (rank, id))| (*id, position as i64, *rank)).collect();
    assert_eq!(placed, expected_rows);
    reads_agree(&app, &board, period, &full).await;

    // A ban clears them at once (reads count again), and they are written
    // again without the banned player.
    let (status, body) =
        app.admin(Method::POST, &format!("/api/admin/users/{}/ban", ids[1]), Some(&json!({"reason": "test"}))).await;
    assert_eq!(status, 200, "{body}");
    let without = [(1, ids[0]), (2, ids[2]), (3, ids[3]), (4, ids[4])];
    reads_agree(&app, &board, period, &without).await;
    let placed = settled(&pool, &board, period).await;
    assert_eq!(placed.iter().map(|(id, _, rank)| (*rank, *id)).collect::<Vec<_>>(), without);
    reads_agree(&app, &board, period, &without).await;

    // An unban puts them back as they were.
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/users/{}/ban", ids[1]), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(settled(&pool, &board, period).await, expected_rows);
    reads_agree(&app, &board, period, &full).await;

    // A deleted post that was an entry's only one removes the entry.
    let (_, history) = app.get_json(&format!("/api/users/{}/scores?board={board}", ids[3])).await;
    let score_id = history["scores"][0]["id"].as_i64().unwrap();
    let (status, body) = app.admin(Method::DELETE, &format!("/api/admin/boards/{board}/scores/{score_id}"), None).await;
    assert_eq!(status.as_u16(), 204, "{body}");
    let fewer = [(1, ids[0]), (2, ids[1]), (2, ids[2]), (4, ids[4])];
    assert_eq!(
        settled(&pool, &board, period).await.iter().map(|(id, _, rank)| (*rank, *id)).collect::<Vec<_>>(),
        fewer
    );
    reads_agree(&app, &board, period, &fewer).await;

    // An erasure likewise.
    let response =
        app.client.delete(app.url("/api/me")).bearer_auth(&players[0].token).json(&json!({"password": PASSWORD}));
    assert_eq!(response.send().await.unwrap().status().as_u16(), 204);
    let erased = [(1, ids[1]), (1, ids[2]), (3, ids[4])];
    assert_eq!(
        settled(&pool, &board, period).await.iter().map(|(id, _, rank)| (*rank, *id)).collect::<Vec<_>>(),
        erased
    );
    reads_agree(&app, &board, period, &erased).await;
    let (players_left, ..) = period_row(&pool, &board, period).await;
    assert_eq!(players_left, 3);
}
