//! The `server_keys` table: the keys game servers post with, stored as
//! hashes (see `auth::ServerKey`).

use sqlx::AnyConnection;

use super::{Store, StoreResult};
use crate::domain::Timestamp;

/// A server key without its value (never stored).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ServerKeyRow {
    pub id: i64,
    pub name: String,
    pub created_at: Timestamp,
    /// `server`, `moderator` or `viewer` (see `domain::KeyRole`).
    pub role: String,
}

impl Store {
    /// Stores a key (in the caller's transaction, beside its audit record).
    pub async fn insert_server_key(
        &self,
        conn: &mut AnyConnection,
        name: &str,
        role: &str,
        key_hash: &str,
        created_at: Timestamp,
    ) -> StoreResult<i64> {
        let sql =
            self.insert_sql("INSERT INTO server_keys (name, role, key_hash, created_at) VALUES (?, ?, ?, ?)", "id");
        let query = self.sql(&sql).bind(name).bind(role).bind(key_hash).bind(created_at);
        Ok(self.insert_returning_id(conn, query).await?)
    }

    /// The live (not revoked) keys, oldest first.
    pub async fn server_keys(&self) -> StoreResult<Vec<ServerKeyRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT id, name, created_at, role FROM server_keys WHERE revoked_at IS NULL ORDER BY id")
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The live key with this hash: one seek on a unique index, made for
    /// every post with a key, so a revocation holds everywhere at once.
    pub async fn server_key_by_hash(&self, key_hash: &str) -> StoreResult<Option<ServerKeyRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT id, name, created_at, role FROM server_keys WHERE key_hash = ? AND revoked_at IS NULL")
            .bind(key_hash)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Revokes a live key; `false` when there is none with this id.
    pub async fn revoke_server_key(&self, conn: &mut AnyConnection, id: i64, at: Timestamp) -> StoreResult<bool> {
        let done = self
            .sql("UPDATE server_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
            .bind(at)
            .bind(id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
