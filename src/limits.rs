//! Rate limits (the contract's 429 with `Retry-After`): login attempts per
//! client address, failed logins per account and per (account, address)
//! (brute force), registrations per address, and score posts per player (a
//! game cannot post a hundred scores a second).
//!
//! In process they are `governor` GCRA limiters, or fixed windows for the
//! failure limits (an attempt is counted before the password is checked,
//! so concurrent guesses cannot all slip under the limit, and given back
//! when it was right); with Redis they are shared fixed-window counters
//! (one `INCR` script per check), so a brute force spread over several
//! instances still hits one limit. If Redis fails, the in-process limiter
//! decides. A limit of 0 turns that limit off.
//!
//! The addresses an account logged in from are remembered for 30 days
//! ([`RateLimits::remember`]): while strangers' failures hold an account's
//! limit, its owner still logs in from those (see `usecases::accounts`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota};

use crate::config::RateSettings;
use crate::error::ApiError;
use crate::redis::RedisClient;

/// What is being limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Failed logins of an account from addresses it never logged in from.
    LoginPerAccount,
    /// Failed logins of an account from one address.
    LoginPerAccountAddress,
    /// Login attempts from an address, to any account.
    LoginPerAddress,
    RegistrationPerAddress,
    PostsPerPlayer,
    /// Posts with one server key (for any players).
    PostsPerKey,
    /// A plausibility bound: the least time between two posts of one player.
    PostInterval,
    /// Wrong admin tokens from an address.
    AdminPerAddress,
    /// A player's own renames: each one moves the stamps of every board
    /// and drops every instance's cached names and pages.
    RenamesPerPlayer,
}

/// Every limit with its rate, from the settings (the admin token's is fixed).
pub fn rates(settings: &RateSettings) -> Vec<(Limit, Rate)> {
    let minute = Duration::from_secs(60);
    vec![
        (Limit::LoginPerAccount, Rate { events: settings.rate_login_per_account, per: minute }),
        (Limit::LoginPerAccountAddress, Rate { events: settings.rate_login_per_account_address, per: minute }),
        (Limit::LoginPerAddress, Rate { events: settings.rate_login_per_address, per: minute }),
        // An operator mistypes a token a few times, a guesser needs far more.
        (Limit::AdminPerAddress, Rate { events: settings.rate_admin_per_address, per: minute }),
        (Limit::RegistrationPerAddress, Rate { events: settings.rate_register_per_address, per: minute }),
        (Limit::PostsPerPlayer, Rate { events: settings.rate_posts_per_player, per: Duration::from_secs(1) }),
        (Limit::PostsPerKey, Rate { events: settings.rate_posts_per_key, per: Duration::from_secs(1) }),
        (Limit::RenamesPerPlayer, Rate { events: settings.rate_renames_per_player, per: Duration::from_secs(3600) }),
        // One post per interval, no burst.
        (
            Limit::PostInterval,
            Rate {
                events: u32::from(settings.min_post_interval_ms > 0),
                per: Duration::from_millis(settings.min_post_interval_ms),
            },
        ),
    ]
}

impl Limit {
    pub const ALL: [Limit; 9] = [
        Self::LoginPerAccount,
        Self::LoginPerAccountAddress,
        Self::LoginPerAddress,
        Self::RegistrationPerAddress,
        Self::PostsPerPlayer,
        Self::PostsPerKey,
        Self::PostInterval,
        Self::AdminPerAddress,
        Self::RenamesPerPlayer,
    ];

    /// A fixed name: keys in Redis and a metric label.
    pub fn name(self) -> &'static str {
        match self {
            Self::LoginPerAccount => "login-account",
            Self::LoginPerAccountAddress => "login-account-address",
            Self::LoginPerAddress => "login-address",
            Self::RegistrationPerAddress => "register-address",
            Self::PostsPerPlayer => "posts-player",
            Self::PostsPerKey => "posts-key",
            Self::PostInterval => "post-interval",
            Self::AdminPerAddress => "admin-address",
            Self::RenamesPerPlayer => "renames-player",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Self::LoginPerAccount => {
                "too many failed logins for this account; wait a little, or log in from an address you used before"
            }
            Self::LoginPerAccountAddress => "too many failed logins for this account from this address; wait a little",
            Self::LoginPerAddress => "too many login attempts from this address; wait a little",
            Self::RegistrationPerAddress => "too many registrations from this address; wait a little",
            Self::PostsPerPlayer => "scores are arriving faster than a game can produce them; slow down",
            Self::PostsPerKey => "too many posts with this server key; slow down",
            Self::PostInterval => "a game cannot end this soon after the last one; wait a little",
            Self::AdminPerAddress => "too many wrong admin tokens from this address; wait a little",
            Self::RenamesPerPlayer => "too many renames; a display name can change a few times an hour",
        }
    }

    /// Whether an event can be given back ([`RateLimits::refund`]): the
    /// failure limits count every attempt and return the successful ones.
    fn refundable(self) -> bool {
        matches!(self, Self::LoginPerAccount | Self::LoginPerAccountAddress | Self::AdminPerAddress)
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
    local: LocalLimiter,
}

/// How a limit counts in process.
enum LocalLimiter {
    /// Events spread over the window, with a whole window's worth at once.
    Spread(DefaultKeyedRateLimiter<String>),
    /// Fixed windows, whose events can be given back.
    Windows(Windows),
}

/// How long an address counts as one an account logged in from.
const KNOWN_ADDRESS_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// Known addresses kept per account in Redis (the latest ones).
const KNOWN_ADDRESSES_PER_ACCOUNT: usize = 100;
/// Known (account, address) pairs kept in process at most; beyond, those
/// older than half their time are forgotten, or all of them (their owners
/// then wait out a lock like anyone).
const KNOWN_ADDRESSES_KEPT: usize = 100_000;

pub struct RateLimits {
    limiters: Vec<(Limit, Limiter)>,
    redis: Option<Arc<RedisClient>>,
    /// (account, address) → when it stops counting as known, in process.
    known: Mutex<HashMap<String, Instant>>,
}

impl RateLimits {
    /// Limits with `events == 0` are off.
    pub fn new(rates: &[(Limit, Rate)], redis: Option<Arc<RedisClient>>) -> Self {
        let limiters = rates
            .iter()
            .filter_map(|(limit, rate)| {
                let events = NonZeroU32::new(rate.events)?;
                let local = if limit.refundable() {
                    LocalLimiter::Windows(Windows::default())
                } else {
                    let quota = Quota::with_period(rate.per / rate.events)?.allow_burst(events);
                    LocalLimiter::Spread(DefaultKeyedRateLimiter::keyed(quota))
                };
                Some((*limit, Limiter { rate: *rate, local }))
            })
            .collect();
        Self { limiters, redis, known: Mutex::default() }
    }

    /// `Ok` when the event may happen now; 429 with the wait otherwise.
    pub async fn check(&self, limit: Limit, key: &str) -> Result<(), ApiError> {
        let Some((_, limiter)) = self.limiters.iter().find(|(l, _)| *l == limit) else { return Ok(()) };
        if let Some(redis) = &self.redis {
            let window = redis.keys().rate_window(limit.name(), key);
            match redis.count_in_window(&window, limiter.rate.per).await {
                Ok((count, remaining)) if count > i64::from(limiter.rate.events) => {
                    return Err(ApiError::too_many_requests(limit.message(), remaining, limit.name()));
                }
                Ok(_) => return Ok(()),
                Err(error) => tracing::debug!(%error, "rate limit falls back to this instance"),
            }
        }
        match &limiter.local {
            LocalLimiter::Spread(local) => local.check_key(&key.to_owned()).map_err(|not_until| {
                let wait =
                    not_until.wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
                ApiError::too_many_requests(limit.message(), wait, limit.name())
            }),
            LocalLimiter::Windows(windows) => match windows.count(key, limiter.rate.per) {
                (count, remaining) if count > limiter.rate.events => {
                    Err(ApiError::too_many_requests(limit.message(), remaining, limit.name()))
                }
                _ => Ok(()),
            },
        }
    }

    /// Gives back an event `check` counted (a login whose password was
    /// right is no guess), on the limits that can; the others ignore it.
    pub async fn refund(&self, limit: Limit, key: &str) {
        let Some((_, limiter)) = self.limiters.iter().find(|(l, _)| *l == limit) else { return };
        let LocalLimiter::Windows(windows) = &limiter.local else { return };
        if let Some(redis) = &self.redis {
            match redis.uncount_in_window(&redis.keys().rate_window(limit.name(), key)).await {
                Ok(()) => return,
                Err(error) => tracing::debug!(%error, "rate limit falls back to this instance"),
            }
        }
        windows.uncount(key);
    }

    /// Whether `account` logged in from `address` in the last 30 days.
    pub async fn is_known(&self, account: &str, address: &str) -> bool {
        if let Some(redis) = &self.redis {
            match redis.is_current_member(&redis.keys().known_addresses(account), address).await {
                Ok(known) => return known,
                Err(error) => tracing::debug!(%error, "known addresses fall back to this instance"),
            }
        }
        let known = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        known.get(&format!("{account} {address}")).is_some_and(|until| *until > Instant::now())
    }

    /// Remembers that `account` logged in from `address`.
    pub async fn remember(&self, account: &str, address: &str) {
        if let Some(redis) = &self.redis {
            let known = redis.keys().known_addresses(account);
            match redis.remember_member(&known, address, KNOWN_ADDRESS_TTL, KNOWN_ADDRESSES_PER_ACCOUNT).await {
                Ok(()) => return,
                Err(error) => tracing::debug!(%error, "known addresses fall back to this instance"),
            }
        }
        let mut known = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if known.len() >= KNOWN_ADDRESSES_KEPT {
            let now = Instant::now();
            known.retain(|_, until| *until > now + KNOWN_ADDRESS_TTL / 2);
            if known.len() >= KNOWN_ADDRESSES_KEPT {
                known.clear();
            }
        }
        known.insert(format!("{account} {address}"), Instant::now() + KNOWN_ADDRESS_TTL);
    }

    /// The key of [`Limit::LoginPerAccountAddress`] for `account` from
    /// `address`. With Redis, the address is noted under the account for as
    /// long as such a window can be open, so that erasure finds the account's
    /// windows without scanning the keyspace.
    pub async fn account_address_key(&self, account: &str, address: &str) -> String {
        let limiter = self.limiters.iter().find(|(limit, _)| *limit == Limit::LoginPerAccountAddress);
        if let (Some(redis), Some((_, limiter))) = (&self.redis, limiter) {
            let failed_from = redis.keys().failed_login_addresses(account);
            if let Err(error) = redis.add_to_set(&failed_from, address, limiter.rate.per).await {
                tracing::debug!(%error, "the address of a login attempt could not be noted");
            }
        }
        format!("{account} {address}")
    }

    /// Deletes everything the limits hold of an erased player: the windows
    /// keyed by their login key or id, by (account, address), and the
    /// addresses they logged in from; in process and in Redis (where each
    /// is found by name, never by a scan). Failures are only logged (the
    /// windows expire by themselves).
    pub async fn forget_player(&self, login_key: &str, user_id: i64) {
        let player_keys = [login_key.to_owned(), user_id.to_string(), format!("#{user_id}")];
        let of_account = format!("{login_key} ");
        for (_, limiter) in &self.limiters {
            if let LocalLimiter::Windows(windows) = &limiter.local {
                windows.forget(|key| player_keys.iter().any(|k| k == key) || key.starts_with(&of_account));
            }
        }
        self.known
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .retain(|key, _| !key.starts_with(&of_account));
        let Some(redis) = &self.redis else { return };
        let failed_from = redis.keys().failed_login_addresses(login_key);
        let addresses = redis.set_members(&failed_from).await.unwrap_or_else(|error| {
            tracing::warn!(%error, "an erased player's login addresses could not be read");
            Vec::new()
        });
        let mut keys: Vec<String> = self
            .limiters
            .iter()
            .flat_map(|(limit, _)| player_keys.iter().map(|key| redis.keys().rate_window(limit.name(), key)))
            .collect();
        let from_address = |address: &String| format!("{login_key} {address}");
        keys.extend(
            addresses
                .iter()
                .map(|address| redis.keys().rate_window(Limit::LoginPerAccountAddress.name(), &from_address(address))),
        );
        keys.extend([failed_from, redis.keys().known_addresses(login_key)]);
        if let Err(error) = redis.delete_many(&keys).await {
            tracing::warn!(%error, "an erased player's rate windows could not be deleted");
        }
    }

    /// Keys held in process (for `/metrics`: they must stay bounded).
    pub fn tracked_keys(&self) -> usize {
        let limiters: usize = self
            .limiters
            .iter()
            .map(|(_, limiter)| match &limiter.local {
                LocalLimiter::Spread(local) => local.len(),
                LocalLimiter::Windows(windows) => windows.len(),
            })
            .sum();
        limiters + self.known.lock().map_or(0, |known| known.len())
    }

    /// Forgets keys that are back to a full allowance (memory stays bounded).
    pub fn shrink(&self) {
        for (_, limiter) in &self.limiters {
            match &limiter.local {
                LocalLimiter::Spread(local) => local.retain_recent(),
                LocalLimiter::Windows(windows) => windows.shrink(),
            }
        }
        let now = Instant::now();
        self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|_, until| *until > now);
    }
}

/// Fixed-window counters in process: key → (events, when the window closes).
#[derive(Default)]
struct Windows(Mutex<HashMap<String, (u32, Instant)>>);

impl Windows {
    /// Counts an event: (events in this window, time until it closes).
    fn count(&self, key: &str, per: Duration) -> (u32, Duration) {
        let now = Instant::now();
        let mut windows = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let window = windows.entry(key.to_owned()).or_insert((0, now + per));
        if window.1 <= now {
            *window = (0, now + per);
        }
        window.0 += 1;
        (window.0, window.1 - now)
    }

    fn uncount(&self, key: &str) {
        let mut windows = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(window) = windows.get_mut(key) {
            window.0 = window.0.saturating_sub(1);
        }
    }

    fn len(&self) -> usize {
        self.0.lock().map_or(0, |windows| windows.len())
    }

    /// Drops the windows whose keys `forgotten` picks.
    fn forget(&self, forgotten: impl Fn(&str) -> bool) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|key, _| !forgotten(key));
    }

    /// Drops closed windows.
    fn shrink(&self) {
        let now = Instant::now();
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|_, (_, closes)| *closes > now);
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
    async fn an_erased_account_leaves_no_window_or_address_in_process() {
        let rate = Rate { events: 1, per: Duration::from_secs(60) };
        let limits = RateLimits::new(&[(Limit::LoginPerAccountAddress, rate)], None);
        let key = limits.account_address_key("alice", "10.0.0.1").await;
        limits.check(Limit::LoginPerAccountAddress, &key).await.unwrap();
        assert!(limits.check(Limit::LoginPerAccountAddress, &key).await.is_err());
        limits.remember("alice", "10.0.0.1").await;
        limits.remember("alicia", "10.0.0.1").await;

        limits.forget_player("alice", 7).await;
        assert!(!limits.is_known("alice", "10.0.0.1").await);
        assert!(limits.is_known("alicia", "10.0.0.1").await, "only the erased account is forgotten");
        limits.check(Limit::LoginPerAccountAddress, &key).await.unwrap();
    }

    #[tokio::test]
    async fn a_refunded_attempt_is_not_counted_and_known_addresses_are_per_account() {
        let limits =
            RateLimits::new(&[(Limit::LoginPerAccount, Rate { events: 2, per: Duration::from_secs(60) })], None);
        for _ in 0..5 {
            limits.check(Limit::LoginPerAccount, "alice").await.unwrap();
            limits.refund(Limit::LoginPerAccount, "alice").await;
        }
        limits.check(Limit::LoginPerAccount, "alice").await.unwrap();
        limits.check(Limit::LoginPerAccount, "alice").await.unwrap();
        assert!(limits.check(Limit::LoginPerAccount, "alice").await.is_err());

        assert!(!limits.is_known("alice", "192.0.2.1").await);
        limits.remember("alice", "192.0.2.1").await;
        assert!(limits.is_known("alice", "192.0.2.1").await);
        assert!(!limits.is_known("bob", "192.0.2.1").await);
        assert!(!limits.is_known("alice", "192.0.2.2").await);
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
