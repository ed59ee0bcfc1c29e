//! The `scores` table: the append-only log of every accepted post.

use sqlx::{AnyConnection, Row};

use super::Store;
use crate::domain::{Score, Timestamp};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreRow {
    pub id: i64,
    pub score: i64,
    pub created_at: Timestamp,
}

impl Store {
    pub async fn insert_score(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        score: Score,
        at: Timestamp,
    ) -> Result<i64, sqlx::Error> {
        let sql = self.insert_sql("INSERT INTO scores (user_id, score, created_at) VALUES (?, ?, ?)");
        let query = self.sql(&sql).bind(user_id).bind(score.value()).bind(at.millis());
        self.insert_returning_id(conn, query).await
    }

    /// Up to `limit` of a user's scores, newest first, older than `before`.
    pub async fn score_history(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ScoreRow>, sqlx::Error> {
        let rows = self
            .sql("SELECT id, score, created_at FROM scores WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?")
            .bind(user_id)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(ScoreRow {
                    id: row.try_get("id")?,
                    score: row.try_get("score")?,
                    created_at: Timestamp::from_millis(row.try_get("created_at")?),
                })
            })
            .collect()
    }
}
