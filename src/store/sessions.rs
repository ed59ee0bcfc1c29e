//! The `sessions` table, keyed by the SHA-256 of the token.

use sqlx::{AnyConnection, Row};

use super::Store;
use crate::domain::Timestamp;

impl Store {
    pub async fn insert_session(
        &self,
        conn: &mut AnyConnection,
        token_hash: &str,
        user_id: i64,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<(), sqlx::Error> {
        self.sql("INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
            .bind(token_hash)
            .bind(user_id)
            .bind(now.millis())
            .bind(expires_at.millis())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// The user a live (unexpired) session belongs to, and its expiry.
    pub async fn session_user(
        &self,
        conn: &mut AnyConnection,
        token_hash: &str,
        now: Timestamp,
    ) -> Result<Option<(i64, Timestamp)>, sqlx::Error> {
        let row = self
            .sql("SELECT user_id, expires_at FROM sessions WHERE token_hash = ? AND expires_at > ?")
            .bind(token_hash)
            .bind(now.millis())
            .fetch_optional(&mut *conn)
            .await?;
        row.map(|row| Ok((row.try_get("user_id")?, Timestamp::from_millis(row.try_get("expires_at")?)))).transpose()
    }

    pub async fn delete_session(&self, conn: &mut AnyConnection, token_hash: &str) -> Result<(), sqlx::Error> {
        self.sql("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash).execute(&mut *conn).await?;
        Ok(())
    }

    /// Deletes expired sessions and idempotency keys older than `keys_before`.
    pub async fn purge_expired(
        &self,
        conn: &mut AnyConnection,
        now: Timestamp,
        keys_before: Timestamp,
    ) -> Result<u64, sqlx::Error> {
        let sessions =
            self.sql("DELETE FROM sessions WHERE expires_at <= ?").bind(now.millis()).execute(&mut *conn).await?;
        let keys = self
            .sql("DELETE FROM idempotency_keys WHERE created_at < ?")
            .bind(keys_before.millis())
            .execute(&mut *conn)
            .await?;
        Ok(sessions.rows_affected() + keys.rows_affected())
    }
}
