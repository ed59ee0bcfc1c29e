//! The `sessions` table, keyed by the SHA-256 of the token.

use sqlx::AnyConnection;

use super::{Store, StoreResult};
use crate::domain::Timestamp;

/// Whose a live session is, until when, and whether its player is banned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionRow {
    pub user_id: i64,
    pub expires_at: Timestamp,
    pub banned_at: Option<Timestamp>,
    /// The data generation the session was read in.
    pub generation: i64,
}

impl Store {
    /// Starts a session of a player who exists and is not banned (checked
    /// in the same statement, so a ban or an erasure that commits first
    /// wins); `false` when there is no such player.
    pub async fn insert_session(
        &self,
        conn: &mut AnyConnection,
        token_hash: &str,
        user_id: i64,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<bool> {
        let done = self
            .sql(
                "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) \
                 SELECT ?, id, ?, ? FROM users WHERE id = ? AND banned_at IS NULL",
            )
            .bind(token_hash)
            .bind(now)
            .bind(expires_at)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The live (unexpired) session with this token hash, of a player who
    /// exists.
    pub async fn session(
        &self,
        conn: &mut AnyConnection,
        token_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<SessionRow>> {
        Ok(self
            .sql_as(
                "SELECT s.user_id, s.expires_at, u.banned_at, g.generation \
                 FROM sessions s JOIN users u ON u.id = s.user_id JOIN data_generation g ON g.id = 1 \
                 WHERE s.token_hash = ? AND s.expires_at > ?",
            )
            .bind(token_hash)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Ends a player's oldest sessions beyond the newest `keep`; returns
    /// their token hashes (for their cached copies).
    pub async fn end_sessions_beyond(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        keep: i64,
    ) -> StoreResult<Vec<String>> {
        let old: Vec<String> = self
            .sql_scalar(
                "SELECT token_hash FROM sessions WHERE user_id = ? ORDER BY created_at DESC, token_hash \
                 LIMIT 1000000 OFFSET ?",
            )
            .bind(user_id)
            .bind(keep)
            .fetch_all(&mut *conn)
            .await?;
        if old.is_empty() {
            return Ok(old);
        }
        let sql = format!("DELETE FROM sessions WHERE token_hash IN ({})", super::placeholders(old.len()));
        let query = old.iter().fold(self.sql(&sql).persistent(false), |query, hash| query.bind(hash.as_str()));
        query.execute(&mut *conn).await?;
        Ok(old)
    }

    pub async fn delete_session(&self, conn: &mut AnyConnection, token_hash: &str) -> StoreResult<()> {
        self.sql("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash).execute(&mut *conn).await?;
        Ok(())
    }

    /// Deletes expired sessions and idempotency keys older than `keys_before`.
    pub async fn purge_expired(&self, now: Timestamp, keys_before: Timestamp) -> StoreResult<u64> {
        let mut conn = self.conn().await?;
        let sessions = self.sql("DELETE FROM sessions WHERE expires_at <= ?").bind(now).execute(&mut *conn).await?;
        let keys =
            self.sql("DELETE FROM idempotency_keys WHERE created_at < ?").bind(keys_before).execute(&mut *conn).await?;
        Ok(sessions.rows_affected() + keys.rows_affected())
    }
}
