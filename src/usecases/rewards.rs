//! Rewards (v4): granted at the close of a period, in the closing
//! transaction, so exactly once whatever number of instances close and
//! whichever of them dies mid-close (its transaction never commits); then
//! listed and claimed by the player, or by a game server for them.
//!
//! The standings at the close decide: a board's listed entries in board
//! order with their competition ranks among the period's players; a
//! league's members ranked in their cohorts (bands apply per cohort). The
//! first band an entry matches is its reward; a close grants at most
//! [`Rewards::MAX_GRANTS`], bands in order until then.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sqlx::AnyConnection;

use super::boards::{catalog_rewards, resolve_custom};
use crate::domain::{cohort_id, competition_ranks, PeriodSelector, Rewards, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::{ClaimState, ClosedPeriod, ClosingMember, GrantRow, GrantedBand, NewGrant, StandingKey};
use crate::views::{PeriodView, RewardList, RewardView};
use crate::webhooks::Event;

/// A claimed reward is kept this long after its claim.
pub const CLAIMED_KEPT_MS: i64 = 90 * 24 * 3_600_000;
/// Entries read per statement while a close ranks a board.
const CHUNK: i64 = 1_000;

/// What a close ranks: a board's listed entries, or a league's members
/// (in board order; `rank_score` none for a member without a shown entry).
pub enum Standings<'a> {
    Board,
    League(&'a [ClosingMember]),
}

/// Grants `closed`'s rewards in the closing transaction `tx`, and emits
/// `reward.granted` when there is at least one; how many were granted.
pub async fn grant_at_close(
    state: &AppState,
    tx: &mut AnyConnection,
    closed: ClosedPeriod<'_>,
    standings: Standings<'_>,
    now: Timestamp,
) -> Result<usize, ApiError> {
    let rewards = catalog_rewards(&state.store.rewards_of(tx, closed.board).await?);
    if rewards.is_empty() {
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let mut grants = match standings {
        Standings::Board => board_grants(state, tx, &rewards, closed).await?,
        Standings::League(members) => league_grants(&rewards, members),
    };
    // Bands in order, each in board order, until the most a close grants.
    grants.sort_by_key(|(position, grant)| (grant.band, *position));
    grants.truncate(Rewards::MAX_GRANTS);
    let grants: Vec<NewGrant> = grants.into_iter().map(|(_, grant)| grant).collect();
    if grants.is_empty() {
        return Ok(0);
    }
    let bands: Vec<GrantedBand> = rewards
        .bands()
        .iter()
        .enumerate()
        .filter(|(index, _)| grants.iter().any(|grant| grant.band == *index as i64))
        .map(|(index, band)| GrantedBand { band: index as i64, reward: band.reward.clone() })
        .collect();
    state.store.record_grants(tx, closed, &bands, &grants, now).await?;
    let owner = if closed.league { "league" } else { "board" };
    let period = PeriodView { index: closed.period, start: Some(closed.starts_at), end: Some(closed.ends_at) };
    let data = json!({owner: closed.board_id, "period": period, "grants": grants.len()});
    state.store.enqueue_event(tx, Event::RewardGranted.as_str(), &data.to_string(), now).await?;
    let millis = started.elapsed().as_millis() as u64;
    tracing::info!(board = closed.board_id, period = closed.period, grants = grants.len(), millis, "rewards granted");
    Ok(grants.len())
}

/// A board's grants with each entry's position: its listed entries read in
/// board order, a chunk at a time, no further than the worst rank that can
/// still be granted (see [`Rewards::last_rank_to_read`]).
async fn board_grants(
    state: &AppState,
    tx: &mut AnyConnection,
    rewards: &Rewards,
    closed: ClosedPeriod<'_>,
) -> Result<Vec<(i64, NewGrant)>, ApiError> {
    let players = state.store.period_state(tx, closed.board, closed.period).await?.map_or(0, |period| period.players);
    let mut grants = Vec::new();
    let mut granted = vec![0; rewards.bands().len()];
    let mut position = 0;
    let mut previous: Option<(StandingKey, i64)> = None;
    loop {
        let last_rank = rewards.last_rank_to_read(&granted, players);
        if last_rank == 0 {
            return Ok(grants);
        }
        let after = previous.map(|(key, _)| key);
        let keys = state.store.standing_keys_after(tx, closed.board, closed.period, after, CHUNK).await?;
        for key in &keys {
            let rank = match previous {
                Some((before, rank)) if before.ties(key) => rank,
                _ => position + 1,
            };
            if rank > last_rank {
                return Ok(grants);
            }
            if let Some(band) = rewards.band_of(rank, players) {
                let grant = NewGrant { user_id: key.user_id, band: band as i64, rank, tier: None, cohort: None };
                grants.push((position, grant));
                granted[band] += 1;
            }
            previous = Some((*key, rank));
            position += 1;
        }
        if (keys.len() as i64) < CHUNK {
            break;
        }
    }
    Ok(grants)
}

/// A league's grants: each member with a shown entry ranked in their
/// cohort, among the cohort's ranked members.
fn league_grants(rewards: &Rewards, members: &[ClosingMember]) -> Vec<(i64, NewGrant)> {
    let mut cohorts: BTreeMap<(i64, i64), Vec<usize>> = BTreeMap::new();
    for (index, member) in members.iter().enumerate() {
        if member.rank_score.is_some() {
            cohorts.entry((member.tier, member.cohort)).or_default().push(index);
        }
    }
    let mut grants = Vec::new();
    for ((tier, cohort), indexes) in cohorts {
        let keys: Vec<i64> = indexes.iter().filter_map(|index| members[*index].rank_score).collect();
        let players = indexes.len() as i64;
        for (index, rank) in indexes.into_iter().zip(competition_ranks(&keys)) {
            if let Some(band) = rewards.band_of(rank, players) {
                let user_id = members[index].user_id;
                let grant = NewGrant { user_id, band: band as i64, rank, tier: Some(tier), cohort: Some(cohort) };
                grants.push((index as i64, grant));
            }
        }
    }
    grants
}

/// `status` as a list asks for it: `unclaimed` (default), `claimed`, `all`.
pub fn claim_state(raw: Option<&str>) -> Result<ClaimState, ApiError> {
    match raw {
        None | Some("unclaimed") => Ok(ClaimState::Unclaimed),
        Some("claimed") => Ok(ClaimState::Claimed),
        Some("all") => Ok(ClaimState::All),
        Some(_) => Err(ErrorCode::InvalidStatus.into()),
    }
}

/// A player's rewards, oldest grant first.
pub async fn player_list(
    state: &AppState,
    user_id: i64,
    claimed: ClaimState,
    after: i64,
    limit: i64,
) -> Result<RewardList, ApiError> {
    let rows = state.store.player_rewards(user_id, claimed, after, limit + 1).await?;
    Ok(list(rows, limit))
}

/// Claims a player's reward (again: the same answer); 404
/// `reward_not_found` for another player's or none.
pub async fn claim(state: &AppState, user_id: i64, id: i64) -> Result<RewardView, ApiError> {
    let row = state.store.claim_reward(user_id, id, Timestamp::now()).await?;
    row.map(view).ok_or_else(|| ErrorCode::RewardNotFound.into())
}

/// A board's (or league's) grants of one period, for operators.
pub async fn period_list(
    state: &AppState,
    id: &str,
    league: bool,
    period: PeriodSelector,
    after: i64,
    limit: i64,
) -> Result<RewardList, ApiError> {
    let board = match league {
        false => resolve_custom(state, id).await?,
        true => super::boards::find_custom(state, id)
            .await?
            .filter(|board| board.spec.league)
            .ok_or(ErrorCode::LeagueNotFound)?,
    };
    let period = match period {
        PeriodSelector::Current => board.period_at(Timestamp::now()).index,
        PeriodSelector::Index(index) => index,
    };
    let rows = state.store.period_grants(board.spec.number, period, after, limit + 1).await?;
    Ok(list(rows, limit))
}

fn list(mut rows: Vec<GrantRow>, limit: i64) -> RewardList {
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next_after = if has_more { rows.last().map(|row| row.id) } else { None };
    RewardList { rewards: rows.into_iter().map(view).collect(), next_after }
}

pub fn view(row: GrantRow) -> RewardView {
    let league = row.league != 0;
    RewardView {
        id: row.id,
        user_id: row.user_id,
        board: (!league).then(|| row.board_id.clone()),
        league: league.then_some(row.board_id),
        period: PeriodView { index: row.period, start: Some(row.starts_at), end: Some(row.ends_at) },
        rank: row.final_rank,
        reward: serde_json::from_str::<Value>(&row.reward).unwrap_or_else(|_| json!({})),
        granted_at: row.granted_at,
        claimed_at: row.claimed_at,
        tier: row.tier,
        cohort: match (row.tier, row.cohort) {
            (Some(tier), Some(cohort)) => Some(cohort_id(row.period, tier, cohort)),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn league_bands_apply_within_each_cohort() {
        let rewards = Rewards::parse(Some(&json!([
            {"ranks": [1, 1], "reward": {"gold": 1}},
            {"top_percent": 50, "reward": {"silver": 1}}
        ])))
        .unwrap();
        let member = |user_id, cohort, rank_score| ClosingMember { user_id, tier: 0, cohort, rank_score };
        // Board order; cohort 1: 90, 90, 50, 10; cohort 2: 70, 60; one unranked.
        let members = [
            member(1, 1, Some(-90)),
            member(2, 1, Some(-90)),
            member(5, 2, Some(-70)),
            member(6, 2, Some(-60)),
            member(3, 1, Some(-50)),
            member(4, 1, Some(-10)),
            member(8, 2, Some(-40)),
            member(9, 2, Some(-30)),
            member(7, 1, None),
        ];
        let fates: Vec<(i64, i64, i64)> =
            league_grants(&rewards, &members).iter().map(|(_, g)| (g.user_id, g.band, g.rank)).collect();
        // The two 90s share rank 1 (gold); 50 is rank 3 of 4: 75 %, none.
        // Cohort 2: 70 gold, 60 is rank 2 of 4: 50 %, silver.
        assert_eq!(fates, [(1, 0, 1), (2, 0, 1), (5, 0, 1), (6, 1, 2)]);
    }
}
