//! Webhooks (v3): an admin registers where events go; events are written
//! to the outbox in the transaction of the change they report (the score
//! writer's held posts, the closing of periods), and every instance runs
//! [`deliver_due`], which claims each due delivery before sending it, so
//! one instance at a time sends it and a crash leaves it due again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix_web::web::Data;
use serde_json::{json, Map, Value};
use sqlx::AnyConnection;
use tokio::sync::Semaphore;

use crate::domain::Timestamp;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::{periodic_job, AttemptResult, DueDelivery, StoreResult, WebhookRow};
use crate::usecases::moderation::{audited, Actor, Audit};
use crate::views::{DeliveryList, DeliveryView, WebhookCreated, WebhookList, WebhookView};
use crate::webhooks::{self, check_destination, Attempt, Event, Scrubbed};

/// A claimed delivery is its sender's for this long (past the answer's
/// 10 s timeout); a sender that died mid-way leaves it due again after.
const CLAIM_MS: i64 = 15_000;
/// What every secret starts with (secret scanners find a leaked one).
const SECRET_PREFIX: &str = "whsec_";

/// `POST /api/admin/webhooks`.
pub async fn create(state: &AppState, actor: &Actor, body: &Map<String, Value>) -> Result<WebhookCreated, ApiError> {
    let allow_private = state.settings.webhook_allow_private;
    let url = body.get("url").and_then(Value::as_str).ok_or(ErrorCode::InvalidUrl)?;
    let destination = check_destination(url, allow_private).map_err(|_| ErrorCode::InvalidUrl)?;
    destination.resolve(allow_private).await.map_err(|_| ErrorCode::InvalidUrl)?;
    let events = parse_events(body.get("events"))?;
    let secret = format!("{SECRET_PREFIX}{}", crate::auth::random_secret());
    let created_at = Timestamp::now();
    let stored_events = Value::from(events.iter().map(|event| event.as_str()).collect::<Vec<_>>()).to_string();
    let id = audited(state, actor, "create_webhook", async |conn| {
        let id = state.store.insert_webhook(conn, destination.as_str(), &stored_events, &secret, created_at).await?;
        Ok((id, Audit { target: format!("webhook:{id}"), detail: json!({"url": destination.as_str()}) }))
    })
    .await?;
    Ok(WebhookCreated {
        id,
        url: destination.as_str().to_owned(),
        events: events.iter().map(|event| event.as_str().to_owned()).collect(),
        secret,
        created_at,
    })
}

/// `events`: 1 to 4 distinct names of the contract's events.
fn parse_events(value: Option<&Value>) -> Result<Vec<Event>, ApiError> {
    let names = value.and_then(Value::as_array).filter(|names| !names.is_empty()).ok_or(ErrorCode::InvalidEvents)?;
    let mut events = names
        .iter()
        .map(|name| name.as_str().and_then(Event::parse).ok_or(ErrorCode::InvalidEvents))
        .collect::<Result<Vec<_>, _>>()?;
    events.sort_unstable();
    events.dedup();
    Ok(events)
}

pub async fn list(state: &AppState) -> Result<WebhookList, ApiError> {
    let webhooks = state.store.webhooks().await?.into_iter().map(webhook_view).collect();
    Ok(WebhookList { webhooks })
}

fn webhook_view(row: WebhookRow) -> WebhookView {
    let events = serde_json::from_str(&row.events).unwrap_or_default();
    WebhookView { id: row.id, url: row.url, events, created_at: row.created_at }
}

/// `DELETE /api/admin/webhooks/{id}`: the webhook and its deliveries.
pub async fn delete(state: &AppState, actor: &Actor, id: i64) -> Result<(), ApiError> {
    audited(state, actor, "delete_webhook", async |conn| {
        if !state.store.delete_webhook(conn, id).await? {
            return Err(ErrorCode::WebhookNotFound.into());
        }
        Ok(((), Audit { target: format!("webhook:{id}"), detail: json!({}) }))
    })
    .await
}

/// `GET /api/admin/webhooks/{id}/deliveries`: newest first, below `before`.
pub async fn deliveries(state: &AppState, id: i64, before: Option<i64>, limit: i64) -> Result<DeliveryList, ApiError> {
    if !state.store.webhook_exists(id).await? {
        return Err(ErrorCode::WebhookNotFound.into());
    }
    let rows = state.store.deliveries(id, before.unwrap_or(i64::MAX), limit).await?;
    let next_before = (rows.len() as i64 == limit).then(|| rows.last().map(|row| row.id)).flatten();
    let deliveries = rows
        .into_iter()
        .map(|row| DeliveryView {
            id: row.id.to_string(),
            event: row.event,
            created_at: row.created_at,
            status: row.status,
            attempts: row.attempts,
            last_status: row.last_status,
            next_attempt_at: row.next_attempt_at,
        })
        .collect();
    Ok(DeliveryList { deliveries, next_before })
}

/// An erasure's part in the outbox (in its transaction): the queued events
/// about the player alone are not sent, and they leave the others' lists.
/// Delivered and failed ones are deleted after `DELIVERY_RETENTION_MS`
/// (`usecases::jobs`).
pub(super) async fn forget_player(state: &AppState, conn: &mut AnyConnection, user_id: i64) -> StoreResult<()> {
    for (id, event, data) in state.store.pending_deliveries_naming(conn, user_id).await? {
        match webhooks::without_player(&event, &data.0, user_id) {
            Scrubbed::Keep => {}
            Scrubbed::Drop => state.store.rewrite_delivery(conn, id, None).await?,
            Scrubbed::Rewrite(data) => state.store.rewrite_delivery(conn, id, Some(&data)).await?,
        }
    }
    Ok(())
}

/// The sender's lanes: the results of closes and changes to them, and
/// then `score.held`, which players can cause in a loop. Each lane has its
/// own share of the sends in flight, and in each a webhook has at most
/// [`SENDS_PER_WEBHOOK`]: a flood of held posts, or a receiver that hangs,
/// never holds back a `period.closed`, nor one webhook another's.
pub struct Outbox {
    lanes: [Lane; 2],
}

struct Lane {
    events: &'static [Event],
    in_flight: Arc<Semaphore>,
    /// Sends in flight per webhook.
    per_webhook: Arc<Mutex<HashMap<i64, usize>>>,
}

/// Sends in flight per lane on an instance, and per webhook in a lane.
const SENDS_PER_LANE: usize = 16;
const SENDS_PER_WEBHOOK: usize = 4;

impl Default for Outbox {
    fn default() -> Self {
        let lane =
            |events| Lane { events, in_flight: Arc::new(Semaphore::new(SENDS_PER_LANE)), per_webhook: Arc::default() };
        Self {
            lanes: [
                lane(&[Event::PeriodClosed, Event::LeagueClosed, Event::PeriodAmended, Event::RewardGranted]),
                lane(&[Event::ScoreHeld]),
            ],
        }
    }
}

impl Lane {
    /// A send's place for `webhook`, if it has one left.
    fn take(&self, webhook: i64) -> bool {
        let Ok(mut sends) = self.per_webhook.lock() else { return false };
        let count = sends.entry(webhook).or_default();
        if *count >= SENDS_PER_WEBHOOK {
            return false;
        }
        *count += 1;
        true
    }

    fn give_back(per_webhook: &Mutex<HashMap<i64, usize>>, webhook: i64) {
        let Ok(mut sends) = per_webhook.lock() else { return };
        if let Some(count) = sends.get_mut(&webhook) {
            *count -= 1;
            if *count == 0 {
                sends.remove(&webhook);
            }
        }
    }
}

/// One round of the sender: in each lane, claims as many due deliveries
/// as it has room for (a webhook at its share waits) and sends each on a
/// task of its own, so a slow receiver holds one place, never the round,
/// a post or a read.
pub async fn deliver_due(state: &Data<AppState>, outbox: &Outbox) -> StoreResult<usize> {
    let now = Timestamp::now();
    let mut sent = 0;
    for lane in &outbox.lanes {
        let room = lane.in_flight.available_permits();
        if room == 0 {
            continue;
        }
        let events: Vec<&str> = lane.events.iter().map(|event| event.as_str()).collect();
        // More than there is room for: some may be webhooks' at their share.
        let due = state.store.due_deliveries(&events, now, (room * SENDS_PER_WEBHOOK) as i64).await?;
        for delivery in due {
            let Ok(permit) = Arc::clone(&lane.in_flight).try_acquire_owned() else { break };
            if !lane.take(delivery.webhook) {
                continue;
            }
            let webhook = delivery.webhook;
            let claimed = state.store.claim_delivery(delivery.id, delivery.next_attempt_at, now.plus_millis(CLAIM_MS));
            if !claimed.await.unwrap_or(false) {
                Lane::give_back(&lane.per_webhook, webhook);
                continue;
            }
            let (state, per_webhook) = (Data::clone(state), Arc::clone(&lane.per_webhook));
            actix_web::rt::spawn(periodic_job(async move {
                send(&state, delivery).await;
                Lane::give_back(&per_webhook, webhook);
                drop(permit);
            }));
            sent += 1;
        }
    }
    Ok(sent)
}

/// Sends one claimed delivery and records what became of it.
async fn send(state: &AppState, delivery: DueDelivery) {
    let body = webhooks::body(delivery.id, &delivery.event, delivery.created_at, &delivery.data.0);
    let attempt =
        Attempt { id: delivery.id, event: &delivery.event, url: &delivery.url, secret: &delivery.secret, body };
    let answer = state.webhooks.send(attempt).await;
    let now = Timestamp::now();
    let result = if answer.delivered() {
        AttemptResult::Delivered
    } else {
        match webhooks::next_attempt(delivery.created_at, delivery.attempts + 1, now) {
            Some(at) => AttemptResult::RetryAt(at),
            None => AttemptResult::Failed,
        }
    };
    if let Err(error) = state.store.record_attempt(delivery.id, answer.status, result).await {
        // The claim runs out and the delivery is sent again: at least once.
        tracing::warn!(%error, delivery = delivery.id, "recording a webhook attempt failed");
    }
}
