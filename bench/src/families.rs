//! Board families and tie-breakers in a bench run (v4): before the load,
//! on quiet boards, players post to a board that feeds a daily and a
//! weekly board, each partitioned by the posts' `country`, and to a board
//! ranked by two subscores. Every answer (the post's fed results and their
//! partitions) is checked against the bench's model, then each partition
//! of each fed board and the subscore board are walked by cursor, two
//! entries a page, and must read exactly as the model ranks them.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use rand::rngs::StdRng;
use reqwest::Method;
use serde_json::{json, Value};

use super::context::Context;
use super::http::shorten;
use super::registration::register;
use super::stats::{Severity, Work};

/// The partitions' metadata field.
const FIELD: &str = "country";

/// The run's family: a board, the two boards it feeds (partitioned), and
/// the board ranked by subscores.
pub struct Family {
    origin: String,
    fed: [String; 2],
    duel: String,
}

/// Creates the run's family (ids carry the run id); `None`, after saying
/// why, when the target does not serve v4 boards.
pub async fn create(ctx: &Context, token: &str) -> Option<Family> {
    let run = ctx.run_id.to_ascii_lowercase();
    let family = Family {
        origin: format!("bench-{run}-family"),
        fed: [format!("bench-{run}-fam-daily"), format!("bench-{run}-fam-weekly")],
        duel: format!("bench-{run}-duel"),
    };
    let definitions = [
        json!({"id": family.fed[0], "name": "Family daily", "reset": "0 0 * * *", "partition_by": FIELD}),
        json!({"id": family.fed[1], "name": "Family weekly", "reset": "0 0 * * 1", "partition_by": FIELD}),
        json!({"id": family.origin, "name": "Family", "feeds": family.fed}),
        json!({"id": family.duel, "name": "Duel", "subscores":
            [{"name": "kills", "order": "desc"}, {"name": "time_ms", "order": "asc"}]}),
    ];
    for definition in definitions {
        let request = ctx.api.request(Method::POST, "/api/admin/boards").bearer_auth(token).json(&definition);
        let reply = ctx.api.send("POST /api/admin/boards", request).await?;
        if reply.status == 422 || reply.status == 404 {
            eprintln!("v4 boards are not served ({}): the family checks are skipped", shorten(&reply.text));
            return None;
        }
        if !ctx.expect(&format!("creating board {}", definition["id"]), &reply, 201, None) {
            return None;
        }
    }
    Some(family)
}

/// An entry as a page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    rank: i64,
    id: i64,
    score: i64,
    subscores: Vec<i64>,
    at: String,
}

impl Shown {
    fn parse(entry: &Value) -> Option<Self> {
        let subscores = match entry.get("subscores") {
            None => Vec::new(),
            Some(list) => list.as_array()?.iter().map(Value::as_i64).collect::<Option<_>>()?,
        };
        Some(Self {
            rank: entry["rank"].as_i64()?,
            id: entry["user"]["id"].as_i64()?,
            score: entry["score"].as_i64()?,
            subscores,
            at: entry["achieved_at"].as_str()?.to_owned(),
        })
    }
}

/// A board's model: each player's (score, subscores) by the board's key,
/// better first: score desc, then kills desc, then time asc (the duel's;
/// the fed boards have no subscores).
type Points = (i64, Vec<i64>);

fn compare(a: &Points, b: &Points) -> Ordering {
    let subscore = |points: &Points, i: usize| points.1.get(i).copied().unwrap_or(0);
    b.0.cmp(&a.0).then(subscore(b, 0).cmp(&subscore(a, 0))).then(subscore(a, 1).cmp(&subscore(b, 1)))
}

/// `best`: a post replaces the entry only when strictly better.
fn keep_best(entries: &mut HashMap<i64, Points>, player: i64, points: Points) {
    let better = entries.get(&player).is_none_or(|old| compare(&points, old) == Ordering::Less);
    if better {
        entries.insert(player, points);
    }
}

/// The competition rank of `points` among `entries`.
fn rank_in(entries: &HashMap<i64, Points>, points: &Points) -> i64 {
    entries.values().filter(|other| compare(other, points) == Ordering::Less).count() as i64 + 1
}

/// The posts, players and checks (see the module's comment). Runs before
/// the load; its players take no part in it.
pub async fn probe(ctx: &Context, rng: &mut StdRng, family: &Family) {
    /// (player, score, country): ties on a partition, a player in two
    /// partitions, a post without one, a worse post that changes nothing.
    const POSTS: [(usize, i64, Option<&str>); 10] = [
        (0, 500, Some("DE")),
        (1, 500, Some("DE")),
        (2, 300, Some("FR")),
        (3, 700, Some("DE")),
        (1, 800, Some("FR")),
        (4, 300, Some("FR")),
        (5, 100, None),
        (0, 500, Some("FR")),
        (2, 900, Some("x_y-1")),
        (3, 600, Some("DE")),
    ];
    /// (player, score, kills, time): ties on the score and on kills.
    const DUEL: [(usize, i64, i64, i64); 7] = [
        (0, 50, 3, 900),
        (1, 50, 3, 800),
        (2, 50, 4, 999),
        (3, 40, 9, 100),
        (4, 50, 3, 800),
        (0, 50, 3, 700),
        (5, 10, 0, 0),
    ];
    let mut players = Vec::new();
    for worker in 0..6 {
        // Generation 1_000: apart from the load's players and the probes'.
        match register(ctx, rng, worker, 1_000).await {
            Some(player) => players.push(player),
            None => return,
        }
    }
    // The model of each fed board's partitions: (board, value) -> entries.
    let mut partitions: BTreeMap<(usize, &str), HashMap<i64, Points>> = BTreeMap::new();
    for (player, score, country) in POSTS {
        let metadata = country.map_or(json!({}), |value| json!({FIELD: value}));
        let body = json!({"score": score, "metadata": metadata});
        let path = format!("/api/boards/{}/scores", family.origin);
        let request = ctx.api.request(Method::POST, &path).bearer_auth(&players[player].token).json(&body);
        let Some(reply) = ctx.api.send("POST /api/boards/{board}/scores", request).await else { return };
        if !ctx.expect(&format!("post to {}", family.origin), &reply, 201, None) {
            return;
        }
        let feeds = reply.body["feeds"].as_array().cloned().unwrap_or_default();
        for (index, board) in family.fed.iter().enumerate() {
            let item = feeds.get(index).cloned().unwrap_or(Value::Null);
            let id = players[player].id;
            let expected = country.map(|value| {
                let entries = partitions.entry((index, value)).or_default();
                keep_best(entries, id, (score, Vec::new()));
                let points = entries[&id].clone();
                (value, points.0, rank_in(entries, &points))
            });
            let shown = &item["partition"];
            let ok = item["board"] == board.as_str()
                && item["status"] == "accepted"
                && match expected {
                    None => shown.is_null(),
                    Some((value, best, rank)) => {
                        shown["value"] == value && shown["entry"]["score"] == best && shown["entry"]["rank"] == rank
                    }
                };
            if !ok {
                return ctx.critical(format!(
                    "post {score} ({country:?}) to {}: fed item {index} is {item}; the bench expects {board} \
                     accepted with the partition's entry {expected:?}",
                    family.origin
                ));
            }
        }
        ctx.recorder.succeeded(Work::Write);
    }
    for ((index, value), entries) in &partitions {
        let board = &family.fed[*index];
        if !walk_matches(ctx, board, &format!("&partition={value}"), entries).await {
            return;
        }
    }
    for (index, board) in family.fed.iter().enumerate() {
        let path = format!("/api/boards/{board}/partitions?limit=100");
        let Some(reply) = ctx.api.send("GET /api/boards/{board}/partitions", ctx.api.request(Method::GET, &path)).await
        else {
            return;
        };
        let expected: Vec<Value> = partitions
            .iter()
            .filter(|((fed, _), _)| *fed == index)
            .map(|((_, value), entries)| json!({"value": value, "players": entries.len()}))
            .collect();
        if reply.status != 200 || reply.body["partitions"] != Value::from(expected.clone()) {
            return ctx.critical(format!("{path}: {}; the bench expects {expected:?}", shorten(&reply.text)));
        }
    }

    let mut duel: HashMap<i64, Points> = HashMap::new();
    for (player, score, kills, time) in DUEL {
        let body = json!({"score": score, "subscores": [kills, time]});
        let path = format!("/api/boards/{}/scores", family.duel);
        let request = ctx.api.request(Method::POST, &path).bearer_auth(&players[player].token).json(&body);
        let Some(reply) = ctx.api.send("POST /api/boards/{board}/scores", request).await else { return };
        if !ctx.expect(&format!("post to {}", family.duel), &reply, 201, None) {
            return;
        }
        let id = players[player].id;
        keep_best(&mut duel, id, (score, vec![kills, time]));
        let points = &duel[&id];
        let entry = &reply.body["entry"];
        if entry["score"] != points.0
            || entry["subscores"] != json!(points.1)
            || entry["rank"] != rank_in(&duel, points)
        {
            return ctx.critical(format!(
                "post {body} to {}: entry {entry}; the bench expects {points:?} ranked {}",
                family.duel,
                rank_in(&duel, points)
            ));
        }
        ctx.recorder.succeeded(Work::Write);
    }
    walk_matches(ctx, &family.duel, "", &duel).await;
}

/// Walks `board` (with `filter` added to each page's query) by cursor, two
/// entries a page: the model's players with their (score, subscores),
/// nobody twice, in board order (ties by `achieved_at`, then id), each
/// with its competition rank, and `total_players` the model's size.
async fn walk_matches(ctx: &Context, board: &str, filter: &str, expected: &HashMap<i64, Points>) -> bool {
    let mut walked: Vec<Shown> = Vec::new();
    let mut query = format!("limit=2{filter}");
    loop {
        let path = format!("/api/rankings/{board}?{query}");
        let Some(reply) = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, &path)).await else {
            return false;
        };
        if !ctx.expect(&format!("ranking page {path}"), &reply, 200, None) {
            return false;
        }
        let Some(entries) = reply.body["entries"].as_array().and_then(|list| list.iter().map(Shown::parse).collect())
        else {
            ctx.critical(format!("{path}: unreadable entries in {}", shorten(&reply.text)));
            return false;
        };
        let entries: Vec<Shown> = entries;
        if reply.body["total_players"] != expected.len() {
            ctx.recorder.error(
                Severity::Critical,
                format!("{path}: total_players {}, the bench posted {}", reply.body["total_players"], expected.len()),
            );
            return false;
        }
        walked.extend(entries);
        ctx.recorder.succeeded(Work::Read);
        match reply.body["next_cursor"].as_str() {
            Some(cursor) => query = format!("limit=2&cursor={cursor}{filter}"),
            None => break,
        }
    }
    let shown: HashMap<i64, Points> = walked.iter().map(|e| (e.id, (e.score, e.subscores.clone()))).collect();
    let mut why = None;
    if &shown != expected || shown.len() != walked.len() {
        why = Some("the entries".to_owned());
    }
    for (position, pair) in walked.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        let order = compare(&(a.score, a.subscores.clone()), &(b.score, b.subscores.clone()))
            .then_with(|| a.at.cmp(&b.at))
            .then(a.id.cmp(&b.id));
        if order != Ordering::Less {
            why = Some(format!("the order at {position}"));
        }
    }
    for entry in &walked {
        if entry.rank != rank_in(expected, &(entry.score, entry.subscores.clone())) {
            why = Some(format!("the rank of player {}", entry.id));
        }
    }
    match why {
        None => true,
        Some(why) => {
            ctx.critical(format!(
                "{board}{filter} walked by cursor: {why} differ from the bench's posts: {walked:?}, expected {expected:?}"
            ));
            false
        }
    }
}
