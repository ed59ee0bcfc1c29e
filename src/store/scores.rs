//! The `scores` table: the append-only log of every accepted post.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::{placeholders, ScoreRow, Store, StoreResult};
use crate::domain::{PostStatus, Score, Timestamp};

/// Which log a player's previous post is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PostLog {
    /// `scores`: the posts to the built-in boards.
    Builtin,
    /// `board_scores` of one custom board (by number).
    Board(i64),
}

impl Store {
    /// Appends many posts (player, score, status) in one statement (per
    /// [`super::rows_per_statement`]); returns their ids in order (see `InsertIds` for how each database
    /// reports them; only MySQL 8 with interleaved auto-increment locks gets
    /// one INSERT per post).
    pub async fn insert_scores(
        &self,
        conn: &mut AnyConnection,
        posts: &[(i64, Score, PostStatus)],
        at: Timestamp,
    ) -> StoreResult<Vec<i64>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        if self.inserts_one_by_one() {
            let sql = "INSERT INTO scores (user_id, score, created_at, status) VALUES (?, ?, ?, ?)";
            let mut ids = Vec::with_capacity(posts.len());
            for (user_id, score, status) in posts {
                let query = self.sql(sql).bind(*user_id).bind(score.value()).bind(at).bind(status.as_str());
                ids.push(self.insert_returning_id(conn, query).await?);
            }
            return Ok(ids);
        }
        let mut ids = Vec::with_capacity(posts.len());
        for run in posts.chunks(super::rows_per_statement(4)) {
            let values = vec!["(?, ?, ?, ?)"; run.len()].join(", ");
            let sql = self
                .insert_sql(&format!("INSERT INTO scores (user_id, score, created_at, status) VALUES {values}"), "id");
            let query = run.iter().fold(self.sql_once(&sql), |query, (user_id, score, status)| {
                query.bind(*user_id).bind(score.value()).bind(at).bind(status.as_str())
            });
            ids.extend(self.inserted_ids(conn, query, run.len()).await?);
        }
        Ok(ids)
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
            .sql_as(
                "SELECT id, score, created_at, status FROM scores WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
            )
            .bind(user_id)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// When each of these players last posted to the log, for a board's
    /// `min_interval_ms`. Called by the score writer with the players' rows
    /// locked, so no post of theirs commits in between. Both statements are
    /// locking reads, which read the latest committed rows: a plain read,
    /// or a subquery under a locking one, reads InnoDB's snapshot, and a
    /// test with two instances saw it miss the post another one had just
    /// committed (two posts admitted at once). Ids grow with every post, so
    /// each player's latest is their largest id: one seek on
    /// `(user_id, …, id)` per player, whatever their history's length.
    pub async fn last_posts(
        &self,
        conn: &mut AnyConnection,
        log: PostLog,
        user_ids: &[i64],
    ) -> StoreResult<HashMap<i64, Timestamp>> {
        if user_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let (table, board) = match log {
            PostLog::Builtin => ("scores", String::new()),
            PostLog::Board(number) => ("board_scores", format!(" AND board = {number}")),
        };
        let lock = self.dialect.share_lock();
        let sql = format!(
            "SELECT MAX(id) FROM {table} WHERE user_id IN ({}){board} GROUP BY user_id{lock}",
            placeholders(user_ids.len())
        );
        let mut query = self.sql_scalar::<i64>(&sql).persistent(false);
        for id in user_ids {
            query = query.bind(*id);
        }
        let latest = query.fetch_all(&mut *conn).await?;
        if latest.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = format!("SELECT user_id, created_at FROM {table} WHERE id IN ({}){lock}", placeholders(latest.len()));
        let mut query = self.sql_as::<(i64, Timestamp)>(&sql).persistent(false);
        for id in latest {
            query = query.bind(id);
        }
        Ok(query.fetch_all(&mut *conn).await?.into_iter().collect())
    }
}
