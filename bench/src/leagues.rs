//! With an admin token, the run plays a league (v3) against its own model
//! of cohorts and moves, and receives the service's webhooks: a league of
//! its own resets every 5 seconds; its players post each round; the bench
//! predicts every placement (tier, which players share a cohort) and every
//! move at the close (the contract's rule on the round's scores), and
//! checks the answers, the members' histories and the `league.closed`
//! deliveries, each signed and each round's arriving once.
//!
//! A server that does not send to the bench's address (`WEBHOOK_ALLOW_PRIVATE`
//! is off) still has its league checked; its deliveries are skipped, said
//! on stderr.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng;
use reqwest::Method;
use serde_json::{json, Value};

use super::context::Context;
use super::registration::own_account;
use super::stats::Work;
use super::webhooks::Receiver;

const PLAYERS: usize = 7;
const COHORT_SIZE: usize = 3;
const TIERS: [&str; 3] = ["Bronze", "Silver", "Gold"];
/// The best of a cohort moves up, the worst down.
const PROMOTE: i64 = 1;
const DEMOTE: i64 = 1;
/// How long after a period's end the bench waits for its close to show.
const CLOSE_WAIT_MS: i64 = 20_000;
/// Rounds played at most (each up to 5 s and its close).
const ROUNDS: usize = 3;

/// The contract's move rule: the tier after a round.
fn next_tier(tier: usize, rank: i64, players: i64) -> usize {
    if rank <= PROMOTE && tier + 1 < TIERS.len() {
        tier + 1
    } else if rank > players - DEMOTE && tier > 0 {
        tier - 1
    } else {
        tier
    }
}

/// Competition ranks of scores already sorted best first.
fn ranks(scores: &[i64]) -> Vec<i64> {
    let mut ranks: Vec<i64> = Vec::with_capacity(scores.len());
    for (index, score) in scores.iter().enumerate() {
        let rank = if index > 0 && scores[index - 1] == *score { ranks[index - 1] } else { index as i64 + 1 };
        ranks.push(rank);
    }
    ranks
}

/// A period or a tier where the contract leaves its shape open (a
/// member's history, `league.closed`'s data, a member's tier): its index,
/// or an object with one.
fn index_of(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value["index"].as_i64())
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn millis_of(text: &Value) -> Option<i64> {
    // RFC 3339 UTC with milliseconds, as the service writes it.
    let text = text.as_str()?;
    let (date, time) = text.trim_end_matches('Z').split_once('T')?;
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (parts.next()??, parts.next()??, parts.next()??);
    let mut clock = time.split(':');
    let (hour, minute) = (clock.next()?.parse::<i64>().ok()?, clock.next()?.parse::<i64>().ok()?);
    let seconds: f64 = clock.next()?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + (seconds * 1000.0).round() as i64)
}

pub async fn commissioner(ctx: Arc<Context>) {
    let Some(token) = ctx.admin_token.clone() else { return };
    let league = format!("league-{}", ctx.run_id.to_ascii_lowercase());
    let receiver = subscribe(&ctx, &token).await;
    let definition = json!({"id": league, "name": "Bench league", "tiers": TIERS, "cohort_size": COHORT_SIZE,
        "promote": PROMOTE, "demote": DEMOTE, "reset": "*/5 * * * * *", "archive_periods": 20});
    let request = ctx.api.request(Method::POST, "/api/admin/leagues").bearer_auth(&token).json(&definition);
    let Some(reply) = ctx.api.send("POST /api/admin/leagues", request).await else { return };
    if reply.status == 404 {
        eprintln!("leagues are not served: the league scenario is skipped");
        return;
    }
    if reply.retried && reply.status == 409 {
        // Created by the attempt whose answer was lost (a failover): its
        // first period was not seen, so the league is not played.
        return eprintln!("the league's creation answered 503 then 409: the league scenario is skipped");
    }
    if !ctx.expect("create a league", &reply, 201, None) {
        return;
    }
    let mut players = Vec::new();
    for i in 0..PLAYERS {
        let Some(player) = register(&ctx, i).await else { return };
        players.push(player);
    }
    let mut tiers = vec![0_usize; PLAYERS];
    let mut end = reply.body["period"]["end"].clone();
    let mut rounds = Vec::new();
    let mut rng = ctx.randomness.stream();
    for _ in 0..ROUNDS {
        if !ctx.running() {
            break;
        }
        // Start just after a reset, so that the round fits in its period.
        let Some(at) = millis_of(&end) else { return ctx.critical(format!("a league period without an end: {end}")) };
        tokio::time::sleep(Duration::from_millis((at - now_ms()).max(0) as u64 + 100)).await;
        let mut placed: Vec<(usize, i64, String, i64)> = Vec::new(); // (player, period, cohort, score)
                                                                     // Ties are likely: scores from a narrow range.
        for (index, (id, token)) in players.iter().enumerate() {
            let score: i64 = rng.gen_range(0..4);
            let path = format!("/api/leagues/{league}/scores");
            let request = ctx.api.request(Method::POST, &path).bearer_auth(token).json(&json!({"score": score}));
            let Some(reply) = ctx.api.send("POST /api/leagues/{id}/scores", request).await else { return };
            if !ctx.expect("a league post", &reply, 201, None) {
                return;
            }
            ctx.recorder.succeeded(Work::Write);
            if reply.body["tier"]["index"].as_u64() != Some(tiers[index] as u64) {
                ctx.critical(format!("player {id} placed in {}, its tier is {}", reply.body["tier"], tiers[index]));
            }
            let (Some(period), Some(cohort)) = (reply.body["period"]["index"].as_i64(), reply.body["cohort"].as_str())
            else {
                return ctx.critical(format!("a league post without its period or cohort: {}", reply.body));
            };
            end = reply.body["period"]["end"].clone();
            placed.push((index, period, cohort.to_owned(), score));
        }
        let period = placed[0].1;
        if placed.iter().any(|p| p.1 != period) {
            // A slow server: the round spanned a reset, and the moves of a
            // period only some of it counted in are not this model's.
            eprintln!("a league round spanned a reset: the rest of the league scenario is skipped");
            break;
        }
        if !check_placements(&ctx, &placed, &tiers) {
            return;
        }
        // The close: each cohort's moves by the rule.
        let mut cohorts: HashMap<&str, Vec<(usize, i64)>> = HashMap::new();
        for (index, _, cohort, score) in &placed {
            cohorts.entry(cohort).or_default().push((*index, *score));
        }
        let mut expected = tiers.clone();
        let mut movements = [""; PLAYERS];
        for members in cohorts.values_mut() {
            members.sort_by_key(|member| std::cmp::Reverse(member.1));
            let scores: Vec<i64> = members.iter().map(|m| m.1).collect();
            for ((index, _), rank) in members.iter().zip(ranks(&scores)) {
                let after = next_tier(tiers[*index], rank, scores.len() as i64);
                expected[*index] = after;
                movements[*index] = match after.cmp(&tiers[*index]) {
                    std::cmp::Ordering::Greater => "up",
                    std::cmp::Ordering::Less => "down",
                    std::cmp::Ordering::Equal => "stay",
                };
            }
        }
        // The contract closes a period within 5 s of its end; a database
        // failing over (the chaos runs) may take longer: each member is
        // asked until their history shows the period, for up to 20 s.
        let Some(at) = millis_of(&end) else { return };
        tokio::time::sleep(Duration::from_millis((at - now_ms()).max(0) as u64 + 2_000)).await;
        let give_up = at + CLOSE_WAIT_MS;
        for (index, (id, _)) in players.iter().enumerate() {
            let path = format!("/api/leagues/{league}/members/{id}");
            let reply = loop {
                let request = ctx.api.request(Method::GET, &path);
                let Some(reply) = ctx.api.send("GET /api/leagues/{id}/members/{user_id}", request).await else {
                    return;
                };
                if !ctx.expect("a league member", &reply, 200, None) {
                    return;
                }
                if index_of(&reply.body["history"][0]["period"]) == Some(period) || now_ms() > give_up {
                    break reply;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            let last = &reply.body["history"][0];
            let shown =
                (index_of(&last["period"]), last["movement"].as_str(), index_of(&reply.body["tier"]).map(|t| t as u64));
            let wanted = (Some(period), Some(movements[index]), Some(expected[index] as u64));
            if shown != wanted {
                ctx.critical(format!(
                    "league member {id} after period {period}: (period, movement, tier) {shown:?}, the rule gives {wanted:?}"
                ));
            }
        }
        let mut counts = vec![[0_i64; 3]; TIERS.len()];
        for (index, movement) in movements.iter().enumerate() {
            let slot = match *movement {
                "up" => 0,
                "down" => 1,
                _ => 2,
            };
            counts[tiers[index]][slot] += 1;
        }
        rounds.push((period, counts));
        tiers = expected;
    }
    if let Some(receiver) = receiver {
        check_deliveries(&ctx, &receiver, &league, &rounds).await;
    }
    let request = ctx.api.request(Method::DELETE, &format!("/api/admin/leagues/{league}")).bearer_auth(&token);
    if let Some(reply) = ctx.api.send("DELETE /api/admin/leagues/{id}", request).await {
        // A retry after a lost answer finds it gone (404).
        if !(reply.retried && reply.status == 404) {
            ctx.expect("delete the league", &reply, 204, None);
        }
    }
}

/// Players of a tier fill its cohorts in order of their first posts.
fn check_placements(ctx: &Context, placed: &[(usize, i64, String, i64)], tiers: &[usize]) -> bool {
    let mut by_tier: HashMap<usize, Vec<&str>> = HashMap::new();
    for (index, _, cohort, _) in placed {
        by_tier.entry(tiers[*index]).or_default().push(cohort);
    }
    for (tier, cohorts) in by_tier {
        for (a, first) in cohorts.iter().enumerate() {
            for (b, second) in cohorts.iter().enumerate() {
                if (first == second) != (a / COHORT_SIZE == b / COHORT_SIZE) {
                    ctx.critical(format!(
                        "tier {tier}'s cohorts in posting order are {cohorts:?}: not filled {COHORT_SIZE} by {COHORT_SIZE}"
                    ));
                    return false;
                }
            }
        }
    }
    true
}

/// Registers a webhook for `league.closed` at a receiver of the bench's
/// own; `None` when the server does not send here.
async fn subscribe(ctx: &Context, token: &str) -> Option<Receiver> {
    let receiver = Receiver::start().await.ok()?;
    let body = json!({"url": receiver.url(), "events": ["league.closed"]});
    let request = ctx.api.request(Method::POST, "/api/admin/webhooks").bearer_auth(token).json(&body);
    let reply = ctx.api.send("POST /api/admin/webhooks", request).await?;
    match reply.status {
        201 => {
            receiver.set_secret(reply.body["secret"].as_str().unwrap_or_default());
            Some(receiver)
        }
        404 | 422 => {
            eprintln!(
                "the server sends no webhooks to {} ({}): deliveries are not checked",
                receiver.url(),
                reply.status
            );
            None
        }
        _ => {
            ctx.expect("register a webhook", &reply, 201, None);
            None
        }
    }
}

/// Every delivery is signed; each judged round's `league.closed` came,
/// once by id, with the moves the rule gives.
async fn check_deliveries(ctx: &Context, receiver: &Receiver, league: &str, rounds: &[(i64, Vec<[i64; 3]>)]) {
    // The last round's event is sent a moment after its close: wait for it
    // (the sender reads the outbox twice a second; a retry comes 4 s later).
    let arrived = |period: i64| {
        receiver.received().iter().any(|r| r.answered == 200 && index_of(&r.json()["data"]["period"]) == Some(period))
    };
    let waited = std::time::Instant::now();
    while !rounds.iter().all(|(period, _)| arrived(*period)) && waited.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let received = receiver.received();
    if let Some(bad) = received.iter().find(|r| r.verified != Some(true)) {
        ctx.critical(format!("a webhook delivery whose signature does not verify: {bad:?}"));
    }
    let mut seen: HashMap<String, Value> = HashMap::new();
    for delivery in received.iter().filter(|r| r.answered == 200) {
        seen.insert(delivery.id.clone(), delivery.json()["data"].clone());
    }
    for (period, counts) in rounds {
        let arrived: Vec<&Value> = seen
            .values()
            .filter(|data| data["league"] == league && index_of(&data["period"]) == Some(*period))
            .collect();
        if arrived.len() != 1 {
            ctx.critical(format!(
                "league.closed for period {period} of {league} arrived {} times (by id)",
                arrived.len()
            ));
            continue;
        }
        let tiers: Vec<[i64; 3]> = arrived[0]["tiers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                [t["up"].as_i64().unwrap_or(-1), t["down"].as_i64().unwrap_or(-1), t["stay"].as_i64().unwrap_or(-1)]
            })
            .collect();
        if tiers != *counts {
            ctx.critical(format!(
                "league.closed for period {period}: (up, down, stay) per tier {tiers:?}, the rule gives {counts:?}"
            ));
        }
    }
}

async fn register(ctx: &Context, index: usize) -> Option<(i64, String)> {
    let (login_name, password) = (format!("l{index}{}", ctx.run_id), format!("league-{}", ctx.run_id));
    own_account(ctx, "register (league player)", &login_name, &password).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_and_the_ranks() {
        assert_eq!(ranks(&[3, 3, 1]), [1, 1, 3]);
        assert_eq!(next_tier(0, 1, 3), 1);
        assert_eq!(next_tier(0, 3, 3), 0);
        assert_eq!(next_tier(1, 3, 3), 0);
        assert_eq!(next_tier(2, 1, 3), 2);
        assert_eq!(millis_of(&json!("1970-01-02T00:00:01.500Z")), Some(86_401_500));
        assert_eq!((index_of(&json!(4)), index_of(&json!({"index": 4, "start": null}))), (Some(4), Some(4)));
        assert_eq!(millis_of(&json!("2026-12-02T06:12:14.000Z")), Some(1_796_191_934_000));
    }
}
