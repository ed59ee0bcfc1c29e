//! Rate limits (the contract's 429 with `Retry-After`): login attempts per
//! account and per client address (brute force), registrations per address,
//! and score posts per player (a game cannot post a hundred scores a second).
//!
//! In process they are `governor` GCRA limiters; with Redis they are shared
//! fixed-window counters (one `INCR` script per check), so a brute force
//! spread over several instances still hits one limit. If Redis fails, the
//! in-process limiter decides. A limit of 0 turns that limit off.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota};

use crate::error::ApiError;
use crate::redis::RedisClient;

/// What is being limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    LoginPerAccount,
    LoginPerAddress,
    RegistrationPerAddress,
    PostsPerPlayer,
    /// A plausibility bound: the least time between two posts of one player.
    PostInterval,
}

impl Limit {
    fn name(self) -> &'static str {
        match self {
            Self::LoginPerAccount => "login-account",
            Self::LoginPerAddress => "login-address",
            Self::RegistrationPerAddress => "register-address",
            Self::PostsPerPlayer => "posts-player",
            Self::PostInterval => "post-interval",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Self::LoginPerAccount => "too many login attempts for this account; wait a little",
            Self::LoginPerAddress => "too many login attempts from this address; wait a little",
            Self::RegistrationPerAddress => "too many registrations from this address; wait a little",
            Self::PostsPerPlayer => "scores are arriving faster than a game can produce them; slow down",
            Self::PostInterval => "a game cannot end this soon after the last one; wait a little",
        }
    }
}

/// How many events a limit allows per window.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub events: u32,
    pub per: Duration,
}

struct Limiter {
    rate: Rate,
    local: DefaultKeyedRateLimiter<String>,
}

pub struct RateLimits {
    limiters: Vec<(Limit, Limiter)>,
    redis: Option<Arc<RedisClient>>,
}

impl RateLimits {
    /// Limits with `events == 0` are off.
    pub fn new(rates: &[(Limit, Rate)], redis: Option<Arc<RedisClient>>) -> Self {
        let limiters = rates
            .iter()
            .filter_map(|(limit, rate)| {
                let events = NonZeroU32::new(rate.events)?;
                // Events spread over the window, with the whole window's
                // worth allowed at once (a burst).
                let quota = Quota::with_period(rate.per / rate.events)?.allow_burst(events);
                Some((*limit, Limiter { rate: *rate, local: DefaultKeyedRateLimiter::keyed(quota) }))
            })
            .collect();
        Self { limiters, redis }
    }

    /// `Ok` when the event may happen now; 429 with the wait otherwise.
    pub async fn check(&self, limit: Limit, key: &str) -> Result<(), ApiError> {
        let Some((_, limiter)) = self.limiters.iter().find(|(l, _)| *l == limit) else { return Ok(()) };
        if let Some(redis) = &self.redis {
            let window = redis.keys().rate_window(limit.name(), key);
            match redis.count_in_window(&window, limiter.rate.per).await {
                Ok((count, remaining)) if count > i64::from(limiter.rate.events) => {
                    return Err(ApiError::too_many_requests(limit.message(), remaining));
                }
                Ok(_) => return Ok(()),
                Err(error) => tracing::debug!(%error, "rate limit falls back to this instance"),
            }
        }
        limiter.local.check_key(&key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
            ApiError::too_many_requests(limit.message(), wait)
        })
    }

    /// Deletes every shared window keyed by an erased player's login key or
    /// id (their names carry them); failures are only logged.
    pub async fn forget_player(&self, login_key: &str, user_id: i64) {
        let Some(redis) = &self.redis else { return };
        let player_keys = [login_key.to_owned(), user_id.to_string(), format!("#{user_id}")];
        let windows: Vec<String> = self
            .limiters
            .iter()
            .flat_map(|(limit, _)| player_keys.iter().map(|key| redis.keys().rate_window(limit.name(), key)))
            .collect();
        if let Err(error) = redis.delete_many(&windows).await {
            tracing::warn!(%error, "an erased player's rate windows could not be deleted");
        }
    }

    /// Forgets keys that are back to a full allowance (memory stays bounded).
    pub fn shrink(&self) {
        for (_, limiter) in &self.limiters {
            limiter.local.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[tokio::test]
    async fn the_event_past_the_limit_waits_and_others_are_unaffected() {
        let limits =
            RateLimits::new(&[(Limit::LoginPerAccount, Rate { events: 3, per: Duration::from_secs(60) })], None);
        for _ in 0..3 {
            limits.check(Limit::LoginPerAccount, "alice").await.unwrap();
        }
        let error = limits.check(Limit::LoginPerAccount, "alice").await.unwrap_err();
        assert_eq!(error.code(), ErrorCode::TooManyRequests);
        limits.check(Limit::LoginPerAccount, "bob").await.unwrap();
        // A limit that is not configured never limits.
        for _ in 0..100 {
            limits.check(Limit::PostsPerPlayer, "alice").await.unwrap();
        }
    }

    #[tokio::test]
    async fn the_window_reopens() {
        let limits =
            RateLimits::new(&[(Limit::PostsPerPlayer, Rate { events: 2, per: Duration::from_millis(100) })], None);
        limits.check(Limit::PostsPerPlayer, "p").await.unwrap();
        limits.check(Limit::PostsPerPlayer, "p").await.unwrap();
        assert!(limits.check(Limit::PostsPerPlayer, "p").await.is_err());
        tokio::time::sleep(Duration::from_millis(120)).await;
        limits.check(Limit::PostsPerPlayer, "p").await.unwrap();
    }
}
