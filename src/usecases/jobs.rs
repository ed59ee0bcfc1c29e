//! What every instance does on a timer, beside the requests: started by
//! `startup` with the server (on `Background`) and stopped with it. Each
//! job is a loop around use cases; a failed round is logged and the next
//! one tries again.

use std::collections::HashMap;
use std::time::Duration;

use actix_web::web::Data;

use crate::boards::Period;
use crate::domain::Timestamp;
use crate::state::AppState;
use crate::usecases::{boards, closings, standings, webhooks};

/// How often periods are recorded and archives trimmed.
const KEEPER_INTERVAL: Duration = Duration::from_secs(1);
/// Every how many keeper ticks the rows of deleted boards are looked for
/// (a board deleted here is purged on the next such tick, or after a
/// restart if this instance stopped before).
const DELETED_BOARDS_INTERVAL: u64 = 5;

/// Every second: records the periods that began (so that every period has
/// its row with its bounds), and after a reset deletes the periods no
/// longer kept; at start and then every `DELETED_BOARDS_INTERVAL`, deletes
/// what deleted boards left. Rows go a few hundred per statement so that
/// posts never wait behind it.
pub async fn keep_periods(state: Data<AppState>) {
    let mut recorded: HashMap<i64, i64> = HashMap::new();
    let mut interval = actix_web::rt::time::interval(KEEPER_INTERVAL);
    let mut ticks: u64 = 0;
    loop {
        interval.tick().await;
        if ticks.is_multiple_of(DELETED_BOARDS_INTERVAL) {
            if let Err(error) = boards::purge_deleted_boards(&state).await {
                tracing::warn!(%error, "deleting the rows of deleted boards failed");
            }
        }
        ticks += 1;
        let now = Timestamp::now();
        for board in state.boards.all_ranked() {
            if board.spec.reset.is_none() {
                continue;
            }
            let current = board.period_at(now);
            let number = board.spec.number;
            let began = match recorded.get(&number) {
                Some(index) if *index >= current.index => continue,
                // Only what began since the last tick: O(1) a tick on a
                // board that resets every second, whatever it keeps.
                Some(index) => board.periods_after(*index),
                None => board.recent_periods(),
            };
            if let Err(error) = state.store.record_periods(number, &began).await {
                tracing::warn!(%error, number, "recording a board's periods failed");
                continue;
            }
            recorded.insert(number, current.index);
            let oldest_kept = current.index - board.spec.archive_periods;
            if let Err(error) = boards::purge_expired(&state, number, oldest_kept).await {
                tracing::warn!(%error, number, "deleting a board's expired periods failed");
            }
        }
    }
}

/// How often ended periods are looked for.
const SETTLE_INTERVAL: Duration = Duration::from_secs(2);
/// Every `SETTLE_INTERVAL`: writes the standings of the ended periods that
/// lack them (just ended, or changed by moderation since).
pub async fn settle_ended_periods(state: Data<AppState>) {
    let mut interval = actix_web::rt::time::interval(SETTLE_INTERVAL);
    loop {
        interval.tick().await;
        let periods = match standings::unsettled_periods(&state.store, Timestamp::now()).await {
            Ok(periods) => periods,
            Err(error) => {
                tracing::warn!(%error, "looking for ended periods to settle failed");
                continue;
            }
        };
        for (board, period) in periods {
            match standings::settle_period(&state.store, board, period, Timestamp::now()).await {
                Ok(settled) => tracing::debug!(board, period, settled, "final standings"),
                Err(error) => tracing::warn!(%error, board, period, "writing a period's final standings failed"),
            }
        }
    }
}

/// Every second: are the boards in Redis still built, and did another
/// instance replace the data (initialize)? Then this instance's caches and
/// local index describe old data. The database's generation is the truth;
/// the copy in Redis (which readers of cached user rows compare with) is
/// raised to it, so a restarted or flushed Redis catches up.
pub async fn watch_shared_state(state: Data<AppState>) {
    let Some(redis) = state.redis.clone() else { return };
    let key = redis.keys().data_generation();
    let mut generation = None;
    let mut catalog = None;
    let mut interval = actix_web::rt::time::interval(Duration::from_secs(1));
    loop {
        interval.tick().await;
        // Boards created, renamed or deleted on another instance.
        match state.store.catalog_version().await {
            Ok(now) => {
                if catalog.is_some_and(|seen| seen != now) {
                    if let Err(error) = boards::reload_catalog(&state).await {
                        tracing::warn!(%error, "reloading the board catalog");
                    }
                }
                catalog = Some(now);
            }
            Err(error) => tracing::warn!(%error, "reading the board catalog's version"),
        }
        state.ranks.check_shared().await;
        let Ok(now) = state.store.data_generation().await else { continue };
        if let Err(error) = redis.raise(&key, now).await {
            tracing::debug!(%error, "the data generation could not be raised in Redis");
        }
        if generation.is_some_and(|seen| seen != now) {
            state.caches.reset(now);
            if let Err(error) = boards::reload_catalog(&state).await {
                tracing::warn!(%error, "reloading the board catalog after an initialize elsewhere");
            }
            if let Err(error) = state.ranks.warm_up(false).await {
                tracing::warn!(%error, "reloading after an initialize elsewhere");
            }
        }
        generation = Some(now);
    }
}

/// Idempotency keys are kept twice as long as the contract's 24 hours.
const IDEMPOTENCY_KEY_RETENTION_MS: i64 = 48 * 3600 * 1000;
/// How long the delivery log keeps a delivered or failed delivery (and
/// the payload it sent): docs/WEBHOOKS.md says so.
const DELIVERY_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;
/// Deliveries deleted per statement.
const DELIVERY_PURGE_CHUNK: i64 = 500;
const JANITOR_INTERVAL: Duration = Duration::from_secs(600);

/// Now and then: deletes expired sessions, old idempotency keys, old
/// webhook deliveries (a log that would otherwise grow with every event)
/// and rewards claimed more than 90 days ago (a chunk of each per round),
/// and lets the rate limiters forget keys back at a full allowance.
pub async fn purge_expired_regularly(state: Data<AppState>) {
    let mut interval = actix_web::rt::time::interval(JANITOR_INTERVAL);
    loop {
        interval.tick().await;
        state.limits.shrink();
        let now = crate::domain::Timestamp::now();
        match state.store.purge_expired(now, now.plus_millis(-IDEMPOTENCY_KEY_RETENTION_MS)).await {
            Ok(purged) => tracing::debug!(purged, "janitor"),
            Err(error) => tracing::warn!(%error, "janitor failed"),
        }
        let deliveries_before = now.plus_millis(-DELIVERY_RETENTION_MS);
        match state.store.purge_deliveries(deliveries_before, DELIVERY_PURGE_CHUNK).await {
            Ok(purged) => tracing::debug!(purged, "old webhook deliveries deleted"),
            Err(error) => tracing::warn!(%error, "deleting old webhook deliveries failed"),
        }
        let claimed_before = now.plus_millis(-super::rewards::CLAIMED_KEPT_MS);
        match state.store.purge_claimed_rewards(claimed_before, DELIVERY_PURGE_CHUNK).await {
            Ok(purged) => tracing::debug!(purged, "rewards claimed long ago deleted"),
            Err(error) => tracing::warn!(%error, "deleting rewards claimed long ago failed"),
        }
    }
}

/// How often ended periods are looked for at least (another instance may
/// have recorded one this instance's clocks do not know).
const CLOSE_INTERVAL_MS: i64 = 1_000;

/// Every second, and the moment the margin after a period's end (as this
/// instance's clocks know it) has passed: closes the periods that ended
/// (see `usecases::closings`). Waking at the moment rather than on the
/// next tick takes up to a second off a `league.closed`.
pub async fn close_ended_periods(state: Data<AppState>) {
    let mut retries = closings::Retries::default();
    loop {
        actix_web::rt::time::sleep(until_next_close(&state, Timestamp::now())).await;
        match closings::close_ended_periods(&state, Timestamp::now(), &mut retries).await {
            Ok(round) if round.closed > 0 => tracing::debug!(closed = round.closed, "periods closed"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "looking for ended periods to close failed"),
        }
    }
}

/// How long until the closing job looks again: a second, or less when the
/// margin after a period's end passes sooner (the period in force's end,
/// or its start: the end of the period before, which may be in its
/// margin still).
fn until_next_close(state: &AppState, now: Timestamp) -> Duration {
    // The wall clock and the timer's clock may disagree by a few ms: wake
    // a little after the moment rather than a little before it.
    const SLACK_MS: i64 = 5;
    let periods = state.boards.all().iter().map(|board| board.period_at(now)).collect::<Vec<_>>();
    let due = next_close_due(&periods, now) + SLACK_MS;
    Duration::from_millis(u64::try_from(due - now.millis()).unwrap_or(0))
}

/// When (ms) the closing job looks next, given the periods in force.
fn next_close_due(periods: &[Period], now: Timestamp) -> i64 {
    periods
        .iter()
        .flat_map(|period| [Some(period.start), period.end])
        .flatten()
        .map(|end| end.millis() + closings::CLOSE_AFTER_END_MS)
        .filter(|due| *due > now.millis())
        .fold(now.millis() + CLOSE_INTERVAL_MS, i64::min)
}

/// How often the outbox is read for due deliveries.
const DELIVERY_INTERVAL: Duration = Duration::from_millis(500);

/// Twice a second: sends the due webhook deliveries (`usecases::webhooks`).
pub async fn deliver_webhooks(state: Data<AppState>) {
    let outbox = webhooks::Outbox::default();
    let mut interval = actix_web::rt::time::interval(DELIVERY_INTERVAL);
    loop {
        interval.tick().await;
        if let Err(error) = webhooks::deliver_due(&state, &outbox).await {
            tracing::warn!(%error, "reading the webhook outbox failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A period that ended 0.8 s ago is still in its margin: the job looks
    /// when the margin has passed, not a second later; else in a second.
    #[test]
    fn the_closing_job_looks_when_a_margin_passes() {
        let at = Timestamp::from_millis;
        let margin = closings::CLOSE_AFTER_END_MS;
        let now = at(100_000);
        let just_ended = Period { index: 3, start: at(99_200), end: Some(at(200_000)) };
        assert_eq!(next_close_due(&[just_ended], now), 99_200 + margin);
        let endless = Period { index: 0, start: at(10_000), end: None };
        assert_eq!(next_close_due(&[endless, just_ended], now), 99_200 + margin);
        let long_ago = Period { index: 4, start: at(90_000), end: Some(at(200_000)) };
        assert_eq!(next_close_due(&[endless, long_ago], now), 100_000 + CLOSE_INTERVAL_MS);
    }
}
