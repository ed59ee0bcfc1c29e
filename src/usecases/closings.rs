//! Closing ended periods: each custom board's period, once it has ended
//! (by its reset or its `ends_at`), is marked closed exactly once, by
//! whichever instance gets there first, and what the close does is done
//! in the same transaction: a board's `period.closed` event; a league's
//! moves (every member's final rank, move and next tier) and its
//! `league.closed` event; and the rewards its bands grant (v4), with their
//! `reward.granted` event. Every instance runs it every second, so an idle
//! service still closes a period within a few seconds.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};
use sqlx::AnyConnection;

use crate::domain::{competition_ranks, Ladder, Movement, PeriodSelector, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::{ClosedPeriod, ClosingMember, EndedPeriod, Move, StoreError};
use crate::usecases::boards::BoardRef;
use crate::usecases::rankings::{self, Asker, PageRequest};
use crate::usecases::rewards::{self, Standings};
use crate::views::PeriodView;
use crate::webhooks::Event;

/// A period is closed this long after its end: a post accepted just
/// before the end commits a moment after it.
pub const CLOSE_AFTER_END_MS: i64 = 1_500;
/// The periods closed per round (the next round takes the rest).
const PER_ROUND: i64 = 100;
/// The entries a `period.closed` event carries.
const TOP: i64 = 10;

/// Periods whose close failed, with when each is tried next: one failing
/// period (a store error, a row its column refuses) is retried with
/// growing delays while every other period closes on time. Held by the
/// closing job of one instance; a period closed elsewhere meanwhile is
/// forgotten when it is no longer listed.
#[derive(Debug, Default)]
pub struct Retries {
    failing: HashMap<(i64, i64), Backoff>,
}

#[derive(Debug, Clone, Copy)]
struct Backoff {
    failures: u32,
    next_try: Timestamp,
}

/// The first retry of a failed close comes this soon, then twice as
/// late each time, up to `RETRY_MAX_MS`.
const RETRY_FIRST_MS: i64 = 1_000;
const RETRY_MAX_MS: i64 = 60_000;

impl Retries {
    fn due(&self, period: &EndedPeriod, now: Timestamp) -> bool {
        self.failing.get(&(period.board, period.period)).is_none_or(|backoff| backoff.next_try <= now)
    }

    fn failed(&mut self, period: &EndedPeriod, now: Timestamp) -> u32 {
        let backoff =
            self.failing.entry((period.board, period.period)).or_insert(Backoff { failures: 0, next_try: now });
        backoff.failures += 1;
        let delay = RETRY_FIRST_MS.saturating_mul(1 << (backoff.failures - 1).min(16)).min(RETRY_MAX_MS);
        backoff.next_try = now.plus_millis(delay);
        backoff.failures
    }

    /// Keeps only the failing periods still unclosed (`listed`).
    fn keep_listed(&mut self, listed: &[EndedPeriod]) {
        let listed: std::collections::HashSet<(i64, i64)> =
            listed.iter().map(|period| (period.board, period.period)).collect();
        self.failing.retain(|key, _| listed.contains(key));
    }

    /// How many periods are waiting for a retry.
    pub fn len(&self) -> usize {
        self.failing.len()
    }
}

/// What one round of the closing job did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub closed: usize,
    pub failed: usize,
}

/// Closes the periods that ended before `now` (less the margin), oldest
/// first; a period that fails is logged, counted
/// (`hiscore_job_failures_total{job="close_period"}`) and left to
/// `retries`, and the round goes on with the others.
pub async fn close_ended_periods(state: &AppState, now: Timestamp, retries: &mut Retries) -> Result<Round, ApiError> {
    // Room for the periods waiting for a retry beside a full round of the
    // others, so that failing periods never crowd out the rest.
    let limit = PER_ROUND + retries.len() as i64;
    let ended = state.store.unclosed_periods(now.plus_millis(-CLOSE_AFTER_END_MS), limit).await?;
    if (ended.len() as i64) < limit {
        retries.keep_listed(&ended);
    }
    let mut round = Round::default();
    let due: Vec<EndedPeriod> = ended.into_iter().filter(|period| retries.due(period, now)).collect();
    for period in due {
        match close(state, period, now).await {
            Ok(true) => round.closed += 1,
            Ok(false) => {}
            Err(error) => {
                round.failed += 1;
                let failures = retries.failed(&period, now);
                state.job_failures.with_label_values(&["close_period"]).inc();
                tracing::warn!(%error, board = period.board, period = period.period, failures, "closing a period failed; retried later");
            }
        }
    }
    Ok(round)
}

/// Closes `period` of a board now if it is not closed yet, once the
/// margin after its end has passed (a league places no one in a period
/// before the last one's moves are made).
pub async fn close_before(state: &AppState, board: i64, period: i64) -> Result<(), ApiError> {
    let Some(ended) = state.store.unclosed_period(board, period).await? else { return Ok(()) };
    let wait = ended.ends_at.millis() + CLOSE_AFTER_END_MS - Timestamp::now().millis();
    if wait > 0 {
        actix_web::rt::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
    }
    close(state, ended, Timestamp::now()).await?;
    Ok(())
}

/// What closing a period does.
enum Closing {
    Board {
        id: String,
        data: Value,
    },
    League {
        id: String,
        ladder: Ladder,
    },
    /// A deleted board's periods close without an event.
    Nothing,
}

async fn close(state: &AppState, ended: EndedPeriod, now: Timestamp) -> Result<bool, ApiError> {
    // Read before the transaction (a page read takes its own connection);
    // a change after it is what `period.amended` reports.
    let closing = match state.boards.by_number(ended.board) {
        // A partition's period closes with its board's, which tells.
        Some(board) if board.spec.partition_of.is_some() => Closing::Nothing,
        Some(board) if board.spec.league => match state.store.ladder(ended.board).await? {
            Some(row) => Closing::League { id: board.spec.id.clone(), ladder: row.ladder() },
            None => Closing::Nothing,
        },
        Some(board) => Closing::Board {
            id: board.spec.id.clone(),
            data: closed_data(state, BoardRef::Custom(board), ended).await?,
        },
        None => Closing::Nothing,
    };
    let mut tx = state.store.begin_write().await?;
    if !state.store.close_period(&mut tx, ended.board, ended.period, now).await? {
        return Ok(false);
    }
    let closed = |id, league| ClosedPeriod {
        board: ended.board,
        period: ended.period,
        board_id: id,
        league,
        starts_at: ended.starts_at,
        ends_at: ended.ends_at,
    };
    match closing {
        Closing::Board { id, data } => {
            state.store.enqueue_event(&mut tx, Event::PeriodClosed.as_str(), &data.to_string(), now).await?;
            rewards::grant_at_close(state, &mut tx, closed(&id, false), Standings::Board, now).await?;
        }
        Closing::League { id, ladder } => {
            let started = std::time::Instant::now();
            let (members, tiers) = make_moves(state, &mut tx, &ladder, ended).await?;
            let millis = started.elapsed().as_millis() as u64;
            tracing::info!(league = %id, period = ended.period, millis, "league moves made");
            let data = json!({"league": id, "period": period_view(ended), "tiers": tiers});
            state.store.enqueue_event(&mut tx, Event::LeagueClosed.as_str(), &data.to_string(), now).await?;
            rewards::grant_at_close(state, &mut tx, closed(&id, true), Standings::League(&members), now).await?;
        }
        Closing::Nothing => {}
    }
    tx.commit().await.map_err(StoreError::from)?;
    Ok(true)
}

fn period_view(ended: EndedPeriod) -> PeriodView {
    PeriodView { index: ended.period, start: Some(ended.starts_at), end: Some(ended.ends_at) }
}

/// A league's moves for a closed period, from each cohort's final ranks,
/// recorded in the closing transaction: the members in board order (what
/// the rewards are granted from), and per tier how many went up, down and
/// stayed.
async fn make_moves(
    state: &AppState,
    conn: &mut AnyConnection,
    ladder: &Ladder,
    ended: EndedPeriod,
) -> Result<(Vec<ClosingMember>, Vec<Value>), ApiError> {
    let started = std::time::Instant::now();
    let mut members = state.store.period_members(conn, ended.board, ended.period).await?;
    let read_ms = started.elapsed().as_millis() as u64;
    // Board order is rank-key order: ranks only tell keys apart.
    members.sort_unstable_by_key(|member| (member.rank_score.is_none(), member.rank_score));
    let moves = moves(ladder, &members);
    state.store.record_moves(conn, ended.board, ended.period, &moves).await?;
    tracing::debug!(read_ms, members = members.len(), "league moves read and written");
    let mut counts: BTreeMap<i64, [i64; 3]> = (0..ladder.tiers.len() as i64).map(|tier| (tier, [0; 3])).collect();
    for (member, step) in members.iter().zip(&moves) {
        let slot = match step.movement {
            "up" => 0,
            "down" => 1,
            _ => 2,
        };
        counts.entry(member.tier).or_default()[slot] += 1;
    }
    let tiers = counts
        .into_iter()
        .map(|(index, [up, down, stay])| json!({"index": index, "up": up, "down": down, "stay": stay}))
        .collect();
    Ok((members, tiers))
}

/// Each member's move, in `members`' order (in board order): ranked among
/// their cohort's shown entries; a member without one (banned, post
/// deleted) stays, without a rank.
fn moves(ladder: &Ladder, members: &[ClosingMember]) -> Vec<Move> {
    let mut cohorts: BTreeMap<(i64, i64), Vec<usize>> = BTreeMap::new();
    for (index, member) in members.iter().enumerate() {
        if member.rank_score.is_some() {
            cohorts.entry((member.tier, member.cohort)).or_default().push(index);
        }
    }
    let mut fates: Vec<Option<(i64, Movement)>> = vec![None; members.len()];
    for ((tier, _), indexes) in cohorts {
        let keys: Vec<i64> = indexes.iter().filter_map(|index| members[*index].rank_score).collect();
        let ranks = competition_ranks(&keys);
        let players = indexes.len() as i64;
        for (index, rank) in indexes.into_iter().zip(ranks) {
            fates[index] = Some((rank, ladder.movement(tier, rank, players)));
        }
    }
    members
        .iter()
        .zip(fates)
        .map(|(member, fate)| Move {
            user_id: member.user_id,
            movement: fate.map_or(Movement::Stay, |(_, movement)| movement).as_str(),
            next_tier: fate.map_or(member.tier, |(_, movement)| ladder.next_tier(member.tier, movement)),
        })
        .collect()
}

/// `period.closed`'s data: the board, the period, its player count and
/// its top entries. A board that keeps no ended periods may have dropped
/// the period already: then its count as recorded and no entries.
async fn closed_data(state: &AppState, board: BoardRef, ended: EndedPeriod) -> Result<Value, ApiError> {
    let selector = PeriodSelector::Index(ended.period);
    let page = match rankings::page(state, &board, selector, TOP, PageRequest::Offset(0), Asker::Server).await {
        Ok(rendered) => serde_json::from_slice::<Value>(&rendered.body).ok(),
        Err(error) if error.code() == ErrorCode::PeriodNotFound => None,
        Err(error) => return Err(error),
    };
    Ok(match page {
        Some(page) => json!({
            "board": board.id(),
            "period": page["period"],
            "players": page["total_players"],
            "top": page["entries"],
        }),
        None => json!({
            "board": board.id(),
            "period": period_view(ended),
            "players": ended.players,
            "top": [],
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(user_id: i64, tier: i64, cohort: i64, rank_score: Option<i64>) -> ClosingMember {
        ClosingMember { user_id, tier, cohort, rank_score }
    }

    #[test]
    fn a_failing_period_waits_longer_each_time_and_the_others_do_not() {
        let at = Timestamp::from_millis;
        let ended = |board| EndedPeriod { board, period: 1, starts_at: at(0), ends_at: at(1_000), players: 0 };
        let (failing, fine) = (ended(1), ended(2));
        let mut retries = Retries::default();
        assert_eq!(retries.failed(&failing, at(10_000)), 1);
        assert!(!retries.due(&failing, at(10_999)) && retries.due(&failing, at(11_000)));
        assert!(retries.due(&fine, at(10_000)));
        retries.failed(&failing, at(11_000));
        assert!(!retries.due(&failing, at(12_999)) && retries.due(&failing, at(13_000)));
        for _ in 0..20 {
            retries.failed(&failing, at(20_000));
        }
        assert!(retries.due(&failing, at(20_000 + RETRY_MAX_MS)), "the delay stops growing");
        // Closed elsewhere: no longer listed, forgotten.
        retries.keep_listed(&[fine]);
        assert_eq!(retries.len(), 0);
    }

    #[test]
    fn each_cohort_moves_by_its_own_ranks_and_ties_share_a_fate() {
        let ladder = Ladder { tiers: vec!["B".into(), "S".into(), "G".into()], cohort_size: 4, promote: 1, demote: 1 };
        let members = [
            // Tier 1, cohort 1: 90, 90, 50 (the two 90s tie for first).
            member(1, 1, 1, Some(-90)),
            member(2, 1, 1, Some(-90)),
            member(3, 1, 1, Some(-50)),
            // Tier 1, cohort 2: one player: up (rank 1 <= promote).
            member(4, 1, 2, Some(-10)),
            // Tier 0: the last stays (no tier below); tier 2: the first stays.
            member(5, 0, 1, Some(-5)),
            member(6, 0, 1, Some(-1)),
            member(7, 2, 1, Some(-100)),
            member(8, 2, 1, Some(-1)),
            // Banned at the close: no rank, keeps the tier.
            member(9, 1, 1, None),
        ];
        let moves = moves(&ladder, &members);
        let fates: Vec<_> = moves.iter().map(|m| (m.user_id, m.movement, m.next_tier)).collect();
        assert_eq!(
            fates,
            [
                (1, "up", 2),
                (2, "up", 2),
                (3, "down", 0),
                (4, "up", 2),
                (5, "up", 1),
                (6, "stay", 0),
                (7, "stay", 2),
                (8, "down", 1),
                (9, "stay", 1),
            ]
        );
    }
}
