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
use super::redis_source::{builtin_members, Numbering, RebuildEntry, Record, RedisSource};
use super::source::{BoardSource, SliceRead, SliceStart};
use super::warm_up::builtin_rebuild_entry;
use super::*;
use crate::domain::{Timestamp, Walk};
use crate::redis::{RedisClient, RedisError};
use crate::store::{Migrations, Standing};

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
    Store::connect("sqlite::memory:", 1, counter, Migrations::Apply, Default::default()).await.unwrap()
}

/// Players with at most a few distinct scores and times: ties everywhere.
/// Some never played, some are banned; sometimes nobody played, sometimes
/// one player did.
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
            let banned = plays > 0 && rng.gen_bool(0.1);
            Standing { id, best, best_at: rng.gen_range(1..4), total, version: plays, listed: plays > 0 && !banned }
        })
        .collect()
}

/// Entries of a custom board (board number 7, period 3): few distinct
/// scores, negative ones too, subscores where the board has them (few
/// distinct ones: ties), and times.
fn random_entries(rng: &mut ChaCha8Rng, board: BoardPeriod) -> Vec<EntryChange> {
    let players = match rng.gen_range(0..10) {
        0 => 0,
        1 => 1,
        _ => rng.gen_range(2..50),
    };
    let mut entries = Vec::new();
    for id in 1..=players {
        if rng.gen_bool(0.2) {
            continue;
        }
        let mut key = BoardKey::of(rng.gen_range(-3..4) * 10, rng.gen_range(1..4), id);
        for subscore in &mut key.subscores[..board.ranking.subscores().len()] {
            *subscore = rng.gen_range(0..3);
        }
        entries.push(EntryChange {
            board,
            key,
            version: rng.gen_range(1..5),
            // Some entries are of banned players: hidden.
            listed: rng.gen_bool(0.9),
            metadata: rng.gen_bool(0.5).then(|| Arc::from(format!(r#"{{"run":{id}}}"#))),
            changed: 0,
        });
    }
    entries
}

/// The users table holding exactly these standings (a standing with a
/// version that is not listed is a banned player's).
async fn load(store: &Store, standings: &[Standing]) {
    for s in standings {
        let name = format!("p{}", s.id);
        sqlx::query(
            "INSERT INTO users (id, login_name, login_key, display_name, password_hash, best_score, best_at, \
             total_score, play_count, created_at, version, banned_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?, ?, 0, ?, ?)",
        )
        .bind(s.id)
        .bind(&name)
        .bind(&name)
        .bind(&name)
        .bind(s.best)
        .bind((s.version > 0).then_some(s.best_at))
        .bind(s.total)
        .bind(s.version)
        .bind(s.version)
        .bind((s.version > 0 && !s.listed).then_some(1_i64))
        .execute(store.pool())
        .await
        .unwrap();
    }
    sqlx::query(
        "UPDATE board_stats SET players = (SELECT COUNT(*) FROM users WHERE best_at IS NOT NULL AND banned_at IS NULL)",
    )
    .execute(store.pool())
    .await
    .unwrap();
}

/// The board_entries and board_periods rows holding exactly these entries.
async fn load_entries(store: &Store, board: BoardPeriod, entries: &[EntryChange]) {
    let Board::Custom(number) = board.board else { return };
    for entry in entries {
        load_entry_row(store, board, entry).await;
    }
    sqlx::query("INSERT INTO board_periods (board, period, starts_at, players, changes) VALUES (?, ?, 0, ?, ?)")
        .bind(number)
        .bind(board.period)
        .bind(entries.iter().filter(|entry| entry.listed).count() as i64)
        .bind(entries.iter().map(|entry| entry.changed).max().unwrap_or(0))
        .execute(store.pool())
        .await
        .unwrap();
}

/// The contract's built-in board, by sorting everything: (rank, key) in board order.
fn brute_force(standings: &[Standing], board: Board) -> Vec<(i64, BoardKey)> {
    let mut keys: Vec<BoardKey> = standings
        .iter()
        .filter(|s| s.listed)
        .map(|s| match board {
            Board::Total => BoardKey::of(s.total, 0, s.id),
            _ => BoardKey::of(s.best, s.best_at, s.id),
        })
        .collect();
    keys.sort_by(|a, b| b.score.cmp(&a.score).then(a.at.cmp(&b.at)).then(a.id.cmp(&b.id)));
    keys.iter().map(|k| (1 + keys.iter().filter(|o| o.score > k.score).count() as i64, *k)).collect()
}

/// A Redis client on a prefix of its own, when `TEST_REDIS_URL` is set.
fn redis_client() -> Option<Arc<RedisClient>> {
    let Some(url) = std::env::var("TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("note: TEST_REDIS_URL is not set: the Redis board source is not compared (SKIPPED)");
        return None;
    };
    let prefix = format!("hiscore-unit-{:016x}", rand::random::<u64>());
    Some(Arc::new(RedisClient::new(&url, &prefix, 2).unwrap()))
}

/// Builds the built-in boards and one custom board period in Redis.
async fn redis_source(
    client: &Arc<RedisClient>,
    standings: &[Standing],
    board: BoardPeriod,
    entries: &[EntryChange],
) -> RedisSource {
    let source = RedisSource::new(Arc::clone(client));
    let builtin: Vec<RebuildEntry> = standings
        .iter()
        .filter(|s| s.listed)
        .map(|s| RebuildEntry {
            id: s.id,
            version: s.version,
            changed: 0,
            members: builtin_members(s).into_iter().map(|(member, _)| (member, None)).collect(),
        })
        .collect();
    source
        .rebuild(BoardPeriod::builtin(Board::Best), &builtin, Numbering { track: false, changes: 0 })
        .await
        .expect("TEST_REDIS_URL is set but Redis is not reachable");
    let custom: Vec<RebuildEntry> = entries
        .iter()
        .filter(|e| e.listed)
        .map(|e| RebuildEntry {
            id: e.key.id,
            version: e.version,
            changed: e.changed,
            members: vec![(key::member_of(board.ranking, e.key), e.metadata.as_deref().map(str::to_owned))],
        })
        .collect();
    let changes = entries.iter().map(|e| e.changed).max().unwrap_or(0);
    source.rebuild(board, &custom, Numbering { track: true, changes }).await.unwrap();
    source
}

/// A slice as the sources must agree on it: their change counts differ by
/// design (Redis counts its change log, the others nothing).
fn comparable(slice: Option<Slice>) -> String {
    format!("{:?}", slice.map(|slice| Slice { stamp: None, walk: None, ..slice }))
}

/// Every read of every board through `source`, as comparable answers.
async fn every_answer<S: BoardSource>(source: &S, boards: &[(BoardPeriod, Vec<BoardKey>)]) -> Vec<String>
where
    S::Error: std::fmt::Debug,
{
    let mut answers = Vec::new();
    let mut record = |what: String, answer: String| answers.push(format!("{what} => {answer}"));
    for (board, keys) in boards {
        let board = *board;
        for count in [0, 1, 3, 7] {
            for position in 0..=keys.len() + 1 {
                let slice = source.slice(board, SliceStart::Offset(position), count).await.unwrap();
                record(format!("{board:?} offset {position} count {count}"), comparable(slice));
            }
            // After every key on the board, and after keys that are not
            // (a player who moved on): just below and above each one.
            for key in keys {
                for after in [*key, BoardKey { id: key.id + 1000, ..*key }, BoardKey { score: key.score + 5, ..*key }] {
                    let slice = source.slice(board, SliceStart::After { key: after, walk: None }, count).await.unwrap();
                    record(format!("{board:?} after {after:?} count {count}"), comparable(slice));
                }
            }
        }
        let ids: Vec<i64> = (1..=70).collect();
        for id in &ids {
            for radius in [0, 2] {
                let slice = source.slice(board, SliceStart::Around { id: *id, radius }, 2 * radius + 2).await.unwrap();
                record(format!("{board:?} around {id} radius {radius}"), comparable(slice));
            }
        }
        for friends in [&ids[..], &ids[3..9], &[]] {
            let ranked = source.ranked(board, friends).await.unwrap();
            record(format!("{board:?} ranked {friends:?}"), format!("{ranked:?}"));
        }
        let scores: Vec<(BoardPeriod, BoardKey)> = (-35..=75).map(|score| (board, BoardKey::of(score, 0, 0))).collect();
        let scores: Vec<(BoardPeriod, BoardKey)> = if board.board.is_builtin() {
            // Built-in scores are never negative (the database counts rather than filters).
            scores.into_iter().filter(|(_, key)| key.score >= 0).collect()
        } else {
            scores
        };
        record(format!("{board:?} ranks"), format!("{:?}", source.ranks_of_keys(&scores).await.unwrap()));
        // Asked only below the middle, the database counts from the bottom.
        let lower = &keys[(keys.len() / 2 + 1).min(keys.len())..];
        let scores: Vec<(BoardPeriod, BoardKey)> = lower.iter().map(|key| (board, *key)).collect();
        record(format!("{board:?} lower ranks"), format!("{:?}", source.ranks_of_keys(&scores).await.unwrap()));
        let lower: Vec<i64> = lower.iter().map(|key| key.id).collect();
        let ranked = source.ranked(board, &lower).await.unwrap();
        record(format!("{board:?} ranked lower {lower:?}"), format!("{ranked:?}"));
    }
    answers
}

#[tokio::test]
async fn every_source_answers_exactly_like_a_brute_force_sort() {
    for seed in 0..16 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let standings = random_standings(&mut rng);
        use crate::domain::{Order, Ranking};
        let order = if seed % 2 == 0 { Order::Asc } else { Order::Desc };
        // A quarter of the boards rank by one subscore, a quarter by two.
        let subscores = [&[][..], &[], &[Order::Asc], &[Order::Desc, Order::Asc]][(seed as usize / 2) % 4];
        let ranking = Ranking::with_subscores(order, subscores);
        let custom = BoardPeriod { board: Board::Custom(7), ranking, period: 3 };
        let entries = random_entries(&mut rng, custom);
        let local = LocalSource::default();
        {
            let mut boards = local.boards.write().await;
            *boards = LocalBoards::from_standings(&standings);
            boards.load_period(custom, 0, &entries);
        }

        // The local index against the brute force.
        for board in Board::BUILTIN {
            let expected = brute_force(&standings, board);
            let all =
                local.slice(BoardPeriod::builtin(board), SliceStart::Offset(0), usize::MAX / 2).await.unwrap().unwrap();
            let keys: Vec<BoardKey> = all.entries.iter().map(|e| e.key).collect();
            assert_eq!(keys, expected.iter().map(|(_, k)| *k).collect::<Vec<_>>(), "seed {seed} {board}");
            assert_eq!(all.total, expected.len());
            let scores: Vec<(BoardPeriod, BoardKey)> =
                expected.iter().map(|(_, k)| (BoardPeriod::builtin(board), *k)).collect();
            let ranks = local.ranks_of_keys(&scores).await.unwrap();
            let players = expected.len() as i64;
            let expected: Vec<ScoreRank> =
                expected.iter().map(|(rank, _)| ScoreRank { rank: *rank, players }).collect();
            assert_eq!(ranks, expected, "seed {seed} {board}");
        }
        let mut sorted: Vec<BoardKey> = entries.iter().filter(|e| e.listed).map(|e| e.key).collect();
        let in_order = |order: Order, a: i64, b: i64| if order == Order::Asc { a.cmp(&b) } else { b.cmp(&a) };
        sorted.sort_by(|a, b| {
            let by_subscores = subscores.iter().enumerate().fold(std::cmp::Ordering::Equal, |so_far, (i, o)| {
                so_far.then(in_order(*o, a.subscores[i], b.subscores[i]))
            });
            in_order(order, a.score, b.score).then(by_subscores).then(a.at.cmp(&b.at)).then(a.id.cmp(&b.id))
        });
        let all = local.slice(custom, SliceStart::Offset(0), usize::MAX / 2).await.unwrap().unwrap();
        assert_eq!(all.entries.iter().map(|e| e.key).collect::<Vec<_>>(), sorted, "seed {seed} custom");

        // Every other source against the local index.
        let boards: Vec<(BoardPeriod, Vec<BoardKey>)> = Board::BUILTIN
            .iter()
            .map(|board| {
                (BoardPeriod::builtin(*board), brute_force(&standings, *board).into_iter().map(|(_, k)| k).collect())
            })
            .chain([(custom, sorted)])
            .collect();
        let expected = every_answer(&local, &boards).await;
        let store = memory_store().await;
        load(&store, &standings).await;
        load_entries(&store, custom, &entries).await;
        let database = every_answer(&DatabaseSource::new(store.clone()), &boards).await;
        for (a, b) in expected.iter().zip(&database) {
            assert_eq!(a, b, "seed {seed}: database differs");
        }
        assert_eq!(expected.len(), database.len());

        // The same reads once the period's final standings are written,
        // in chunks that split runs of ties; hidden entries keep no place
        // (some had one, from before a ban).
        sqlx::query("UPDATE board_entries SET final_position = 0, final_rank = 1 WHERE hidden = 1")
            .execute(store.pool())
            .await
            .unwrap();
        let chunk = [1, 2, 3, 1000][seed as usize % 4];
        let now = Timestamp::now();
        assert!(crate::usecases::standings::settle_in_chunks(&store, 7, 3, now, chunk).await.unwrap());
        let settled = every_answer(&DatabaseSource::new(store.clone()), &boards).await;
        for (a, b) in expected.iter().zip(&settled) {
            assert_eq!(a, b, "seed {seed}: the final standings (chunks of {chunk}) differ");
        }
        assert_eq!(expected.len(), settled.len());
        if let Some(client) = redis_client() {
            let redis = redis_source(&client, &standings, custom, &entries).await;
            let shared = every_answer(&redis, &boards).await;
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
    let best = BoardPeriod::builtin(Board::Best);
    let standing = |id, best, best_at, version| Standing { id, best, best_at, total: best, version, listed: true };
    let first = [standing(1, 50, 10, 1), standing(2, 40, 11, 1), standing(3, 30, 12, 1)];
    // Player 2 overtakes; a stale update of player 1 arrives late; player 3
    // is banned (taken off), and a stale post of theirs arrives after it.
    let updates = [
        standing(2, 60, 12, 2),
        standing(1, 50, 10, 1),
        Standing { listed: false, ..standing(3, 30, 12, 2) },
        standing(3, 90, 13, 1),
    ];
    let local = LocalSource::default();
    *local.boards.write().await = LocalBoards::from_standings(&first);
    for update in &updates {
        local.boards.write().await.apply(update);
    }
    let top = local.slice(best, SliceStart::Offset(0), 5).await.unwrap().unwrap();
    assert_eq!(top.entries.iter().map(|e| e.key.id).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(top.total, 2);
    let around_banned = local.slice(best, SliceStart::Around { id: 3, radius: 1 }, 3).await.unwrap();
    assert_eq!(around_banned, None);
    assert!(local.ranked(best, &[3]).await.unwrap().entries.is_empty());

    // A custom board: a later period replaces the one held; an earlier one is ignored.
    let custom = BoardPeriod {
        board: Board::Custom(3),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Asc),
        period: 1,
    };
    let entry = |period: i64, id: i64, score: i64| EntryChange {
        board: BoardPeriod { period, ..custom },
        key: BoardKey::of(score, 5, id),
        version: 1,
        listed: true,
        metadata: None,
        changed: 0,
    };
    {
        let mut boards = local.boards.write().await;
        boards.load_period(custom, 0, &[entry(1, 1, 30), entry(1, 2, 20)]);
        assert!(boards.apply_entry(&entry(2, 3, 99)));
        assert!(!boards.apply_entry(&entry(1, 4, 10)));
    }
    let next = BoardPeriod { period: 2, ..custom };
    let held = local.slice(next, SliceStart::Offset(0), 5).await.unwrap().unwrap();
    assert_eq!(held.entries.iter().map(|e| e.key.id).collect::<Vec<_>>(), [3]);
    let ended = local.slice(custom, SliceStart::Offset(0), 5).await.unwrap().unwrap();
    assert!(ended.entries.is_empty(), "an ended period is not held (the database answers for it)");

    if let Some(client) = redis_client() {
        let redis = redis_source(&client, &first, custom, &[]).await;
        for update in &updates {
            let members = builtin_members(update);
            let record = Record {
                id: update.id,
                version: update.version,
                period: 0,
                expire_at: None,
                track: false,
                changed: 0,
                members: &members,
            };
            redis.record(best, &record).await.unwrap();
        }
        let shared = redis.slice(best, SliceStart::Offset(0), 5).await.unwrap().unwrap();
        let shared_around = redis.slice(best, SliceStart::Around { id: 3, radius: 1 }, 3).await.unwrap();
        let shared_ranked = redis.ranked(best, &[3]).await.unwrap();
        client.delete_matching(&client.keys().everything()).await.unwrap();
        // The same board, whatever each source counts as its version.
        assert_eq!(Slice { stamp: None, walk: None, ..shared }, Slice { walk: None, ..top });
        assert_eq!(shared_around, None);
        assert!(shared_ranked.entries.is_empty());
    }
}

/// A stamp names one state of a board in Redis: a read holding it is
/// answered "unchanged" until a change, a replay or a rebuild (even one
/// that rebuilds the same entries after a flush reset the sequence).
#[tokio::test]
#[cfg_attr(not(hiscore_test_redis), ignore = "set TEST_REDIS_URL to run the Redis variants")]
async fn a_redis_stamp_holds_until_the_board_changes_or_is_rebuilt() {
    let client = redis_client().expect("TEST_REDIS_URL is set");
    let best = BoardPeriod::builtin(Board::Best);
    let custom = BoardPeriod {
        board: Board::Custom(4),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
        period: 0,
    };
    let standing = |id, best, best_at, version| Standing { id, best, best_at, total: best, version, listed: true };
    let standings = [standing(1, 50, 1, 1), standing(2, 40, 2, 1)];
    let redis = redis_source(&client, &standings, custom, &[]).await;
    let stamp_of = |read: SliceRead| match read {
        SliceRead::Read(Some(slice)) => slice.stamp.expect("Redis stamps its slices"),
        other => panic!("expected a slice, got unchanged: {}", matches!(other, SliceRead::Unchanged)),
    };
    let top = SliceStart::Offset(0);
    let first = stamp_of(redis.slice_unless(best, top, 5, "").await.unwrap());
    assert!(matches!(redis.slice_unless(best, top, 5, &first).await.unwrap(), SliceRead::Unchanged));

    let members = builtin_members(&standing(2, 60, 3, 2));
    redis
        .record(
            best,
            &Record { id: 2, version: 2, period: 0, expire_at: None, track: false, changed: 0, members: &members },
        )
        .await
        .unwrap();
    let after_post = stamp_of(redis.slice_unless(best, top, 5, &first).await.unwrap());
    assert_ne!(after_post, first);

    // A flush resets the sequence; the rebuild from the same rows must not
    // bring an old stamp back.
    client.delete_matching(&client.keys().everything()).await.unwrap();
    let redis = redis_source(&client, &standings, custom, &[]).await;
    let rebuilt = stamp_of(redis.slice_unless(best, top, 5, "").await.unwrap());
    assert_ne!(rebuilt, first);
    let rebuilt_again = {
        let redis = redis_source(&client, &standings, custom, &[]).await;
        stamp_of(redis.slice_unless(best, top, 5, &rebuilt).await.unwrap())
    };
    assert_ne!(rebuilt_again, rebuilt, "every rebuild is a new epoch");
    client.delete_matching(&client.keys().everything()).await.unwrap();
}

/// Redis orders an entry's changes as the in-process index does: by change
/// number, then version. A removed post's tombstone keeps its entry's
/// number, and the entry the player's next post makes starts again at
/// version 1 with a later number: it shows at once (a version alone refused
/// it until something rebuilt the board), and the old tombstone, replayed
/// late, changes nothing. Metadata reads back from the stamped value, in
/// pages and in `ranked`, written live and by a rebuild alike.
#[tokio::test]
#[cfg_attr(not(hiscore_test_redis), ignore = "set TEST_REDIS_URL to run the Redis variants")]
async fn a_redis_entry_made_again_after_its_removal_shows_at_once() {
    let client = redis_client().expect("TEST_REDIS_URL is set");
    let board = BoardPeriod {
        board: Board::Custom(11),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
        period: 0,
    };
    let change = |id: i64, score: i64, version: i64, changed: i64, listed: bool| EntryChange {
        board,
        key: BoardKey::of(score, 1, id),
        version,
        listed,
        metadata: None,
        changed,
    };
    let built = [EntryChange { metadata: Some("{\"car\":\"red\"}".into()), ..change(3, 90, 4, 2, true) }];
    let redis = redis_source(&client, &[], board, &built).await;
    let ids = |slice: Option<Slice>| slice.unwrap().entries.iter().map(|e| e.key.id).collect::<Vec<_>>();
    let record = async |change: EntryChange| redis.record(board, &record_of(&change)).await.unwrap();

    record(change(7, 50, 1, 3, true)).await;
    record(change(7, 50, 2, 3, false)).await; // banned
    record(change(7, 50, 3, 3, true)).await; // unbanned
    record(change(7, 50, 4, 3, false)).await; // its post removed: a tombstone
    record(change(7, 50, 3, 3, true)).await; // an older change, late
    assert_eq!(ids(redis.slice(board, SliceStart::Offset(0), 10).await.unwrap()), [3], "the tombstone holds");
    record(change(7, 20, 1, 5, true)).await; // the next post: a new entry
    assert_eq!(ids(redis.slice(board, SliceStart::Offset(0), 10).await.unwrap()), [3, 7]);
    record(change(7, 50, 4, 3, false)).await; // the old tombstone again
    record(change(3, 10, 3, 1, true)).await; // older than the rebuilt entry
    let page = redis.slice(board, SliceStart::Offset(0), 10).await.unwrap().unwrap();
    let shown: Vec<_> = page.entries.iter().map(|e| (e.key.id, e.key.score)).collect();
    assert_eq!(shown, [(3, 90), (7, 20)]);
    assert_eq!(page.entries[0].metadata.as_deref(), Some("{\"car\":\"red\"}"), "a rebuilt entry's metadata");
    let ranked = redis.ranked(board, &[7, 3]).await.unwrap();
    let ranked: Vec<_> = ranked.entries.iter().map(|(rank, e)| (*rank, e.key.id, e.metadata.clone())).collect();
    assert_eq!(ranked, [(1, 3, Some("{\"car\":\"red\"}".into())), (2, 7, None)]);
    client.delete_matching(&client.keys().everything()).await.unwrap();
}

/// The engine turns slices into pages: ranks, cursors, windows.
#[tokio::test]
async fn pages_cursors_and_windows() {
    let engine = RankEngine::new(memory_store().await, None, Arc::default(), Background::default());
    let (best, total) = (BoardPeriod::builtin(Board::Best), BoardPeriod::builtin(Board::Total));
    let standings: Vec<Standing> = [(1, 50), (2, 40), (3, 40), (4, 40), (5, 10)]
        .iter()
        .enumerate()
        .map(|(i, (id, score))| Standing {
            id: *id,
            best: *score,
            best_at: i as i64,
            total: *score,
            version: 1,
            listed: true,
        })
        .collect();
    *engine.local.boards.write().await = LocalBoards::from_standings(&standings);

    let first = engine.page(best, PageStart::Offset(0), 3).await.unwrap();
    let ranks: Vec<(i64, i64)> = first.entries.iter().map(|e| (e.rank, e.key.id)).collect();
    assert_eq!(ranks, [(1, 1), (2, 2), (2, 3)]);
    assert_eq!((first.total_players, first.next_offset), (5, Some(3)));

    let cursor = first.next_cursor.unwrap();
    let second = engine.page(cursor.board, PageStart::After { key: cursor.after, walk: cursor.walk }, 3).await.unwrap();
    let ranks: Vec<(i64, i64)> = second.entries.iter().map(|e| (e.rank, e.key.id)).collect();
    assert_eq!(ranks, [(2, 4), (5, 5)]);
    assert!(second.next_cursor.is_none() && second.next_offset.is_none());

    let around = engine.around(total, 3, 1).await.unwrap().unwrap();
    assert_eq!(around.user_ids(), [2, 3, 4]);
    assert_eq!(around.next_offset, Some(4));
    assert!(engine.around(best, 99, 1).await.unwrap().is_none());
    assert!(engine.page(best, PageStart::Offset(10), 3).await.unwrap().entries.is_empty());

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
        version: plays,
        banned_at: None,
        generation: 0,
    };
    let (player, idle) = (row(5, 10, 10, 1), row(6, 0, 0, 0));
    let ranks = engine.ranks_of(&[&player, &idle]).await.unwrap();
    let fifth = Some(ScoreRank { rank: 5, players: first.total_players });
    assert_eq!(ranks, [UserRanks { best: fifth, total: fifth }, UserRanks::default()]);
}

/// One custom board period held by every source at once and changed as the
/// writer and moderation change it: the database first (a post takes the
/// period's next change number; a ban or an erasure keeps the entry's),
/// then the in-process index and Redis record the change.
struct Everywhere {
    board: BoardPeriod,
    store: Store,
    local: LocalSource,
    redis: Option<(Arc<RedisClient>, RedisSource)>,
    /// The period's change count.
    changes: i64,
    /// Every entry as it is now (banned players' are not `listed`).
    entries: std::collections::BTreeMap<i64, EntryChange>,
    /// Erased players: their ids are never handed out again.
    erased: std::collections::HashSet<i64>,
}

/// Which source answers a read.
#[derive(Debug, Clone, Copy)]
enum Answering {
    Local,
    Database,
    Redis,
}

impl Everywhere {
    /// The board holding `entries` (numbered by their `changed`) on every source.
    async fn new(board: BoardPeriod, entries: Vec<EntryChange>) -> Self {
        let store = memory_store().await;
        load_entries(&store, board, &entries).await;
        let changes = entries.iter().map(|entry| entry.changed).max().unwrap_or(0);
        let local = LocalSource::default();
        local.boards.write().await.load_period(board, changes, &entries);
        let redis = match redis_client() {
            Some(client) => {
                let source = redis_source(&client, &[], board, &entries).await;
                Some((client, source))
            }
            None => None,
        };
        let entries = entries.into_iter().map(|entry| (entry.key.id, entry)).collect();
        Self { board, store, local, redis, changes, entries, erased: Default::default() }
    }

    fn sources(&self) -> Vec<Answering> {
        let mut sources = vec![Answering::Local, Answering::Database];
        if self.redis.is_some() {
            sources.push(Answering::Redis);
        }
        sources
    }

    async fn slice(&self, source: Answering, start: SliceStart, count: usize) -> Result<Option<Slice>, String> {
        match source {
            Answering::Local => Ok(self.local.slice(self.board, start, count).await.unwrap()),
            Answering::Database => {
                Ok(DatabaseSource::new(self.store.clone()).slice(self.board, start, count).await.unwrap())
            }
            Answering::Redis => {
                let (_, redis) = self.redis.as_ref().expect("Redis is configured");
                redis.slice(self.board, start, count).await.map_err(|error| error.to_string())
            }
        }
    }

    /// A post: the entry's new key, under the period's next change number.
    async fn post(&mut self, id: i64, score: i64, at: i64) {
        self.post_with_subscores(id, score, [0; 2], at).await;
    }

    /// A post on a board with subscores.
    async fn post_with_subscores(&mut self, id: i64, score: i64, subscores: [i64; 2], at: i64) {
        if self.erased.contains(&id) {
            return;
        }
        self.changes += 1;
        let version = self.entries.get(&id).map_or(1, |entry| entry.version + 1);
        let listed = self.entries.get(&id).is_none_or(|entry| entry.listed);
        let change = EntryChange {
            board: self.board,
            key: BoardKey { subscores, ..BoardKey::of(score, at, id) },
            version,
            listed,
            metadata: None,
            changed: self.changes,
        };
        self.commit(change, true).await;
    }

    /// A ban or an unban: the entry hidden or shown again, under the
    /// period's next change number (as the store's `PERIOD_CHANGE`).
    async fn set_banned(&mut self, id: i64, banned: bool) {
        let Some(entry) = self.entries.get(&id) else { return };
        self.changes += 1;
        let change =
            EntryChange { version: entry.version + 1, listed: !banned, changed: self.changes, ..entry.clone() };
        self.commit(change, true).await;
    }

    /// An erasure: the entry gone, recorded as taken off under the next
    /// change number.
    async fn erase(&mut self, id: i64) {
        let Some(entry) = self.entries.get(&id) else { return };
        self.changes += 1;
        let change = EntryChange { version: entry.version + 1, listed: false, changed: self.changes, ..entry.clone() };
        self.erased.insert(id);
        self.commit(change, false).await;
    }

    /// Writes the change to the database, then records it in the other
    /// sources (`kept`: the row stays, hidden or not).
    async fn commit(&mut self, change: EntryChange, kept: bool) {
        let Board::Custom(number) = self.board.board else { unreachable!("a custom board") };
        let id = change.key.id;
        sqlx::query("DELETE FROM board_entries WHERE board = ? AND period = ? AND user_id = ?")
            .bind(number)
            .bind(self.board.period)
            .bind(id)
            .execute(self.store.pool())
            .await
            .unwrap();
        if kept {
            load_entry_row(&self.store, self.board, &change).await;
            self.entries.insert(id, change.clone());
        } else {
            self.entries.remove(&id);
        }
        sqlx::query(
            "UPDATE board_periods SET changes = ?, players = (SELECT COUNT(*) FROM board_entries \
             WHERE board = ? AND period = ? AND hidden = 0) WHERE board = ? AND period = ?",
        )
        .bind(self.changes)
        .bind(number)
        .bind(self.board.period)
        .bind(number)
        .bind(self.board.period)
        .execute(self.store.pool())
        .await
        .unwrap();
        self.local.boards.write().await.apply_entry(&change);
        if let Some((_, redis)) = &self.redis {
            redis.record(self.board, &record_of(&change)).await.unwrap();
        }
    }

    /// The competition rank of `key` now: 1 + entries strictly better by score and subscores.
    fn rank_of_key(&self, key: &BoardKey) -> i64 {
        let ranking = self.board.ranking;
        let better = |other: &BoardKey| ranking.better((other.score, other.subscores), (key.score, key.subscores));
        1 + self.entries.values().filter(|entry| entry.listed && better(&entry.key)).count() as i64
    }

    async fn forget(self) {
        if let Some((client, _)) = self.redis {
            client.delete_matching(&client.keys().everything()).await.unwrap();
        }
    }
}

/// The Redis record of an entry change.
fn record_of(change: &EntryChange) -> Record<'static> {
    let member = if change.listed { key::member_of(change.board.ranking, change.key) } else { String::new() };
    let members: &'static [(String, Option<&'static str>)] = Box::leak(Box::new([(member, None)]));
    Record {
        id: change.key.id,
        version: change.version,
        period: change.board.period,
        expire_at: None,
        track: true,
        changed: change.changed,
        members,
    }
}

/// One board_entries row.
async fn load_entry_row(store: &Store, board: BoardPeriod, entry: &EntryChange) {
    let Board::Custom(number) = board.board else { return };
    let ranked = |order: crate::domain::Order, value: i64| match order {
        crate::domain::Order::Desc => -value,
        crate::domain::Order::Asc => value,
    };
    let mut rank_subs = [0; 2];
    for (index, order) in board.ranking.subscores().iter().enumerate() {
        rank_subs[index] = ranked(*order, entry.key.subscores[index]);
    }
    sqlx::query(
        "INSERT INTO board_entries (board, period, user_id, score, rank_score, subscore1, subscore2, rank_sub1, \
         rank_sub2, achieved_at, post_id, metadata, plays, version, hidden, changed) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 1, ?, ?, ?)",
    )
    .bind(number)
    .bind(board.period)
    .bind(entry.key.id)
    .bind(entry.key.score)
    .bind(ranked(board.ranking.score, entry.key.score))
    .bind(entry.key.subscores[0])
    .bind(entry.key.subscores[1])
    .bind(rank_subs[0])
    .bind(rank_subs[1])
    .bind(entry.key.at)
    .bind(entry.metadata.as_deref())
    .bind(entry.version)
    .bind(i64::from(!entry.listed))
    .bind(entry.changed)
    .execute(store.pool())
    .await
    .unwrap();
}

/// A walk of a `latest` board: entries changed after it began are left
/// out of its later pages (a player who fell past the cursor would show
/// twice); every other entry shows, once, with its board-wide rank. The
/// numbers are the database's, so every source answers alike, and a walk
/// that began on one goes on on another. Redis answers a walk only once it
/// has recorded every change up to the walk's start.
#[tokio::test]
async fn a_walk_leaves_out_entries_changed_since_it_began_on_every_source() {
    let board = BoardPeriod {
        board: Board::Custom(9),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
        period: 0,
    };
    let entry = |id: i64, score: i64| EntryChange {
        board,
        key: BoardKey::of(score, 7, id),
        version: 1,
        listed: true,
        metadata: None,
        changed: id,
    };
    // Scores 95, 94, …: id 1 on top; ids 11 and 12 tie.
    let built: Vec<EntryChange> = (1..=20).map(|id| entry(id, if id == 12 { 85 } else { 96 - id })).collect();
    let expected: Vec<i64> = (6..=20).filter(|id| ![9, 15].contains(id)).collect();
    let mut world = Everywhere::new(board, built).await;
    let mut first_pages = Vec::new();
    for source in world.sources() {
        let first = world.slice(source, SliceStart::Offset(0), 5).await.unwrap().unwrap();
        assert_eq!(first.walk, Some(Walk { changes: 20 }), "{source:?} begins at the database's count");
        first_pages.push(first);
    }
    let after = first_pages[0].entries.last().unwrap().key;
    let walk = first_pages[0].walk;
    world.post(2, 0, 8).await;
    world.post(9, 80, 8).await;
    world.post(15, 200, 8).await;

    let mut rests = Vec::new();
    for source in world.sources() {
        let rest = world.slice(source, SliceStart::After { key: after, walk }, 100).await.unwrap().unwrap();
        assert_eq!(rest.entries.iter().map(|e| e.key.id).collect::<Vec<_>>(), expected, "{source:?}: 2 fell");
        let skipped = rest.skipped.clone().unwrap();
        // Board now: 15 (200), 1, 3, 4, 5, 6, 7, 8, 10, 11, 12 (tie at 85), …
        assert_eq!(&skipped.ranks[..6], [6, 7, 8, 9, 10, 10], "{source:?}");
        assert_eq!(&skipped.positions[..5], [5, 6, 7, 8, 9], "{source:?}");
        rests.push((rest.entries, skipped));
    }
    assert!(rests.windows(2).all(|pair| pair[0] == pair[1]), "every source answers the walk alike");
    let unwalked = world.slice(Answering::Database, SliceStart::After { key: after, walk: None }, 100).await;
    assert!(unwalked.unwrap().unwrap().entries.iter().any(|e| e.key.id == 2), "without a walk 2 shows again");

    if let Some((_, redis)) = &world.redis {
        // A change committed but not yet recorded in Redis: a walk that
        // began on the database after it is not Redis's to answer.
        world.changes += 1;
        let late = EntryChange { key: BoardKey::of(1, 9, 6), version: 2, changed: world.changes, ..entry(6, 0) };
        let Board::Custom(number) = board.board else { unreachable!() };
        sqlx::query("UPDATE board_entries SET score = 1, rank_score = -1, achieved_at = 9, version = 2, changed = ? WHERE board = ? AND user_id = 6")
            .bind(world.changes)
            .bind(number)
            .execute(world.store.pool())
            .await
            .unwrap();
        sqlx::query("UPDATE board_periods SET changes = ? WHERE board = ?")
            .bind(world.changes)
            .bind(number)
            .execute(world.store.pool())
            .await
            .unwrap();
        let first = world.slice(Answering::Database, SliceStart::Offset(0), 5).await.unwrap().unwrap();
        let start = SliceStart::After { key: first.entries.last().unwrap().key, walk: first.walk };
        let behind = redis.slice(board, start, 5).await;
        assert!(matches!(behind, Err(RedisError::BehindWalk)), "{behind:?}");
        redis.record(board, &record_of(&late)).await.unwrap();
        assert!(redis.slice(board, start, 5).await.is_ok(), "recorded: Redis answers");
    }
    world.forget().await;
}

/// A walk that began long ago on a busy board stops looking after
/// [`WALK_SCAN_LIMIT`] entries and goes on from the last it looked at, so a
/// page stays one short read, on every source.
#[tokio::test]
async fn a_walk_through_many_changed_entries_stops_and_goes_on() {
    let board = BoardPeriod {
        board: Board::Custom(10),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
        period: 0,
    };
    let players = super::source::WALK_SCAN_LIMIT as i64 + 40;
    let entry = |id: i64| EntryChange {
        board,
        key: BoardKey::of(10 * players - id, 1, id),
        version: 1,
        listed: true,
        metadata: None,
        changed: 0,
    };
    let mut world = Everywhere::new(board, (1..=players).map(entry).collect()).await;
    let first = world.slice(Answering::Local, SliceStart::Offset(0), 2).await.unwrap().unwrap();
    let walk = first.walk;
    // Everyone after the first page posts again (same score, later time).
    for id in 3..players {
        world.post(id, 10 * players - id, 2).await;
    }
    let after = first.entries[1].key;
    for source in world.sources() {
        let page = world.slice(source, SliceStart::After { key: after, walk }, 10).await.unwrap().unwrap();
        let skipped = page.skipped.unwrap();
        assert!(page.entries.is_empty(), "{source:?}");
        let stopped = skipped.stopped_after.expect("the read stopped at the limit");
        assert_eq!(stopped.id, 2 + super::source::WALK_SCAN_LIMIT as i64 + 10, "{source:?}");
        let next = world.slice(source, SliceStart::After { key: stopped, walk }, 10).await.unwrap().unwrap();
        assert_eq!(next.entries.iter().map(|e| e.key.id).collect::<Vec<_>>(), [players], "{source:?}");
        assert_eq!(next.skipped.unwrap().stopped_after, None, "{source:?}");
    }
    world.forget().await;
}

/// The property behind every cursor walk, on random boards changed between
/// pages (`latest` posts that move players either way, `total` posts with
/// negative scores, bans, unbans, erasures, newcomers), each page read from
/// a source picked at random: nobody shows twice, everybody on the board
/// when the walk began whose entry did not change during it shows, in
/// board order, with the board-wide rank of the moment.
#[tokio::test]
async fn walks_show_nobody_twice_and_skip_nobody_unchanged_whichever_source_answers() {
    for seed in 0..24_u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        use crate::domain::{Order, Ranking};
        let order = if seed % 3 == 0 { Order::Asc } else { Order::Desc };
        let sums = seed % 2 == 1; // a `total` board: posts add, some negative
                                  // A `latest` board with two subscores every fourth seed.
        let subscores = seed % 4 == 2;
        let ranking = if subscores {
            Ranking::with_subscores(order, &[Order::Asc, Order::Desc])
        } else {
            Ranking::by_score(order)
        };
        let board = BoardPeriod { board: Board::Custom(30 + seed as i64), ranking, period: 1 };
        let players = rng.gen_range(3..50_i64);
        let built: Vec<EntryChange> = (1..=players)
            .map(|id| EntryChange {
                board,
                key: BoardKey {
                    subscores: if subscores { [rng.gen_range(0..3), rng.gen_range(0..3)] } else { [0; 2] },
                    ..BoardKey::of(rng.gen_range(-3..6) * 10, rng.gen_range(1..4), id)
                },
                version: 1,
                listed: rng.gen_bool(0.9),
                metadata: None,
                changed: id,
            })
            .collect();
        let mut world = Everywhere::new(board, built).await;
        let sources = world.sources();
        let mut clock = 10;
        for walk_number in 0..3 {
            let limit = rng.gen_range(1..6_usize);
            let on_board_at_start: Vec<i64> =
                world.entries.values().filter(|entry| entry.listed).map(|entry| entry.key.id).collect();
            let mut touched = std::collections::HashSet::new();
            let mut shown: Vec<i64> = Vec::new();
            let mut start = SliceStart::Offset(0);
            let mut walk = None;
            for _ in 0..1_000 {
                let source = sources[rng.gen_range(0..sources.len())];
                let slice = world.slice(source, start, limit + 1).await.unwrap();
                let walk_now = walk.or(slice.as_ref().and_then(|slice| slice.walk));
                let page = page_of(board, slice, limit, 0, walk_now);
                walk = walk_now;
                for entry in &page.entries {
                    let context = format!("seed {seed} walk {walk_number} {source:?}");
                    assert!(!shown.contains(&entry.key.id), "{context}: player {} twice", entry.key.id);
                    assert_eq!(entry.rank, world.rank_of_key(&entry.key), "{context}: rank of {}", entry.key.id);
                    shown.push(entry.key.id);
                }
                let Some(cursor) = page.next_cursor else { break };
                start = SliceStart::After { key: cursor.after, walk: cursor.walk };
                for _ in 0..rng.gen_range(0..4) {
                    clock += 1;
                    let id = rng.gen_range(1..=players + 5);
                    touched.insert(id);
                    let old = world.entries.get(&id).map(|entry| entry.key.score);
                    match rng.gen_range(0..10) {
                        0 => world.set_banned(id, world.entries.get(&id).is_some_and(|entry| entry.listed)).await,
                        1 => world.erase(id).await,
                        _ if sums => world.post(id, old.unwrap_or(0) + rng.gen_range(-4..5) * 10, clock).await,
                        _ if subscores => {
                            let tie_breaks = [rng.gen_range(0..3), rng.gen_range(0..3)];
                            world.post_with_subscores(id, rng.gen_range(-1..2) * 10, tie_breaks, clock).await;
                        }
                        _ => world.post(id, rng.gen_range(-3..6) * 10, clock).await,
                    }
                }
            }
            for id in on_board_at_start.iter().filter(|id| !touched.contains(*id)) {
                assert!(shown.contains(id), "seed {seed} walk {walk_number}: unchanged player {id} was skipped");
            }
        }
        world.forget().await;
    }
}

/// A read that fails on Redis (a timeout, a wait for a pooled connection,
/// a refused connection) loses nothing: it is answered by the database and
/// Redis stays trusted (no rebuild of every board, no cached session
/// dropped). A failed write may be missing from Redis: that distrusts it.
#[actix_web::test]
async fn a_failed_read_keeps_redis_trusted_and_a_failed_write_does_not() {
    let client = Arc::new(RedisClient::new("redis://127.0.0.1:1", "hiscore-unreachable", 1).unwrap());
    let store = memory_store().await;
    let engine = RankEngine::new(store, Some(Arc::clone(&client)), Arc::default(), Background::default());
    let page = engine.page(BoardPeriod::builtin(Board::Best), PageStart::Offset(0), 10).await.unwrap();
    assert!(page.entries.is_empty(), "answered by the database");
    assert!(client.is_trusted(), "a failed read lost nothing");
    let row = UserRow {
        id: 1,
        login_name: String::new(),
        display_name: String::new(),
        best_score: 10,
        best_at: Some(Timestamp::from_millis(1)),
        best_score_id: None,
        total_score: 10,
        play_count: 1,
        created_at: Timestamp::from_millis(0),
        version: 1,
        banned_at: None,
        generation: 0,
    };
    engine.record(&[row]).await;
    assert!(!client.is_trusted(), "a failed write may be missing from Redis");
}

/// The change log holds what a replay needs and no more: outside a rebuild
/// a change costs it nothing; a change made while a rebuild reads the
/// database is one short line (who, which period, the version and change
/// number it left: never members or metadata), and the replay after the
/// swap reads what that player holds now from the database: a newcomer
/// comes in, a player banned meanwhile goes. The log expires.
#[tokio::test]
#[cfg_attr(not(hiscore_test_redis), ignore = "set TEST_REDIS_URL to run the Redis variants")]
async fn the_change_log_holds_only_what_a_rebuild_replays() {
    use deadpool_redis::redis::AsyncCommands as _;
    let client = redis_client().expect("TEST_REDIS_URL is set");
    let store = memory_store().await;
    let standing = |id: i64| Standing { id, best: 10 * id, best_at: id, total: 10 * id, version: 1, listed: true };
    load(&store, &(1..=100).map(standing).collect::<Vec<_>>()).await;
    let engine = RankEngine::new(store.clone(), Some(Arc::clone(&client)), Arc::default(), Background::default());
    let shared = engine.shared.clone().unwrap();
    let best = BoardPeriod::builtin(Board::Best);
    let read_database = || async {
        store
            .board_standings()
            .await
            .unwrap()
            .iter()
            .filter(|s| s.listed)
            .map(builtin_rebuild_entry)
            .collect::<Vec<_>>()
    };
    let numbering = Numbering { track: false, changes: 0 };
    // Built without a rebuild under way (no `rebuilding` mark).
    assert!(shared.redis.rebuild(best, &read_database().await, numbering).await.unwrap());
    let log = client.keys().builtin_boards().changes();
    let mut conn = client.conn().await.unwrap();
    let record = |ids: Vec<i64>| {
        let (engine, store) = (&engine, &store);
        async move {
            let mut conn = store.conn().await.unwrap();
            engine.record(&store.users(&mut conn, &ids).await.unwrap()).await;
        }
    };
    record(vec![50]).await;
    assert_eq!(conn.llen::<_, i64>(&log).await.unwrap(), 0, "outside a rebuild nothing is logged");

    // A rebuild begins and reads the database; meanwhile player 101 joins
    // at the top and player 100 (second) is banned.
    let since = shared.redis.begin_rebuild(Board::Best).await.unwrap();
    let read = read_database().await;
    load(&store, &[Standing { id: 101, best: 5_000, best_at: 1, total: 5_000, version: 1, listed: true }]).await;
    sqlx::query("UPDATE users SET banned_at = 1, version = 2 WHERE id = 100").execute(store.pool()).await.unwrap();
    record(vec![100, 101]).await;
    let lines: Vec<String> = conn.lrange(&log, 0, -1).await.unwrap();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|line| line.len() <= 64), "at most 64 bytes a change: {lines:?}");
    assert!(conn.pttl::<_, i64>(&log).await.unwrap() > 0, "the log expires");

    assert!(shared.redis.rebuild(best, &read, numbering).await.unwrap());
    engine.replay_logged(&shared, best, since, false).await.unwrap();
    let top = shared.redis.slice(best, SliceStart::Offset(0), 2).await.unwrap().unwrap();
    let ids: Vec<i64> = top.entries.iter().map(|entry| entry.key.id).collect();
    assert_eq!(ids, [101, 99], "the newcomer replayed in, the banned player out");
    assert_eq!(top.total, 100);
    client.delete_matching(&client.keys().everything()).await.unwrap();
}

/// Reads of a period whose final standings hold come from them (a rank
/// written there is the rank answered); once the period changes, reads
/// count again, until the standings are written again.
#[tokio::test]
async fn an_ended_periods_reads_come_from_its_final_standings_while_they_hold() {
    let board = BoardPeriod {
        board: Board::Custom(7),
        ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
        period: 3,
    };
    let entry = |id: i64, score: i64| EntryChange {
        board,
        key: BoardKey::of(score, 1, id),
        version: 1,
        listed: true,
        metadata: None,
        changed: id,
    };
    let entries: Vec<EntryChange> = (1..=5).map(|id| entry(id, 100 - 10 * id)).collect();
    let store = memory_store().await;
    load_entries(&store, board, &entries).await;
    let database = DatabaseSource::new(store.clone());
    let page = |slice: Option<Slice>| slice.map(|slice| (slice.position, slice.first_rank, slice.total));
    let around = SliceStart::Around { id: 4, radius: 1 };
    assert_eq!(page(database.slice(board, around, 3).await.unwrap()), Some((2, 3, 5)));

    let tamper = "UPDATE board_entries SET final_rank = final_rank + 1000";
    assert!(crate::usecases::standings::settle_period(&store, 7, 3, Timestamp::now()).await.unwrap());
    sqlx::query(tamper).execute(store.pool()).await.unwrap();
    assert_eq!(page(database.slice(board, around, 3).await.unwrap()), Some((2, 1003, 5)), "read from the standings");
    let ranked = database.ranked(board, &[2, 5]).await.unwrap();
    assert_eq!(ranked.entries.iter().map(|(rank, _)| *rank).collect::<Vec<_>>(), [1002, 1005]);
    assert!(
        !crate::usecases::standings::settle_period(&store, 7, 3, Timestamp::now()).await.unwrap(),
        "standings that hold are not written again"
    );

    // A late post moves the period's change count: counted again.
    sqlx::query("UPDATE board_periods SET changes = changes + 1").execute(store.pool()).await.unwrap();
    assert_eq!(page(database.slice(board, around, 3).await.unwrap()), Some((2, 3, 5)), "counted");
    assert!(crate::usecases::standings::settle_period(&store, 7, 3, Timestamp::now()).await.unwrap());
    assert_eq!(page(database.slice(board, around, 3).await.unwrap()), Some((2, 3, 5)), "written again");
}
