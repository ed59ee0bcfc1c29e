//! `hiscore bench`: a validating load generator in the ISUCON tradition.
//!
//! It relies only on the HTTP contract (never on hiscore internals or the
//! generated dataset's passwords), drives a rising load of players and
//! viewers, checks every answer, and scores the run. See docs/bench.md for the
//! scenario and the score formula.

mod boards;
mod context;
mod families;
mod http;
mod leagues;
pub mod live;
mod model;
mod moderation;
mod pacer;
mod registration;
mod report;
mod reviews;
mod scenario;
mod stats;
mod threshold;
mod tournaments;
pub mod validate;
mod walks;
pub mod webhooks;

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use rand::distributions::{Alphanumeric, DistString};
use reqwest::Method;
use serde_json::json;

use self::context::{Context, Randomness};
use self::http::{shorten, Api};
use self::model::{Movements, PlayerModel};
use self::report::{ErrorCounts, Summary};
use self::stats::{Recorder, Severity};
pub use self::threshold::Threshold;
use self::validate::Board;
use self::walks::{full_walk, FULL_WALK_LIMIT};

/// `hiscore bench` on its own, to read its defaults (see [`BenchArgs::against`]).
#[derive(clap::Parser)]
#[command(name = "hiscore bench")]
struct BenchOnly {
    #[command(flatten)]
    args: BenchArgs,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Base URL of the server under test.
    #[arg(long)]
    pub target: String,
    /// Calls POST /api/admin/initialize with this token first.
    #[arg(long)]
    pub admin_token: Option<String>,
    /// Length of the load phase in seconds.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Virtual users added per load level.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Players for initialize.
    #[arg(long, default_value_t = 1_000)]
    pub users: i64,
    /// Score posts for initialize.
    #[arg(long, default_value_t = 10_000)]
    pub scores: i64,
    /// Seed for initialize.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the summary as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Answers slower than this (ms) are trivial errors.
    #[arg(long, default_value_t = 1_000)]
    pub slow_ms: u64,
    /// Request timeout (ms): a timeout is an application error.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// Seconds between load levels (default: duration / 8, at least 2).
    #[arg(long)]
    pub step_secs: Option<u64>,
    /// Register at most this many bench players; then players carry on as
    /// earlier ones (same account, same exact model), so a long run (a
    /// soak) holds its data size steady.
    #[arg(long)]
    pub max_players: Option<usize>,
    /// A latency bound over every request, e.g. 'p99<50ms', 'p50<=2ms',
    /// 'max<1s' (repeatable): the run fails when one is not met.
    #[arg(long = "threshold", value_parser = Threshold::parse)]
    pub thresholds: Vec<Threshold>,
    /// Seeds the scenario's own choices (scores, boards, what each virtual
    /// user does next), so that a run can be repeated; `--seed` seeds the
    /// dataset. Default: fresh randomness. (Which request the server
    /// answers first still varies from run to run.)
    #[arg(long)]
    pub scenario_seed: Option<u64>,
    /// The open model: requests leave at this many per second during the
    /// load, whatever the answers do, and latencies count from when each was
    /// due (coordinated omission corrected). Users still rise by level, as
    /// a pool to send from. Default: the closed loop.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub rate: Option<u32>,
    /// Measure the bench's own ceiling instead: only `GET /healthz`, from
    /// `concurrency` tasks, for `duration` seconds; no scenario, no score.
    #[arg(long)]
    pub ceiling: bool,
    /// A PEM file of a certificate authority to trust beside the system's
    /// roots, for a target behind a private CA (`SSL_CERT_FILE` replaces
    /// the system's roots instead).
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
}

impl BenchArgs {
    /// The command line's defaults against `target`; callers (tests, tools)
    /// set what they need on top (`BenchArgs { duration: 4, ..BenchArgs::against(url) }`).
    pub fn against(target: &str) -> Self {
        use clap::Parser as _;
        BenchOnly::parse_from(["hiscore bench", "--target", target]).args
    }
}

/// Points per successful request of each kind, and per error.
pub const POINTS_WRITE: i64 = 5;
pub const POINTS_LOGIN: i64 = 2;
pub const POINTS_READ: i64 = 1;
pub const PENALTY_APPLICATION: i64 = 50;
pub const PENALTY_TRIVIAL: i64 = 1;
/// Levels stop rising here: 16 × concurrency virtual users.
const MAX_LEVEL: u32 = 16;
/// Initialize slower than this is reported (trivial).
const SLOW_INITIALIZE: Duration = Duration::from_secs(30);

/// How the run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub summary: Summary,
    /// The last line: `score: N pass` or `score: 0 fail: …`.
    pub verdict: String,
}

pub async fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let recorder = Arc::new(Recorder::new());
    let timeout = Duration::from_millis(args.timeout_ms);
    let pacer = args.rate.map(|rate| Arc::new(pacer::Pacer::new(rate)));
    let slow = Duration::from_millis(args.slow_ms);
    let api = Api::new(&args.target, args.ca_file.as_deref(), Arc::clone(&recorder), timeout, slow, pacer)?;

    if args.ceiling {
        return Ok(ceiling(&api, &recorder, &args).await);
    }
    if let Some(token) = &args.admin_token {
        recorder.phase("initialize");
        initialize(&api, &args, token).await;
    }
    let run_id = Alphanumeric.sample_string(&mut rand::thread_rng(), 6);
    let custom_boards = match &args.admin_token {
        Some(token) if !recorder.failed() => boards::create(&api, token, &run_id).await,
        _ => Vec::new(),
    };
    let mut ctx = Context {
        api: api.clone(),
        recorder: Arc::clone(&recorder),
        deadline: Instant::now() + Duration::from_secs(args.duration),
        run_id,
        movements: Movements::default(),
        resident: HashMap::new(),
        full_walks: false,
        static_paths: Vec::new(),
        finished: Default::default(),
        max_players: args.max_players,
        registered: Default::default(),
        boards: custom_boards,
        admin_token: args.admin_token.clone(),
        moderated: Default::default(),
        randomness: Randomness::new(args.scenario_seed),
    };
    if !recorder.failed() {
        recorder.phase("quiet check");
        quiet_check(&mut ctx).await;
        boards::probe(&ctx, &mut ctx.randomness.stream()).await;
        // v4 board families, where the target serves custom boards.
        if let (Some(token), false) = (ctx.admin_token.as_deref(), ctx.boards.is_empty()) {
            if let Some(family) = families::create(&ctx, token).await {
                families::probe(&ctx, &mut ctx.randomness.stream(), &family).await;
            }
        }
        ctx.static_paths = discover_static(&api).await;
        // `--duration` is the load's: the checks before it do not count.
        ctx.deadline = Instant::now() + Duration::from_secs(args.duration);
    }
    let ctx = Arc::new(ctx);
    let level = if recorder.failed() { 0 } else { load(Arc::clone(&ctx), &args).await };
    let players = ctx.finished.lock().map(|f| f.clone()).unwrap_or_default();
    Ok(finish(&args, &recorder, level, &players))
}

/// Hammers the cheapest endpoint to find how many requests per second the
/// bench itself can drive (compare with the server's numbers under load).
async fn ceiling(api: &Api, recorder: &Arc<Recorder>, args: &BenchArgs) -> Outcome {
    let deadline = Instant::now() + Duration::from_secs(args.duration);
    let tasks: Vec<_> = (0..args.concurrency.max(1))
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    api.send("GET /healthz", api.request(Method::GET, "/healthz")).await;
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    let rate = recorder.requests() as f64 / args.duration.max(1) as f64;
    println!("ceiling: {rate:.0} requests/s on GET /healthz with {} connections", args.concurrency);
    finish(args, recorder, 0, &[])
}

async fn initialize(api: &Api, args: &BenchArgs, token: &str) {
    let body = json!({"users": args.users, "scores": args.scores, "seed": args.seed});
    let started = Instant::now();
    let request = api
        .request(Method::POST, "/api/admin/initialize")
        .bearer_auth(token)
        .json(&body)
        .timeout(Duration::from_secs(600));
    let Some(reply) = api.send("POST /api/admin/initialize", request).await else { return };
    let elapsed = started.elapsed();
    if reply.status != 200 {
        api.recorder.error(
            Severity::Critical,
            format!("initialize: expected 200, got {}: {}", reply.status, shorten(&reply.text)),
        );
        return;
    }
    eprintln!("initialize: {} players, {} scores in {:.2} s", args.users, args.scores, elapsed.as_secs_f64());
    if elapsed > SLOW_INITIALIZE {
        api.recorder.error(Severity::Trivial, format!("initialize took {:.1} s", elapsed.as_secs_f64()));
    }
}

/// Before any load: walks both boards by cursor and by offset and expects
/// them exactly right, learns the resident players, checks profile ranks
/// against the board, and sends a few deliberate bad requests.
async fn quiet_check(ctx: &mut Context) {
    let first =
        ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, "/api/rankings/best?limit=1")).await;
    let total_players = first.as_ref().and_then(|r| r.body["total_players"].as_i64()).unwrap_or(0);
    ctx.full_walks = total_players <= FULL_WALK_LIMIT;
    let max_pages = if ctx.full_walks { usize::MAX } else { 20 };
    let mut scores: HashMap<Board, Vec<(i64, i64)>> = HashMap::new();
    for board in Board::ALL {
        let Some(by_cursor) = full_walk(ctx, board.clone(), None, true, true, max_pages).await else { return };
        let Some(by_offset) = full_walk(ctx, board.clone(), None, false, true, max_pages).await else { return };
        let scores_of =
            |entries: &[validate::Entry]| -> Vec<(i64, i64)> { entries.iter().map(|e| (e.id, e.score)).collect() };
        let (by_cursor, by_offset) = (scores_of(&by_cursor), scores_of(&by_offset));
        if by_cursor != by_offset {
            ctx.critical(format!("the {board} board differs when walked by cursor and by offset on a quiet board"));
            return;
        }
        scores.insert(board, by_cursor);
    }
    let totals: HashMap<i64, i64> = scores.remove(&Board::Total).unwrap_or_default().into_iter().collect();
    ctx.resident = scores
        .remove(&Board::Best)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(id, best)| totals.get(&id).map(|total| (id, (best, *total))))
        .collect();

    // Profile ranks agree with the board exactly while nothing moves.
    let page =
        ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, "/api/rankings/best?limit=100")).await;
    if let Some(page) = page {
        let entries = page.body["entries"].as_array().cloned().unwrap_or_default();
        let ids: Vec<String> =
            entries.iter().filter_map(|e| e["user"]["id"].as_i64()).map(|id| id.to_string()).collect();
        if !ids.is_empty() {
            let path = format!("/api/users?ids={}", ids.join(","));
            if let Some(reply) = ctx.api.send("GET /api/users", ctx.api.request(Method::GET, &path)).await {
                let users = reply.body["users"].as_array().cloned().unwrap_or_default();
                for (entry, user) in entries.iter().zip(&users) {
                    if user["best_rank"] != entry["rank"] || user["best_score"] != entry["score"] {
                        ctx.critical(format!(
                            "player {}: profile says best {} rank {}, the board says {} rank {}",
                            entry["user"]["id"], user["best_score"], user["best_rank"], entry["score"], entry["rank"]
                        ));
                        break;
                    }
                }
            }
        }
    }
    let bad =
        ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, "/api/rankings/total?cursor=zzz")).await;
    if let Some(reply) = bad {
        ctx.expect("a bad cursor", &reply, 400, Some("invalid_cursor"));
    }
    let wrong = json!({"login_name": "nobody-at-all", "password": "wrong password"});
    if let Some(reply) =
        ctx.api.send("POST /api/sessions", ctx.api.request(Method::POST, "/api/sessions").json(&wrong)).await
    {
        ctx.expect("login of an unknown player", &reply, 401, Some("invalid_credentials"));
    }
}

/// `/` and the local scripts and styles it references, if it is HTML.
async fn discover_static(api: &Api) -> Vec<String> {
    let Some(reply) = api.send("GET /", api.request(Method::GET, "/")).await else { return Vec::new() };
    if reply.status != 200 || !reply.content_type.starts_with("text/html") {
        return Vec::new();
    }
    let mut paths = vec!["/".to_owned()];
    for attribute in ["src=\"/", "href=\"/"] {
        for (start, _) in reply.text.match_indices(attribute) {
            let rest = &reply.text[start + attribute.len() - 1..];
            if let Some(end) = rest.find('"') {
                let path = &rest[..end];
                if !path.starts_with("//") && !path.starts_with("/api") && !paths.iter().any(|p| p == path) {
                    paths.push(path.to_owned());
                }
            }
        }
    }
    paths
}

/// Runs the load: a level adds `concurrency` virtual users (one in three a
/// player, the rest viewers) every step while the last step was error-free.
/// Returns the level reached.
async fn load(ctx: Arc<Context>, args: &BenchArgs) -> u32 {
    let step = Duration::from_secs(args.step_secs.unwrap_or((args.duration / 8).max(2)));
    let mut tasks = Vec::new();
    if ctx.full_walks {
        tasks.push(tokio::spawn(scenario::walker(Arc::clone(&ctx))));
    }
    tasks.push(tokio::spawn(boards::archivist(Arc::clone(&ctx))));
    tasks.push(tokio::spawn(live::viewers(Arc::clone(&ctx))));
    if ctx.admin_token.is_some() {
        tasks.push(tokio::spawn(moderation::moderator(Arc::clone(&ctx))));
        tasks.push(tokio::spawn(reviews::reviewer(Arc::clone(&ctx))));
        tasks.push(tokio::spawn(leagues::commissioner(Arc::clone(&ctx))));
        tasks.push(tokio::spawn(tournaments::referee(Arc::clone(&ctx))));
    }
    let progress = tokio::spawn(progress(Arc::clone(&ctx)));
    if let Some(pacer) = &ctx.api.pacer {
        ctx.recorder.phase(format!("paced at {}/s", args.rate.unwrap_or_default()));
        pacer.start();
    }
    let mut level = 0;
    let mut workers = 0;
    let mut errors_before = 0;
    while ctx.running() {
        let errors_now = ctx.recorder.count(Severity::Application) + ctx.recorder.count(Severity::Critical);
        if level < MAX_LEVEL && (level == 0 || errors_now == errors_before) {
            level += 1;
            LEVEL.store(level, std::sync::atomic::Ordering::Relaxed);
            ctx.recorder.phase(format!("level {level}"));
            for _ in 0..args.concurrency.max(1) {
                let task = if workers % 3 == 0 {
                    tokio::spawn(scenario::player(Arc::clone(&ctx), workers))
                } else {
                    tokio::spawn(scenario::viewer(Arc::clone(&ctx)))
                };
                tasks.push(task);
                workers += 1;
            }
        }
        errors_before = errors_now;
        let remaining = ctx.deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(step.min(remaining).max(Duration::from_millis(10))).await;
    }
    for task in tasks {
        let _ = task.await;
    }
    progress.abort();
    if let Some(pacer) = &ctx.api.pacer {
        pacer.stop();
    }
    if !ctx.recorder.failed() {
        ctx.recorder.phase("final check");
        final_check(&ctx).await;
    }
    level
}

static LEVEL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A live status line: redrawn in place on a terminal, a line every 5 s otherwise.
async fn progress(ctx: Arc<Context>) {
    let terminal = std::io::stderr().is_terminal();
    let mut last_requests = 0;
    let mut tick = 0u64;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        tick += 1;
        let requests = ctx.recorder.requests();
        let line = format!(
            "{:>5.0}s  {:>7} req/s  level {:>2}  errors {}/{}/{} (critical/application/trivial)",
            ctx.recorder.elapsed().as_secs_f64(),
            requests - last_requests,
            LEVEL.load(std::sync::atomic::Ordering::Relaxed),
            ctx.recorder.count(Severity::Critical),
            ctx.recorder.count(Severity::Application),
            ctx.recorder.count(Severity::Trivial),
        );
        last_requests = requests;
        if terminal {
            eprint!("\r{line}");
        } else if tick.is_multiple_of(5) {
            eprintln!("{line}");
        }
    }
}

/// After the load, on a quiet board again: every bench player's aggregates
/// exactly as posted, and the boards exactly right.
async fn final_check(ctx: &Context) {
    let players: Vec<_> = ctx.finished.lock().map(|f| f.clone()).unwrap_or_default();
    let certain: Vec<_> = players.iter().filter(|p| !p.uncertain).collect();
    for chunk in certain.chunks(100) {
        let ids: Vec<String> = chunk.iter().map(|p| p.id.to_string()).collect();
        let path = format!("/api/users?ids={}", ids.join(","));
        let Some(reply) = ctx.api.send("GET /api/users", ctx.api.request(Method::GET, &path)).await else { continue };
        let users = reply.body["users"].as_array().cloned().unwrap_or_default();
        if users.len() != chunk.len() {
            ctx.critical(format!("final check: asked for {} players, got {}", chunk.len(), users.len()));
            return;
        }
        for (model, user) in chunk.iter().zip(&users) {
            let actual = (user["best_score"].as_i64(), user["total_score"].as_i64(), user["play_count"].as_i64());
            if actual != (Some(model.best), Some(model.total), Some(model.count))
                || user["best_at"].as_str() != model.best_at.as_deref()
            {
                ctx.critical(format!(
                    "final check: player {} is best/total/plays {actual:?} at {}, the bench posted {}/{}/{} at {:?}",
                    model.id, user["best_at"], model.best, model.total, model.count, model.best_at
                ));
                return;
            }
        }
    }
    if ctx.full_walks {
        for board in Board::ALL {
            if let Some(entries) = full_walk(ctx, board.clone(), None, true, true, usize::MAX).await {
                check_models_on(ctx, board, &entries, &certain);
            }
        }
    }
    boards::final_check(ctx, &players).await;
}

/// Every exactly known bench player is on a quiet built-in board at the
/// score the bench posted (recounted after its moderations), or absent
/// without a post.
fn check_models_on(ctx: &Context, board: Board, entries: &[validate::Entry], players: &[&PlayerModel]) {
    let shown: HashMap<i64, i64> = entries.iter().map(|entry| (entry.id, entry.score)).collect();
    for model in players {
        let expected = match board {
            Board::Total => model.total,
            _ => model.best,
        };
        let wanted = (model.count > 0).then_some(expected);
        if shown.get(&model.id).copied() != wanted {
            ctx.critical(format!(
                "final check: the {board} board shows player {} at {:?}, the bench expects {wanted:?}",
                model.id,
                shown.get(&model.id)
            ));
            return;
        }
    }
}

/// The first threshold the run's latencies do not meet, said in words.
fn missed_threshold(thresholds: &[Threshold], recorder: &Recorder) -> Option<String> {
    thresholds.iter().find_map(|threshold| {
        let measured = recorder.overall_latency_ms(threshold.measure);
        (!threshold.met_by(measured)).then(|| format!("threshold {threshold} not met: {measured:.2} ms"))
    })
}

fn finish(args: &BenchArgs, recorder: &Recorder, level: u32, players: &[PlayerModel]) -> Outcome {
    let counts = ErrorCounts {
        critical: recorder.count(Severity::Critical),
        application: recorder.count(Severity::Application),
        trivial: recorder.count(Severity::Trivial),
    };
    let (reads, writes, logins) = recorder.tallies();
    let requests = recorder.requests();
    let raw = writes as i64 * POINTS_WRITE + logins as i64 * POINTS_LOGIN + reads as i64 * POINTS_READ
        - counts.application as i64 * PENALTY_APPLICATION
        - counts.trivial as i64 * PENALTY_TRIVIAL;
    let too_many_application_errors = counts.application > (requests / 100).max(20);
    let messages = recorder.messages();
    let verdict = if counts.critical > 0 {
        let first = messages.iter().find(|m| m.severity == Severity::Critical).map_or("", |m| m.text.as_str());
        format!("score: 0 fail: {first}")
    } else if too_many_application_errors {
        format!("score: 0 fail: too many application errors ({} of {requests} requests)", counts.application)
    } else if let Some(missed) = missed_threshold(&args.thresholds, recorder) {
        format!("score: 0 fail: {missed}")
    } else {
        format!("score: {} pass", raw.max(0))
    };
    let pass = verdict.ends_with("pass");
    let endpoints = recorder.endpoints();
    let summary = Summary {
        pass,
        score: if pass { raw.max(0) } else { 0 },
        load_level: level,
        requests,
        errors: counts.clone(),
        unavailable: recorder.unavailable_count(),
        posts_applied: players.iter().filter(|p| !p.uncertain).map(|p| p.count as u64).sum(),
        players_uncertain: players.iter().filter(|p| p.uncertain).count() as u64,
        endpoints: Summary::endpoint_rows(&endpoints),
        messages: messages.clone(),
        timeline: recorder.timeline(),
        phases: recorder.phases(),
    };
    eprintln!();
    println!("{}", report::table(&endpoints));
    println!("{}", report::error_summary(&messages, &counts));
    println!(
        "requests: {requests}, load level reached: {level}, successful writes/logins/reads: {writes}/{logins}/{reads}"
    );
    println!(
        "unavailable (503, retried or resolved): {}, posts applied: {}, players with an unknown outcome: {}",
        summary.unavailable, summary.posts_applied, summary.players_uncertain
    );
    if let Some(path) = &args.json {
        match serde_json::to_string_pretty(&summary) {
            Ok(json) => write_file(path, &json),
            Err(error) => eprintln!("could not encode the summary: {error}"),
        }
    }
    if let Some(path) = &args.html {
        write_file(path, &report::html(&summary, &endpoints, &args.target));
    }
    println!("{verdict}");
    Outcome { summary, verdict }
}

fn write_file(path: &std::path::Path, contents: &str) {
    if let Err(error) = std::fs::write(path, contents) {
        eprintln!("could not write {}: {error}", path.display());
    }
}
