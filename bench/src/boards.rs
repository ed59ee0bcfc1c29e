//! Custom boards in a bench run: the run creates one board per kind (a
//! lowest-wins `best`, a `latest`, a `total`, and one that resets every
//! three seconds), posts to them beside the built-ins, and checks them as
//! exactly: every answer against the bench's model of each entry (per
//! operator, per period), the period of every post against the moment it
//! was accepted, archived periods that must not change once ended, and
//! every board walked end to end at the end.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;
use reqwest::Method;
use serde_json::{json, Value};

use super::context::Context;
use super::http::{shorten, Api};
use super::model::{BenchBoard, EntryModel, Operator, PlayerModel};
use super::registration::register;
use super::stats::{Severity, Work};
use super::validate::{board_order, Board, Entry};
use super::walks::{full_walk, walk_in_pages};

/// How the run's reset board resets (every three seconds), and how many of
/// its ended periods it keeps (more than a run lasts).
const RESET: &str = "*/3 * * * * *";
const KEPT_PERIODS: i64 = 1_000;

/// Creates the run's boards (ids carry the run id, so runs never share one).
pub async fn create(api: &Api, token: &str, run_id: &str) -> Vec<Arc<BenchBoard>> {
    let kinds = [
        ("fastest", true, Operator::Best, false),
        ("latest", false, Operator::Latest, false),
        ("sum", false, Operator::Total, false),
        ("ticking", false, Operator::Best, true),
    ];
    let mut boards = Vec::new();
    for (kind, asc, operator, resets) in kinds {
        let id = format!("bench-{}-{kind}", run_id.to_ascii_lowercase());
        let operator_name = match operator {
            Operator::Best => "best",
            Operator::Latest => "latest",
            Operator::Total => "total",
        };
        let definition = json!({
            "id": id, "name": format!("Bench {kind}"), "order": if asc { "asc" } else { "desc" },
            "operator": operator_name, "reset": if resets { json!(RESET) } else { Value::Null },
            "archive_periods": KEPT_PERIODS,
        });
        let request = api.request(Method::POST, "/api/admin/boards").bearer_auth(token).json(&definition);
        let Some(reply) = api.send("POST /api/admin/boards", request).await else { return Vec::new() };
        if reply.status == 404 {
            // A server of the contract's first version: no custom boards.
            eprintln!("custom boards are not served (404 on POST /api/admin/boards): their checks are skipped");
            return Vec::new();
        }
        if reply.status != 201 || reply.body["id"] != id.as_str() {
            api.recorder.error(
                Severity::Critical,
                format!("creating board {id}: expected 201, got {}: {}", reply.status, shorten(&reply.text)),
            );
            return Vec::new();
        }
        // A `latest` board's entries get worse as often as better.
        let monotonic = operator != Operator::Latest;
        boards.push(Arc::new(BenchBoard {
            board: Board::Custom { id: Arc::from(id), asc, monotonic, latest: operator == Operator::Latest },
            asc,
            operator,
            resets,
            archived: Mutex::default(),
        }));
    }
    boards
}

/// The period object of an answer: (index, start, end).
fn period_of(value: &Value) -> Option<(i64, String, Option<String>)> {
    Some((value["index"].as_i64()?, value["start"].as_str()?.to_owned(), value["end"].as_str().map(str::to_owned)))
}

/// A player posts to one of the run's boards, and checks the answer
/// against the model: the entry by the board's operator, and the period
/// the post counted in against the moment it was accepted.
pub async fn post(ctx: &Context, rng: &mut StdRng, model: &mut PlayerModel) {
    if ctx.boards.is_empty() {
        return;
    }
    let board = Arc::clone(&ctx.boards[rng.gen_range(0..ctx.boards.len())]);
    let score = rng.gen_range(1..1_000_000);
    let metadata = if rng.gen_bool(0.5) { json!({"run": rng.gen_range(0..1000), "kit": "bench"}) } else { Value::Null };
    post_to(ctx, &board, score, metadata, model).await;
}

/// Posts `score` to `board` as the player, checks the answer and notes the
/// entry in the player's model.
async fn post_to(ctx: &Context, board: &BenchBoard, score: i64, metadata: Value, model: &mut PlayerModel) {
    let body = if metadata.is_null() { json!({"score": score}) } else { json!({"score": score, "metadata": metadata}) };
    let path = format!("/api/boards/{}/scores", board.id());
    let request = ctx.api.request(Method::POST, &path).bearer_auth(&model.token).json(&body);
    let Some(reply) = ctx.api.send("POST /api/boards/{board}/scores", request).await else {
        model.uncertain_boards.insert(board.id().to_owned());
        return;
    };
    if reply.status == 503 {
        // Without a key the post may or may not have counted.
        model.uncertain_boards.insert(board.id().to_owned());
        return;
    }
    if !ctx.expect(&format!("post to {}", board.id()), &reply, 201, None) {
        return;
    }
    let answer = &reply.body;
    let (Some(created_at), Some((index, start, end))) =
        (answer["score"]["created_at"].as_str(), period_of(&answer["period"]))
    else {
        return ctx.critical(format!(
            "post to {}: no score.created_at or period in {}",
            board.id(),
            shorten(&reply.text)
        ));
    };
    // The period in force when the post was accepted: start <= created_at < end.
    if created_at < start.as_str() || end.as_deref().is_some_and(|end| created_at >= end) {
        return ctx.critical(format!(
            "post to {} accepted at {created_at} was counted in period {index} [{start}, {})",
            board.id(),
            end.as_deref().unwrap_or("open")
        ));
    }
    if !board.resets && (index != 0 || end.is_some()) {
        return ctx.critical(format!("post to {}: a board without reset has period {index}", board.id()));
    }
    let key = (board.id().to_owned(), index);
    let last_period = model.entries.keys().filter(|(id, _)| id == board.id()).map(|(_, p)| *p).max();
    if last_period.is_some_and(|last| index < last) {
        return ctx.critical(format!("post to {}: period {index} after a post in period {last_period:?}", board.id()));
    }
    if answer["score"]["score"] != score || answer["score"]["metadata"] != metadata {
        ctx.critical(format!("post to {}: the answer's post is {} for {body}", board.id(), answer["score"]));
    }
    if model.uncertain_boards.contains(board.id()) {
        return ctx.recorder.succeeded(Work::Write);
    }
    let (entry, improved) =
        EntryModel::after(model.entries.get(&key), board.operator, board.asc, score, created_at, &metadata);
    let shown = &answer["entry"];
    let shown_ok = shown["score"] == entry.score
        && shown["achieved_at"] == entry.achieved_at.as_str()
        && shown["metadata"] == entry.metadata
        && shown["user"]["id"] == model.id
        && shown["rank"].as_i64().is_some_and(|rank| rank >= 1)
        && answer["improved"] == improved;
    if !shown_ok {
        return ctx.critical(format!(
            "post {score} to {} ({:?}{}): entry {shown} improved {}, the bench expects score {} at {} improved {improved}",
            board.id(),
            board.operator,
            if board.asc { ", lowest first" } else { "" },
            answer["improved"],
            entry.score,
            entry.achieved_at
        ));
    }
    model.entries.insert(key, entry);
    ctx.recorder.succeeded(Work::Write);
}

/// Before the load, on quiet boards, so that every run however short reads
/// and checks every board kind: four players post a fixed sequence to each
/// of the run's boards (a tie, a score behind it, an entry that changes),
/// and each board is walked in pages of two, by cursor and by offset; every
/// entry, its rank and its order must be exactly what the bench's model
/// says. The players carry on in the run (the final check expects them).
pub async fn probe(ctx: &Context, rng: &mut StdRng) {
    /// (player, score): on a lowest-wins `best` board the tie is first, on
    /// the others a lower score follows it; the fifth post moves an entry.
    const POSTS: [(usize, i64); 5] = [(0, 200), (1, 500), (2, 200), (1, 900), (3, 100)];
    if ctx.boards.is_empty() {
        return;
    }
    let mut players = Vec::new();
    for worker in 0..4 {
        // Generation 0: the load's own players count theirs from 1.
        match register(ctx, rng, worker, 0).await {
            Some(player) => players.push(player),
            None => return,
        }
    }
    for board in &ctx.boards {
        for (player, score) in POSTS {
            post_to(ctx, board, score, json!({"probe": player}), &mut players[player]).await;
        }
    }
    for board in &ctx.boards {
        let mut periods: Vec<i64> =
            players.iter().flat_map(|p| p.entries.keys()).filter(|(id, _)| id == board.id()).map(|(_, p)| *p).collect();
        periods.sort_unstable();
        periods.dedup();
        for period in periods {
            let expected = standings(&board.board, &players, period);
            for keyset in [true, false] {
                let Some(walked) = walk_in_pages(ctx, board.board.clone(), Some(period), keyset, true, 10, 2).await
                else {
                    return;
                };
                if walked != expected {
                    return ctx.critical(format!(
                        "{} ({:?}{}) period {period}, walked by {}: {walked:?}, the bench posted {expected:?}",
                        board.id(),
                        board.operator,
                        if board.asc { ", lowest first" } else { "" },
                        if keyset { "cursor" } else { "offset" },
                    ));
                }
            }
        }
    }
    if let Ok(mut finished) = ctx.finished.lock() {
        finished.extend(players);
    }
}

/// A period of a board as the players' models say it must read: in board
/// order, with competition ranks.
fn standings(board: &Board, players: &[PlayerModel], period: i64) -> Vec<Entry> {
    let mut entries: Vec<Entry> = players
        .iter()
        .filter_map(|player| {
            let entry = player.entries.get(&(board.as_str().to_owned(), period))?;
            Some(Entry { rank: 0, score: entry.score, at: Some(entry.achieved_at.clone()), id: player.id })
        })
        .collect();
    entries.sort_by(|a, b| board_order(board, a, b));
    for i in 0..entries.len() {
        entries[i].rank = match i {
            0 => 1,
            _ if entries[i].score == entries[i - 1].score => entries[i - 1].rank,
            _ => i as i64 + 1,
        };
    }
    entries
}

/// A viewer reads a page of one of the run's boards.
pub fn pick(ctx: &Context, rng: &mut StdRng) -> Option<Board> {
    (!ctx.boards.is_empty()).then(|| ctx.boards[rng.gen_range(0..ctx.boards.len())].board.clone())
}

/// During the load: every ended period of the reset board is read once
/// it has been over for a few seconds, and again later: it must not change.
pub async fn archivist(ctx: Arc<Context>) {
    let Some(board) = ctx.boards.iter().find(|board| board.resets).cloned() else { return };
    while ctx.running() {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let path = format!("/api/boards/{}", board.id());
        let Some(reply) = ctx.api.send("GET /api/boards/{board}", ctx.api.request(Method::GET, &path)).await else {
            continue;
        };
        let Some(current) = reply.body["period"]["index"].as_i64() else { continue };
        // Two periods back: over for at least one whole period (instances'
        // clocks may differ by a little at the boundary).
        for period in (current - 4).max(0)..=(current - 2) {
            let Some(entries) = full_walk(&ctx, board.board.clone(), Some(period), true, true, 50).await else {
                return;
            };
            let mut archived = match board.archived.lock() {
                Ok(archived) => archived,
                Err(_) => return,
            };
            match archived.get(&period) {
                Some(before) if *before != entries => {
                    if !explained_by_moderation(&ctx, before, &entries) {
                        return ctx.critical(format!(
                            "period {period} of {} changed after it ended: {} entries before, {} now",
                            board.id(),
                            before.len(),
                            entries.len()
                        ));
                    }
                    archived.insert(period, entries);
                }
                Some(_) => {}
                None => {
                    archived.insert(period, entries);
                }
            }
        }
    }
}

/// Whether an ended period's change is a ban or unban of a moderated
/// player (their entry hidden or shown, the ranks behind it moving): the
/// other entries, in order, with their scores and times, are unchanged.
fn explained_by_moderation(ctx: &Context, before: &[Entry], now: &[Entry]) -> bool {
    let moderated = |list: &[Entry]| list.iter().any(|entry| ctx.was_moderated(entry.id));
    let others = |list: &[Entry]| -> Vec<(i64, i64, Option<String>)> {
        list.iter()
            .filter(|entry| !ctx.was_moderated(entry.id))
            .map(|entry| (entry.id, entry.score, entry.at.clone()))
            .collect()
    };
    (moderated(before) || moderated(now)) && others(before) == others(now)
}

/// After the load, on quiet boards: every period a bench player posted
/// into, walked end to end, holds exactly the entries the bench posted (of
/// the players whose every post has a known outcome), and nobody else;
/// archived periods still read as they did.
pub async fn final_check(ctx: &Context, players: &[PlayerModel]) {
    for board in &ctx.boards {
        let mut expected: HashMap<i64, HashMap<i64, &EntryModel>> = HashMap::new();
        let mut posters: HashSet<i64> = HashSet::new();
        for player in players {
            for ((id, period), entry) in &player.entries {
                if id == board.id() {
                    posters.insert(player.id);
                    if !player.uncertain_boards.contains(id) {
                        expected.entry(*period).or_default().insert(player.id, entry);
                    }
                }
            }
            if player.uncertain_boards.contains(board.id()) {
                posters.insert(player.id);
            }
        }
        let mut periods: Vec<i64> = expected.keys().copied().collect();
        periods.extend(board.archived.lock().map(|a| a.keys().copied().collect::<Vec<_>>()).unwrap_or_default());
        periods.sort_unstable();
        periods.dedup();
        for period in periods {
            let Some(walked) = full_walk(ctx, board.board.clone(), Some(period), true, true, usize::MAX).await else {
                return;
            };
            if let Some(before) = board.archived.lock().ok().and_then(|a| a.get(&period).cloned()) {
                if before != walked && !explained_by_moderation(ctx, &before, &walked) {
                    return ctx.critical(format!("period {period} of {} changed after it ended", board.id()));
                }
            }
            let shown: HashMap<i64, &Entry> = walked.iter().map(|entry| (entry.id, entry)).collect();
            for id in shown.keys() {
                if !posters.contains(id) {
                    return ctx
                        .critical(format!("{} period {period} shows player {id}, who never posted there", board.id()));
                }
            }
            for (id, model) in expected.get(&period).into_iter().flatten() {
                let actual = shown.get(id).map(|entry| (entry.score, entry.at.clone()));
                if actual != Some((model.score, Some(model.achieved_at.clone()))) {
                    return ctx.critical(format!(
                        "{} period {period}: player {id} is {actual:?}, the bench posted {} at {}",
                        board.id(),
                        model.score,
                        model.achieved_at
                    ));
                }
            }
        }
    }
}
