//! The `scores` table: the append-only log of every accepted post.

use sqlx::AnyConnection;

use super::{Dialect, ScoreRow, Store, StoreError, StoreResult};
use crate::domain::{Score, Timestamp};

impl Store {
    /// Appends many posts in one statement; returns their ids in order.
    /// SQLite assigns `max(id) + 1, + 2, …` under its single write lock, so
    /// the returned ids sorted are the rows in order. MySQL reports the first
    /// id of a multi-row INSERT and, with `innodb_autoinc_lock_mode` 0 or 1
    /// (MariaDB's default), hands out consecutive ids to it; with mode 2 the
    /// posts are inserted one by one instead.
    pub async fn insert_scores(
        &self,
        conn: &mut AnyConnection,
        posts: &[(i64, Score)],
        at: Timestamp,
    ) -> StoreResult<Vec<i64>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        if self.dialect == Dialect::MySql && !self.consecutive_ids {
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
        match self.dialect {
            Dialect::Sqlite => {
                use sqlx::Row as _;
                let rows = query.fetch_all(&mut *conn).await?;
                let mut ids = rows.iter().map(|row| row.try_get("id")).collect::<Result<Vec<i64>, _>>()?;
                ids.sort_unstable();
                Ok(ids)
            }
            Dialect::MySql => {
                let done = query.execute(&mut *conn).await?;
                let first = done.last_insert_id().ok_or_else(|| StoreError::Corrupt("INSERT reported no id".into()))?;
                Ok((0..posts.len() as i64).map(|i| first + i).collect())
            }
        }
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
