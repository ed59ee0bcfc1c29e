//! The `scores` table: the append-only log of every accepted post.

use sqlx::AnyConnection;

use super::{ScoreRow, Store, StoreResult};
use crate::domain::{Score, Timestamp};

impl Store {
    /// Appends many posts in one statement; returns their ids in order
    /// (see `InsertIds` for how each database reports them; only MySQL 8
    /// with interleaved auto-increment locks gets one INSERT per post).
    pub async fn insert_scores(
        &self,
        conn: &mut AnyConnection,
        posts: &[(i64, Score)],
        at: Timestamp,
    ) -> StoreResult<Vec<i64>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        if self.inserts_one_by_one() {
            let sql = "INSERT INTO scores (user_id, score, created_at) VALUES (?, ?, ?)";
            let mut ids = Vec::with_capacity(posts.len());
            for (user_id, score) in posts {
                let query = self.sql(sql).bind(*user_id).bind(score.value()).bind(at);
                ids.push(self.insert_returning_id(conn, query).await?);
            }
            return Ok(ids);
        }
        let values = vec!["(?, ?, ?)"; posts.len()].join(", ");
        let sql = self.insert_sql(&format!("INSERT INTO scores (user_id, score, created_at) VALUES {values}"), "id");
        let mut query = self.sql_once(&sql);
        for (user_id, score) in posts {
            query = query.bind(*user_id).bind(score.value()).bind(at);
        }
        Ok(self.inserted_ids(conn, query, posts.len()).await?)
    }

    /// Up to `limit` of a user's scores, newest first, older than `before`.
    pub async fn score_history(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        before: Option<i64>,
        limit: i64,
    ) -> StoreResult<Vec<ScoreRow>> {
        Ok(self
            .sql_as("SELECT id, score, created_at FROM scores WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?")
            .bind(user_id)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }
}
