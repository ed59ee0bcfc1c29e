//! Final standings: once a custom board's period has ended, every listed
//! entry's position and rank are written to its row (see
//! `store/standings.rs`), so that pages, around-me and friends boards of
//! ended periods are seeks, not counts over the period.
//!
//! Every instance runs the job; a claim on the period's row keeps two from
//! writing the same period at once, and one that dies mid-way leaves a claim
//! that goes stale. The writing is chunked (a writer never waits long behind
//! it) and idempotent: the standings are recorded only if nothing changed
//! the period between the claim and the last chunk, else written again.

use crate::domain::Timestamp;
use crate::store::{StandingKey, Store, StoreResult};

/// How long after its end a period is left alone: a post accepted just
/// before the end commits a moment after it (one that commits later still
/// makes the standings be written again; this only saves the work).
const SETTLE_AFTER_END_MS: i64 = 2_000;
/// After this long, a claim is taken to be of an instance that stopped.
const CLAIM_LEASE_MS: i64 = 10 * 60 * 1000;
/// Entries written per statement.
const CHUNK: usize = 1_000;

/// The ended periods whose standings do not hold (just ended, or changed
/// by moderation since), unclaimed or with a stale claim, as of `now`.
pub(super) async fn unsettled_periods(store: &Store, now: Timestamp) -> StoreResult<Vec<(i64, i64)>> {
    store.periods_without_standings(now.plus_millis(-SETTLE_AFTER_END_MS), now.plus_millis(-CLAIM_LEASE_MS)).await
}

/// Writes one period's final standings, claimed at `now`; `false` when
/// another instance holds the claim, or the period changed meanwhile (the
/// next round writes them again).
pub async fn settle_period(store: &Store, board: i64, period: i64, now: Timestamp) -> StoreResult<bool> {
    settle_in_chunks(store, board, period, now, CHUNK).await
}

/// [`settle_period`], `chunk` entries a statement.
pub(crate) async fn settle_in_chunks(
    store: &Store,
    board: i64,
    period: i64,
    now: Timestamp,
    chunk: usize,
) -> StoreResult<bool> {
    let Some(changes) = store.claim_standings(board, period, now, now.plus_millis(-CLAIM_LEASE_MS)).await? else {
        return Ok(false);
    };
    store.clear_hidden_standings(board, period).await?;
    let mut position: i64 = 0;
    // The last entry written: where the next chunk starts, and its score
    // and rank (the next chunk's entries tied with it share that rank).
    let mut last: Option<(StandingKey, i64)> = None;
    loop {
        let keys = {
            let mut conn = store.conn().await?;
            store.standing_keys_after(&mut conn, board, period, last.map(|(key, _)| key), chunk as i64).await?
        };
        let Some(&final_key) = keys.last() else { break };
        let tie = last.map(|(key, rank)| (key.ranked(), rank));
        store.write_standings(board, period, last.map(|(key, _)| key), final_key, position, tie).await?;
        let final_rank = rank_of_last(&keys, position, tie);
        position += keys.len() as i64;
        last = Some((final_key, final_rank));
        if keys.len() < chunk {
            break;
        }
        tokio::task::yield_now().await;
    }
    store.settle_standings(board, period, now, changes).await
}

/// The competition rank of the last of `keys`, a run of the board from
/// `first_position` whose entry before had (ranked values, rank) `tie`.
fn rank_of_last(keys: &[StandingKey], first_position: i64, tie: Option<([i64; 3], i64)>) -> i64 {
    let Some(last) = keys.last() else { return tie.map_or(0, |(_, rank)| rank) };
    match keys.iter().position(|key| key.ties(last)) {
        Some(0) if tie.is_some_and(|(ranked, _)| ranked == last.ranked()) => tie.map_or(0, |(_, rank)| rank),
        Some(index) => first_position + index as i64 + 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(user_id: i64, rank_score: i64) -> StandingKey {
        StandingKey { user_id, rank_score, rank_sub1: 0, rank_sub2: 0, achieved_at: 0 }
    }

    #[test]
    fn the_last_of_a_run_ranks_with_its_ties() {
        let run = [key(1, -10), key(2, -9), key(3, -9)];
        assert_eq!(rank_of_last(&run, 0, None), 2, "two tied second");
        assert_eq!(rank_of_last(&run, 100, Some(([-11, 0, 0], 100))), 102);
        let tied = [key(4, -9), key(5, -9)];
        assert_eq!(rank_of_last(&tied, 3, Some(([-9, 0, 0], 2))), 2, "tied with the entry before the run");
        assert_eq!(rank_of_last(&tied, 3, Some(([-10, 0, 0], 1))), 4);
        let apart = [StandingKey { rank_sub1: 1, ..key(6, -9) }];
        assert_eq!(rank_of_last(&apart, 5, Some(([-9, 0, 0], 2))), 6, "a worse subscore is no tie");
    }
}
