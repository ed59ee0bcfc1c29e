//! Webhooks (v3): the events a studio's servers are sent, how a delivery
//! is signed and retried, where one may go, and the HTTP client that sends
//! it. What is sent when is the outbox's business (`usecases::webhooks`,
//! `store/webhooks.rs`); nothing here touches the database.

mod address;
mod signature;

use std::sync::Arc;
use std::time::Duration;

use crate::domain::Timestamp;

pub use self::address::check_destination;
pub use self::signature::{sign, SIGNATURE_HEADER};

/// The events a webhook may take (the contract's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    PeriodClosed,
    PeriodAmended,
    LeagueClosed,
    ScoreHeld,
    RewardGranted,
}

impl Event {
    pub const ALL: [Event; 5] =
        [Event::PeriodClosed, Event::PeriodAmended, Event::LeagueClosed, Event::ScoreHeld, Event::RewardGranted];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::PeriodClosed => "period.closed",
            Event::PeriodAmended => "period.amended",
            Event::LeagueClosed => "league.closed",
            Event::ScoreHeld => "score.held",
            Event::RewardGranted => "reward.granted",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }
}

/// A refused or unanswered attempt is tried again this long after it...
const FIRST_RETRY_MS: i64 = 4_000;
/// ...then after twice as long each time, while the next attempt falls
/// within this long of the event; after that the delivery has `failed`.
const RETRY_FOR_MS: i64 = 24 * 60 * 60 * 1000;
/// An answer must come within this long (the contract's 10 s).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// When to try again a delivery of an event made at `created_at` whose
/// attempt number `attempt` (1 for the first) failed at `now`; `None`
/// when the retries are over.
pub fn next_attempt(created_at: Timestamp, attempt: i64, now: Timestamp) -> Option<Timestamp> {
    let doublings = u32::try_from(attempt.saturating_sub(1)).unwrap_or(u32::MAX).min(20);
    let at = now.plus_millis(FIRST_RETRY_MS << doublings);
    (at.millis() <= created_at.millis() + RETRY_FOR_MS).then_some(at)
}

/// The body of every attempt of a delivery: `data` is the event's JSON as
/// stored, so each attempt sends the same bytes.
pub fn body(id: i64, event: &str, created_at: Timestamp, data: &str) -> String {
    format!(
        r#"{{"id":"{id}","event":{},"created_at":"{}","data":{data}}}"#,
        serde_json::Value::from(event),
        created_at.to_rfc3339()
    )
}

/// What an erasure does to a queued event's data (see [`without_player`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Scrubbed {
    /// It does not name the player.
    Keep,
    /// It is about the player alone (their held post, a change to their
    /// entry): not sent.
    Drop,
    /// It lists the player among others (a period's top entries): sent
    /// without their entry; the others keep their ranks as at the close.
    Rewrite(String),
}

/// A queued event's data without an erased player (`data` as stored).
pub fn without_player(event: &str, data: &str, user_id: i64) -> Scrubbed {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(data) else { return Scrubbed::Keep };
    if value["user_id"].as_i64() == Some(user_id) {
        return Scrubbed::Drop;
    }
    let Some(top) = value.get_mut("top").and_then(serde_json::Value::as_array_mut) else { return Scrubbed::Keep };
    let listed = top.len();
    top.retain(|entry| entry["user"]["id"].as_i64() != Some(user_id));
    if top.len() == listed || event != Event::PeriodClosed.as_str() {
        return Scrubbed::Keep;
    }
    Scrubbed::Rewrite(value.to_string())
}

/// What a receiver did with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Its HTTP status; `None` when none came (refused address, no
    /// connection, timeout).
    pub status: Option<u16>,
}

impl Answer {
    pub fn delivered(self) -> bool {
        self.status.is_some_and(|status| (200..300).contains(&status))
    }
}

/// One attempt to send.
pub struct Attempt<'a> {
    pub id: i64,
    pub event: &'a str,
    pub url: &'a str,
    pub secret: &'a str,
    pub body: String,
}

/// Sends deliveries: an HTTP client that follows no redirect, uses no
/// proxy and, unless private addresses are allowed, resolves names to
/// public addresses only, so a name that resolves elsewhere since the
/// webhook was made reaches nothing inside.
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

impl Sender {
    pub fn new(allow_private: bool) -> Self {
        let client = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .connect_timeout(SEND_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent("hiscore-webhooks/1")
            .dns_resolver(Arc::new(address::PublicResolver { allow_private }))
            .build()
            .unwrap_or_default();
        Self { client, allow_private }
    }

    pub async fn send(&self, attempt: Attempt<'_>) -> Answer {
        // A literal address is not resolved: checked here instead.
        if check_destination(attempt.url, self.allow_private).is_err() {
            return Answer { status: None };
        }
        let timestamp = Timestamp::now().millis() / 1000;
        let signature = sign(attempt.secret, timestamp, &attempt.body);
        let sent = self
            .client
            .post(attempt.url)
            .header("content-type", "application/json")
            .header("hiscore-event", attempt.event)
            .header("hiscore-delivery", attempt.id.to_string())
            .header(SIGNATURE_HEADER, signature)
            .body(attempt.body)
            .send()
            .await;
        match sent {
            Ok(response) => Answer { status: Some(response.status().as_u16()) },
            Err(error) => {
                tracing::debug!(%error, delivery = attempt.id, "a webhook delivery got no answer");
                Answer { status: None }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_erased_player_leaves_the_queued_events() {
        let held = r#"{"board":"b","user_id":7,"score":1,"rule":"hold_beyond"}"#;
        assert_eq!(without_player("score.held", held, 7), Scrubbed::Drop);
        assert_eq!(without_player("score.held", held, 8), Scrubbed::Keep);
        let closed = r#"{"board":"b","period":{"index":1},"players":2,"top":[{"rank":1,"user":{"id":7}},{"rank":2,"user":{"id":9}}]}"#;
        let Scrubbed::Rewrite(data) = without_player("period.closed", closed, 7) else { panic!("rewritten") };
        let value: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(value["top"], serde_json::json!([{"rank": 2, "user": {"id": 9}}]));
        assert_eq!(value["players"], 2, "counts stay as at the close");
        assert_eq!(without_player("period.closed", closed, 8), Scrubbed::Keep);
        let league = r#"{"league":"l","period":{"index":1},"tiers":[{"index":0,"up":7,"down":0,"stay":0}]}"#;
        assert_eq!(without_player("league.closed", league, 7), Scrubbed::Keep);
    }

    #[test]
    fn retries_start_within_five_seconds_double_and_stop_after_a_day() {
        let made = Timestamp::from_millis(0);
        let first = next_attempt(made, 1, made).map(Timestamp::millis);
        assert_eq!(first, Some(4_000));
        assert_eq!(next_attempt(made, 2, Timestamp::from_millis(4_000)).map(Timestamp::millis), Some(12_000));
        // Each failed attempt waits twice as long as the one before; the
        // attempts run out about a day after the event.
        let (mut now, mut attempt) = (made, 1);
        while let Some(at) = next_attempt(made, attempt, now) {
            now = at;
            attempt += 1;
        }
        assert!(attempt > 10 && now.millis() <= RETRY_FOR_MS, "{attempt} attempts, last at {now:?}");
    }

    #[test]
    fn the_body_carries_the_stored_data_verbatim() {
        let body = body(7, "period.closed", Timestamp::from_millis(0), r#"{"board":"b","period":3}"#);
        assert_eq!(
            body,
            r#"{"id":"7","event":"period.closed","created_at":"1970-01-01T00:00:00.000Z","data":{"board":"b","period":3}}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(parsed["data"]["period"], 3);
    }

    #[test]
    fn event_names_round_trip() {
        for event in Event::ALL {
            assert_eq!(Event::parse(event.as_str()), Some(event));
        }
        assert_eq!(Event::parse("period.opened"), None);
    }
}
