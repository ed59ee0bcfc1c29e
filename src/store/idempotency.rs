//! The `idempotency_keys` table: the first response to each (user, key),
//! and what the key was used for (a fingerprint of the board and body).

use sqlx::AnyConnection;

use super::{is_unique_violation, LongText, Store, StoreResult};
use crate::domain::{IdempotencyKey, Timestamp};

/// The first answer to a key, and what the key was used for (`None` for
/// keys stored before fingerprints existed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredResponse {
    pub body: LongText,
    pub fingerprint: Option<String>,
}

impl Store {
    /// Claims `key` for `user_id` inside the caller's write transaction.
    /// `false` means the key was used before; the unique index makes a
    /// concurrent claim wait until the first transaction ends, so a `false`
    /// always has a committed response to replay.
    pub async fn claim_idempotency_key(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        key: &IdempotencyKey,
        fingerprint: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let result = self
            .sql(
                "INSERT INTO idempotency_keys (user_id, idem_key, created_at, status, body, fingerprint) \
                 VALUES (?, ?, ?, 0, '', ?)",
            )
            .bind(user_id)
            .bind(key.as_str())
            .bind(now)
            .bind(fingerprint)
            .execute(&mut *conn)
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(error) if is_unique_violation(&error) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Stores the response of a claimed key (same transaction as the claim).
    /// Gives back a key this transaction claimed for a post it then refused
    /// (a board's minimum interval): the refusal is not an answer to replay.
    pub async fn release_idempotency_key(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        key: &IdempotencyKey,
    ) -> StoreResult<()> {
        self.sql("DELETE FROM idempotency_keys WHERE user_id = ? AND idem_key = ? AND status = 0")
            .bind(user_id)
            .bind(key.as_str())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    pub async fn save_idempotent_response(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        key: &IdempotencyKey,
        status: u16,
        body: &str,
    ) -> StoreResult<()> {
        self.sql("UPDATE idempotency_keys SET status = ?, body = ? WHERE user_id = ? AND idem_key = ?")
            .bind(i64::from(status))
            .bind(body)
            .bind(user_id)
            .bind(key.as_str())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// The stored answer of a used key.
    pub async fn idempotent_response(&self, user_id: i64, key: &IdempotencyKey) -> StoreResult<Option<StoredResponse>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT body, fingerprint FROM idempotency_keys WHERE user_id = ? AND idem_key = ?")
            .bind(user_id)
            .bind(key.as_str())
            .fetch_optional(&mut *conn)
            .await?)
    }
}
