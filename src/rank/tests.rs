//! The engine's sources tested against each other and against a brute-force
//! sort: the same random boards (full of ties, players who never played,
//! empty boards, a single player) through every read give identical
//! answers from the in-process index, the database's indexes and, when
//! `TEST_REDIS_URL` is set, Redis.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::database::DatabaseSource;
use super::local::{LocalBoards, LocalSource};
use super::redis::RedisSource;
use super::source::{BoardSource, Slice, SliceStart};
use super::*;
use crate::domain::Timestamp;
use crate::redis::RedisClient;
use crate::store::Migrations;

#[test]
fn ties_share_a_rank_and_the_next_rank_skips() {
    assert_eq!(assign_ranks(1, 0, &[100, 90, 90, 80]), [1, 2, 2, 4]);
    assert_eq!(assign_ranks(1, 0, &[50, 40, 40, 40, 10]), [1, 2, 2, 2, 5]);
}

#[test]
fn a_page_that_starts_inside_a_tie_keeps_the_tie_rank() {
    // Board 50, 40, 40, 40, 10 split in pages of 3: the second page
    // starts at position 3 with the last 40.
    assert_eq!(assign_ranks(2, 3, &[40, 10]), [2, 5]);
}

#[test]
fn a_later_page_continues_instead_of_restarting_at_one() {
    assert_eq!(assign_ranks(11, 10, &[5, 4, 3]), [11, 12, 13]);
}

async fn memory_store() -> Store {
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    Store::connect("sqlite::memory:", 1, counter, Migrations::Apply).await.unwrap()
}

/// Players with at most a few distinct scores and times: ties everywhere.
/// Some never played; sometimes nobody did, sometimes one player did.
fn random_standings(rng: &mut ChaCha8Rng) -> Vec<Standing> {
    let players = match rng.gen_range(0..10) {
        0 => 0,
        1 => 1,
        _ => rng.gen_range(2..60),
    };
    (1..=players)
        .map(|id| {
            let plays = if rng.gen_bool(0.2) { 0 } else { rng.gen_range(1..4) };
            let best = if plays == 0 { 0 } else { rng.gen_range(0..6) * 10 };
            let total = if plays == 0 { 0 } else { best + rng.gen_range(0..3) * 10 };
            Standing { id, best, best_at: rng.gen_range(1..4), total, plays }
        })
        .collect()
}

/// The users table holding exactly these standings.
async fn load(store: &Store, standings: &[Standing]) {
    for s in standings {
        let name = format!("p{}", s.id);
        sqlx::query(
            "INSERT INTO users (id, login_name, login_key, display_name, password_hash, best_score, best_at, \
             total_score, play_count, created_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?, ?, 0)",
        )
        .bind(s.id)
        .bind(&name)
        .bind(&name)
        .bind(&name)
        .bind(s.best)
        .bind((s.plays > 0).then_some(s.best_at))
        .bind(s.total)
        .bind(s.plays)
        .execute(store.pool())
        .await
        .unwrap();
    }
    sqlx::query("UPDATE board_stats SET players = (SELECT COUNT(*) FROM users WHERE best_at IS NOT NULL)")
        .execute(store.pool())
        .await
        .unwrap();
}

/// The contract's board, by sorting everything: (rank, key) in board order.
fn brute_force(standings: &[Standing], board: Board) -> Vec<(i64, BoardKey)> {
    let mut keys: Vec<BoardKey> = standings
        .iter()
        .filter(|s| s.plays > 0)
        .map(|s| match board {
            Board::Best => BoardKey { score: s.best, at: s.best_at, id: s.id },
            Board::Total => BoardKey { score: s.total, at: 0, id: s.id },
        })
        .collect();
    keys.sort_by(|a, b| b.score.cmp(&a.score).then(a.at.cmp(&b.at)).then(a.id.cmp(&b.id)));
    keys.iter().map(|k| (1 + keys.iter().filter(|o| o.score > k.score).count() as i64, *k)).collect()
}

/// The Redis source on a prefix of its own, when `TEST_REDIS_URL` is set.
async fn redis_source(standings: &[Standing]) -> Option<(RedisSource, Arc<RedisClient>)> {
    let Some(url) = std::env::var("TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("note: TEST_REDIS_URL is not set: the Redis board source is not compared (SKIPPED)");
        return None;
    };
    let prefix = format!("hiscore-unit-{:016x}", rand::random::<u64>());
    let client = Arc::new(RedisClient::new(&url, &prefix, 2).unwrap());
    let source = RedisSource::new(Arc::clone(&client));
    source.rebuild(standings, 0).await.expect("TEST_REDIS_URL is set but Redis is not reachable");
    Some((source, client))
}

/// Every read of every board through `source`, as comparable answers.
async fn every_answer<S: BoardSource>(source: &S, standings: &[Standing]) -> Vec<String>
where
    S::Error: std::fmt::Debug,
{
    let mut answers = Vec::new();
    let mut record = |what: String, slice: Option<Slice>| answers.push(format!("{what} => {slice:?}"));
    for board in Board::ALL {
        let expected = brute_force(standings, board);
        for count in [0, 1, 3, 7] {
            for position in 0..=expected.len() + 1 {
                let slice = source.slice(board, SliceStart::Offset(position), count).await.unwrap();
                record(format!("{board} offset {position} count {count}"), slice);
            }
            // After every key on the board, and after keys that are not
            // (a player who moved on): just below and above each one.
            for (_, key) in &expected {
                for after in [*key, BoardKey { id: key.id + 1000, ..*key }, BoardKey { score: key.score + 5, ..*key }] {
                    let slice = source.slice(board, SliceStart::After(after), count).await.unwrap();
                    record(format!("{board} after {after:?} count {count}"), slice);
                }
            }
        }
        for s in standings.iter().chain([&Standing { id: 9_999, best: 0, best_at: 0, total: 0, plays: 0 }]) {
            for radius in [0, 2] {
                let start = SliceStart::Around { id: s.id, radius };
                let slice = source.slice(board, start, 2 * radius + 2).await.unwrap();
                record(format!("{board} around {} radius {radius}", s.id), slice);
            }
        }
    }
    let scores: Vec<(Board, i64)> =
        Board::ALL.iter().flat_map(|board| (0..=75).map(move |score| (*board, score))).collect();
    answers.push(format!("ranks {:?}", source.ranks_of_scores(&scores).await.unwrap()));
    answers
}

#[tokio::test]
async fn every_source_answers_exactly_like_a_brute_force_sort() {
    for seed in 0..16 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let standings = random_standings(&mut rng);
        let local = LocalSource::default();
        *local.boards.write().await = LocalBoards::from_standings(&standings);

        // The local index against the brute force.
        for board in Board::ALL {
            let expected = brute_force(&standings, board);
            let all = local.slice(board, SliceStart::Offset(0), usize::MAX / 2).await.unwrap().unwrap();
            assert_eq!(all.keys, expected.iter().map(|(_, k)| *k).collect::<Vec<_>>(), "seed {seed} {board}");
            assert_eq!(all.total, expected.len());
            let scores: Vec<(Board, i64)> = expected.iter().map(|(_, k)| (board, k.score)).collect();
            let ranks = local.ranks_of_scores(&scores).await.unwrap();
            assert_eq!(ranks, expected.iter().map(|(rank, _)| *rank).collect::<Vec<_>>(), "seed {seed} {board}");
        }

        // Every other source against the local index.
        let expected = every_answer(&local, &standings).await;
        let store = memory_store().await;
        load(&store, &standings).await;
        let database = every_answer(&DatabaseSource::new(store), &standings).await;
        for (a, b) in expected.iter().zip(&database) {
            assert_eq!(a, b, "seed {seed}: database differs");
        }
        assert_eq!(expected.len(), database.len());
        if let Some((redis, client)) = redis_source(&standings).await {
            let shared = every_answer(&redis, &standings).await;
            client.delete_matching(&client.keys().everything()).await.unwrap();
            for (a, b) in expected.iter().zip(&shared) {
                assert_eq!(a, b, "seed {seed}: Redis differs");
            }
            assert_eq!(expected.len(), shared.len());
        }
    }
}

#[tokio::test]
async fn later_posts_move_a_player_on_every_source_alike() {
    let first = [
        Standing { id: 1, best: 50, best_at: 10, total: 50, plays: 1 },
        Standing { id: 2, best: 40, best_at: 11, total: 40, plays: 1 },
    ];
    // Player 2 overtakes; a stale update of player 1 arrives late.
    let updates = [
        Standing { id: 2, best: 60, best_at: 12, total: 100, plays: 2 },
        Standing { id: 1, best: 50, best_at: 10, total: 50, plays: 1 },
    ];
    let local = LocalSource::default();
    *local.boards.write().await = LocalBoards::from_standings(&first);
    for update in &updates {
        local.boards.write().await.apply(update);
    }
    let top = local.slice(Board::Best, SliceStart::Offset(0), 5).await.unwrap().unwrap();
    assert_eq!(top.keys.iter().map(|k| k.id).collect::<Vec<_>>(), [2, 1]);
    if let Some((redis, client)) = redis_source(&first).await {
        for update in &updates {
            redis.record(update).await.unwrap();
        }
        let shared = redis.slice(Board::Best, SliceStart::Offset(0), 5).await.unwrap().unwrap();
        client.delete_matching(&client.keys().everything()).await.unwrap();
        assert_eq!(shared, top);
    }
}

/// The engine turns slices into pages: ranks, cursors, windows.
#[tokio::test]
async fn pages_cursors_and_windows() {
    let engine = RankEngine::new(memory_store().await, None, Background::default());
    let standings: Vec<Standing> = [(1, 50), (2, 40), (3, 40), (4, 40), (5, 10)]
        .iter()
        .enumerate()
        .map(|(i, (id, score))| Standing { id: *id, best: *score, best_at: i as i64, total: *score, plays: 1 })
        .collect();
    *engine.local.boards.write().await = LocalBoards::from_standings(&standings);

    let first = engine.page_at_offset(Board::Best, 0, 3).await.unwrap();
    let ranks: Vec<(i64, i64)> = first.entries.iter().map(|e| (e.rank, e.key.id)).collect();
    assert_eq!(ranks, [(1, 1), (2, 2), (2, 3)]);
    assert_eq!((first.total_players, first.next_offset), (5, Some(3)));

    let second = engine.page_after(first.next_cursor.unwrap(), 3).await.unwrap();
    let ranks: Vec<(i64, i64)> = second.entries.iter().map(|e| (e.rank, e.key.id)).collect();
    assert_eq!(ranks, [(2, 4), (5, 5)]);
    assert!(second.next_cursor.is_none() && second.next_offset.is_none());

    let around = engine.around(Board::Total, 3, 1).await.unwrap().unwrap();
    assert_eq!(around.user_ids(), [2, 3, 4]);
    assert_eq!(around.next_offset, Some(4));
    assert!(engine.around(Board::Best, 99, 1).await.unwrap().is_none());
    assert!(engine.page_at_offset(Board::Best, 10, 3).await.unwrap().entries.is_empty());

    let row = |id, best, total, plays| UserRow {
        id,
        login_name: String::new(),
        display_name: String::new(),
        best_score: best,
        best_at: None,
        best_score_id: None,
        total_score: total,
        play_count: plays,
        created_at: Timestamp::from_millis(0),
        generation: 0,
    };
    let (player, idle) = (row(5, 10, 10, 1), row(6, 0, 0, 0));
    let ranks = engine.ranks_of(&[&player, &idle]).await.unwrap();
    assert_eq!(ranks, [UserRanks { best: Some(5), total: Some(5) }, UserRanks::default()]);
}
