//! The webhooks (v3) and their outbox, `webhook_deliveries` (migration 13
//! says how a row is claimed and sent), and the `closed_at` mark of the
//! periods whose `period.closed` event was emitted.

use sqlx::AnyConnection;

use super::{placeholders, LongText, Store, StoreResult};
use crate::domain::Timestamp;

/// A webhook without its secret.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WebhookRow {
    pub id: i64,
    pub url: String,
    /// The event names, a JSON list.
    pub events: String,
    pub created_at: Timestamp,
}

/// A delivery that is due, with where it goes and what signs it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DueDelivery {
    pub id: i64,
    pub webhook: i64,
    pub event: String,
    pub created_at: Timestamp,
    pub data: LongText,
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    pub url: String,
    pub secret: String,
}

/// A row of a webhook's delivery log.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: i64,
    pub event: String,
    pub created_at: Timestamp,
    pub status: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub next_attempt_at: Option<Timestamp>,
}

/// What became of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Delivered,
    /// Refused or unanswered; tried again at this time.
    RetryAt(Timestamp),
    /// Refused or unanswered, and no retry is left.
    Failed,
}

/// A period that ended and has not been closed yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct EndedPeriod {
    pub board: i64,
    pub period: i64,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
    pub players: i64,
}

impl Store {
    /// Stores a webhook (in the caller's transaction, beside its audit record).
    pub async fn insert_webhook(
        &self,
        conn: &mut AnyConnection,
        url: &str,
        events: &str,
        secret: &str,
        created_at: Timestamp,
    ) -> StoreResult<i64> {
        let sql = self.insert_sql("INSERT INTO webhooks (url, events, secret, created_at) VALUES (?, ?, ?, ?)", "id");
        let query = self.sql(&sql).bind(url).bind(events).bind(secret).bind(created_at);
        Ok(self.insert_returning_id(conn, query).await?)
    }

    /// Every webhook, oldest first.
    pub async fn webhooks(&self) -> StoreResult<Vec<WebhookRow>> {
        let mut conn = self.conn().await?;
        Ok(self.sql_as("SELECT id, url, events, created_at FROM webhooks ORDER BY id").fetch_all(&mut *conn).await?)
    }

    pub async fn webhook_exists(&self, id: i64) -> StoreResult<bool> {
        let mut conn = self.conn().await?;
        let found: Option<i64> =
            self.sql_scalar("SELECT id FROM webhooks WHERE id = ?").bind(id).fetch_optional(&mut *conn).await?;
        Ok(found.is_some())
    }

    /// Deletes a webhook and its deliveries (in the caller's transaction);
    /// `false` when there is none.
    pub async fn delete_webhook(&self, conn: &mut AnyConnection, id: i64) -> StoreResult<bool> {
        let done = self.sql("DELETE FROM webhooks WHERE id = ?").bind(id).execute(&mut *conn).await?;
        self.sql("DELETE FROM webhook_deliveries WHERE webhook = ?").bind(id).execute(&mut *conn).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Queues `event` for every webhook that takes it (and, for the bounded
    /// event, has fewer undelivered ones than its bound: see
    /// [`Store::bounding_outbox`]), in the caller's transaction (the
    /// outbox): one statement, whatever their number.
    pub async fn enqueue_event(
        &self,
        conn: &mut AnyConnection,
        event: &str,
        data: &str,
        created_at: Timestamp,
    ) -> StoreResult<()> {
        let backlog = self.outbox_bound.filter(|(bounded, _)| *bounded == event).map(|(_, most)| most);
        // `events` is a JSON list of names, none of which contains a quote.
        let subscribed = format!("%\"{event}\"%");
        let query = match backlog {
            None => self.sql(
                "INSERT INTO webhook_deliveries (webhook, event, created_at, data, status, attempts, next_attempt_at) \
                 SELECT id, ?, ?, ?, 'pending', 0, ? FROM webhooks WHERE events LIKE ?",
            ),
            // The count never passes the bound (nothing is queued beyond
            // it): at most `backlog` rows of the backlog index a webhook.
            Some(_) => self.sql(
                "INSERT INTO webhook_deliveries (webhook, event, created_at, data, status, attempts, next_attempt_at) \
                 SELECT id, ?, ?, ?, 'pending', 0, ? FROM webhooks WHERE events LIKE ? AND (SELECT COUNT(*) \
                 FROM webhook_deliveries d WHERE d.webhook = webhooks.id AND d.event = ? AND d.status = 'pending') < ?",
            ),
        };
        let query = query.bind(event).bind(created_at).bind(data).bind(created_at).bind(subscribed);
        let query = match backlog {
            None => query,
            Some(most) => query.bind(event).bind(most),
        };
        query.execute(&mut *conn).await?;
        Ok(())
    }

    /// The pending deliveries whose data may name `user_id` (its digits
    /// appear in it): (id, event, data), for an erasure to scrub.
    pub async fn pending_deliveries_naming(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
    ) -> StoreResult<Vec<(i64, String, LongText)>> {
        Ok(self
            .sql_as("SELECT id, event, data FROM webhook_deliveries WHERE status = 'pending' AND data LIKE ?")
            .bind(format!("%{user_id}%"))
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Replaces a pending delivery's data, or deletes it (`None`).
    pub async fn rewrite_delivery(&self, conn: &mut AnyConnection, id: i64, data: Option<&str>) -> StoreResult<()> {
        match data {
            Some(data) => self.sql("UPDATE webhook_deliveries SET data = ? WHERE id = ?").bind(data).bind(id),
            None => self.sql("DELETE FROM webhook_deliveries WHERE id = ?").bind(id),
        }
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Up to `limit` pending deliveries of `events` due at `now`, the
    /// longest due first (one event after the other, each by the lane
    /// index).
    pub async fn due_deliveries(&self, events: &[&str], now: Timestamp, limit: i64) -> StoreResult<Vec<DueDelivery>> {
        let mut conn = self.conn().await?;
        let mut due: Vec<DueDelivery> = Vec::new();
        for event in events {
            let found: Vec<DueDelivery> = self
                .sql_as(
                    "SELECT d.id, d.webhook, d.event, d.created_at, d.data, d.attempts, d.next_attempt_at, w.url, \
                     w.secret FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook \
                     WHERE d.status = 'pending' AND d.event = ? AND d.next_attempt_at <= ? \
                     ORDER BY d.next_attempt_at LIMIT ?",
                )
                .bind(*event)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *conn)
                .await?;
            due.extend(found);
        }
        due.sort_by_key(|delivery| delivery.next_attempt_at);
        due.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(due)
    }

    /// Claims a due delivery by moving its next attempt to `until` (past
    /// the send's timeout); `false` when another sender moved it first.
    pub async fn claim_delivery(&self, id: i64, seen: Timestamp, until: Timestamp) -> StoreResult<bool> {
        let mut conn = self.conn().await?;
        let done = self
            .sql(
                "UPDATE webhook_deliveries SET next_attempt_at = ? \
                 WHERE id = ? AND status = 'pending' AND next_attempt_at = ?",
            )
            .bind(until)
            .bind(id)
            .bind(seen)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records an attempt: its HTTP status (none when no answer came) and
    /// what follows.
    pub async fn record_attempt(&self, id: i64, http_status: Option<u16>, result: AttemptResult) -> StoreResult<()> {
        let (status, next) = match result {
            AttemptResult::Delivered => ("delivered", None),
            AttemptResult::RetryAt(at) => ("pending", Some(at)),
            AttemptResult::Failed => ("failed", None),
        };
        let mut conn = self.conn().await?;
        self.sql(
            "UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status = ?, next_attempt_at = ? \
             WHERE id = ?",
        )
        .bind(status)
        .bind(http_status.map(i64::from))
        .bind(next)
        .bind(id)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Deletes the delivered and failed deliveries created before `before`,
    /// oldest first, `chunk` a statement (no statement holds many rows'
    /// locks while posts write to the outbox); how many. Pending ones stay.
    pub async fn purge_deliveries(&self, before: Timestamp, chunk: i64) -> StoreResult<u64> {
        let mut conn = self.conn().await?;
        let mut purged = 0;
        loop {
            let ids: Vec<i64> = self
                .sql_scalar(
                    "SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ? ORDER BY id LIMIT ?",
                )
                .bind(before)
                .bind(chunk)
                .fetch_all(&mut *conn)
                .await?;
            if ids.is_empty() {
                return Ok(purged);
            }
            let sql = format!("DELETE FROM webhook_deliveries WHERE id IN ({})", placeholders(ids.len()));
            let query = ids.iter().fold(self.sql(&sql).persistent(false), |query, id| query.bind(*id));
            purged += query.execute(&mut *conn).await?.rows_affected();
            if (ids.len() as i64) < chunk {
                return Ok(purged);
            }
        }
    }

    /// A webhook's deliveries with ids below `before`, newest first.
    pub async fn deliveries(&self, webhook: i64, before: i64, limit: i64) -> StoreResult<Vec<DeliveryRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT id, event, created_at, status, attempts, last_status, next_attempt_at \
                 FROM webhook_deliveries WHERE webhook = ? AND id < ? ORDER BY id DESC LIMIT ?",
            )
            .bind(webhook)
            .bind(before)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Periods that ended by `ended_by` and were not closed, oldest end
    /// first (the `board_periods_unclosed` index's NULL range).
    pub async fn unclosed_periods(&self, ended_by: Timestamp, limit: i64) -> StoreResult<Vec<EndedPeriod>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, period, starts_at, ends_at, players FROM board_periods WHERE closed_at IS NULL AND ends_at <= ? \
                 ORDER BY ends_at LIMIT ?",
            )
            .bind(ended_by)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// A board's period if it is recorded and not closed.
    pub async fn unclosed_period(&self, board: i64, period: i64) -> StoreResult<Option<EndedPeriod>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, period, starts_at, ends_at, players FROM board_periods \
                 WHERE board = ? AND period = ? AND closed_at IS NULL AND ends_at IS NOT NULL",
            )
            .bind(board)
            .bind(period)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Of these (board, period) pairs, the periods closed already, with
    /// their bounds (in the caller's transaction).
    pub async fn closed_among(
        &self,
        conn: &mut AnyConnection,
        periods: &[(i64, i64)],
    ) -> StoreResult<Vec<EndedPeriod>> {
        let mut closed = Vec::new();
        // One seek per pair: a ban touches a player's few entries.
        for (board, period) in periods {
            let found: Option<EndedPeriod> = self
                .sql_as(
                    "SELECT board, period, starts_at, ends_at, players FROM board_periods \
                     WHERE board = ? AND period = ? AND closed_at IS NOT NULL AND ends_at IS NOT NULL",
                )
                .bind(board)
                .bind(period)
                .fetch_optional(&mut *conn)
                .await?;
            closed.extend(found);
        }
        Ok(closed)
    }

    /// Marks a period closed in the caller's transaction; `false` when
    /// another instance closed it first.
    pub async fn close_period(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let done = self
            .sql("UPDATE board_periods SET closed_at = ? WHERE board = ? AND period = ? AND closed_at IS NULL")
            .bind(at)
            .bind(board)
            .bind(period)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
