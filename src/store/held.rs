//! The `held_posts` table: the review queue of posts held by a board's
//! `hold_beyond` or `hold_jump` (the posts themselves are in their logs
//! with `status` 'held'; see migration 10).

use sqlx::AnyConnection;

use super::{Store, StoreResult};
use crate::domain::{PostStatus, Timestamp};

/// `held_posts.board` of a post of `/api/scores` (custom board numbers start at 1).
pub const BUILTIN_LOG: i64 = 0;

/// A held post as the writer records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewHold<'a> {
    /// [`BUILTIN_LOG`] or a custom board's number.
    pub board: i64,
    pub post_id: i64,
    pub user_id: i64,
    pub period: i64,
    pub rule: &'a str,
}

/// A row of the queue, with its post.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HeldRow {
    pub id: i64,
    pub board: i64,
    pub post_id: i64,
    pub user_id: i64,
    pub period: i64,
    pub rule: String,
    pub decided_at: Option<Timestamp>,
    pub score: i64,
    /// A board post's subscores (NULL beyond its board's, and on `/api/scores`).
    pub subscore1: Option<i64>,
    pub subscore2: Option<i64>,
    pub metadata: Option<String>,
    pub created_at: Timestamp,
    pub status: String,
}

impl HeldRow {
    /// The post's subscores, as many as it has.
    pub fn subscores(&self) -> Vec<i64> {
        [self.subscore1, self.subscore2].into_iter().flatten().collect()
    }
}

/// The queue's rows joined with their posts, from either log.
const HELD_SELECT: &str = "SELECT h.id, h.board, h.post_id, h.user_id, h.period, h.rule, h.decided_at, \
     COALESCE(s.score, b.score) AS score, b.subscore1 AS subscore1, b.subscore2 AS subscore2, b.metadata AS metadata, COALESCE(s.created_at, b.created_at) AS created_at, \
     COALESCE(s.status, b.status) AS status \
     FROM held_posts h \
     LEFT JOIN scores s ON h.board = 0 AND s.id = h.post_id \
     LEFT JOIN board_scores b ON h.board <> 0 AND b.id = h.post_id";

impl Store {
    /// Queues held posts (in the writer's transaction, with the posts).
    pub async fn insert_holds(&self, conn: &mut AnyConnection, holds: &[NewHold<'_>]) -> StoreResult<()> {
        for run in holds.chunks(super::rows_per_statement(5)) {
            let values = vec!["(?, ?, ?, ?, ?)"; run.len()].join(", ");
            let sql = format!("INSERT INTO held_posts (board, post_id, user_id, period, rule) VALUES {values}");
            let query = run.iter().fold(self.sql_once(&sql), |query, hold| {
                query.bind(hold.board).bind(hold.post_id).bind(hold.user_id).bind(hold.period).bind(hold.rule)
            });
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Up to `limit` undecided holds after queue position `after`, oldest
    /// first; of one log only, if `board` is given.
    pub async fn open_holds(&self, board: Option<i64>, after: i64, limit: i64) -> StoreResult<Vec<HeldRow>> {
        let mut conn = self.conn().await?;
        let of_board = if board.is_some() { " AND h.board = ?" } else { "" };
        // A post deleted since (moderation, an erasure) leaves the queue.
        let sql = format!(
            "{HELD_SELECT} WHERE h.decided_at IS NULL AND COALESCE(s.id, b.id) IS NOT NULL AND h.id > ?{of_board} \
             ORDER BY h.id LIMIT ?"
        );
        let mut query = self.sql_as::<HeldRow>(&sql).persistent(false).bind(after);
        if let Some(board) = board {
            query = query.bind(board);
        }
        Ok(query.bind(limit).fetch_all(&mut *conn).await?)
    }

    /// The holds of posts with this id (one per log at most), locked for a
    /// decision.
    pub async fn holds_of_post(&self, conn: &mut AnyConnection, post_id: i64) -> StoreResult<Vec<HeldRow>> {
        let sql = format!(
            "{HELD_SELECT} WHERE h.post_id = ? AND COALESCE(s.id, b.id) IS NOT NULL ORDER BY h.board{}",
            self.dialect.lock_rows()
        );
        Ok(self.sql_as(&sql).persistent(false).bind(post_id).fetch_all(&mut *conn).await?)
    }

    /// Records a decision: the post's new status and the hold's time.
    pub async fn decide_hold(
        &self,
        conn: &mut AnyConnection,
        hold: &HeldRow,
        status: PostStatus,
        at: Timestamp,
    ) -> StoreResult<()> {
        let log = if hold.board == BUILTIN_LOG { "scores" } else { "board_scores" };
        self.sql(&format!("UPDATE {log} SET status = ? WHERE id = ?"))
            .bind(status.as_str())
            .bind(hold.post_id)
            .execute(&mut *conn)
            .await?;
        self.sql("UPDATE held_posts SET decided_at = ? WHERE id = ?")
            .bind(at)
            .bind(hold.id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}
