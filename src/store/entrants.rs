//! Tournaments (v3): the `board_entrants` table, and the attempts a
//! player made in a period (their posts, counted in `board_scores`).

use std::collections::{HashMap, HashSet};

use sqlx::AnyConnection;

use super::{placeholders, statement_runs, Store, StoreResult};
use crate::domain::Timestamp;

impl Store {
    /// How many joined a board period and are not banned (erased players'
    /// places are deleted): a banned player frees their place. The joins
    /// are a locking read (a join holds the period's row while it counts);
    /// the bans among them a plain one, apart, so that no player's row is
    /// locked out of the writer's order (a ban racing a join may count
    /// either way).
    pub async fn entrant_count(&self, conn: &mut AnyConnection, board: i64, period: i64) -> StoreResult<i64> {
        let sql =
            format!("SELECT COUNT(*) FROM board_entrants WHERE board = ? AND period = ?{}", self.dialect.share_lock());
        let joined: i64 = self.sql_scalar(&sql).bind(board).bind(period).fetch_one(&mut *conn).await?;
        let banned: i64 = self
            .sql_scalar(
                "SELECT COUNT(*) FROM board_entrants e JOIN users u ON u.id = e.user_id \
                 WHERE e.board = ? AND e.period = ? AND u.banned_at IS NOT NULL",
            )
            .bind(board)
            .bind(period)
            .fetch_one(&mut *conn)
            .await?;
        Ok(joined - banned)
    }

    /// The entrant counts of several board periods (banned players left
    /// out, as `entrant_count` does), in one statement per run of
    /// [`statement_runs`].
    pub async fn entrant_counts(&self, periods: &[(i64, i64)]) -> StoreResult<HashMap<i64, i64>> {
        let mut counts = HashMap::new();
        if periods.is_empty() {
            return Ok(counts);
        }
        let mut conn = self.conn().await?;
        for run in statement_runs(periods, |_| 2) {
            let each = vec!["(e.board = ? AND e.period = ?)"; run.len()].join(" OR ");
            let sql = format!(
                "SELECT e.board, COUNT(*) FROM board_entrants e JOIN users u ON u.id = e.user_id \
                 WHERE ({each}) AND u.banned_at IS NULL GROUP BY e.board"
            );
            let query = run.iter().fold(self.sql_as::<(i64, i64)>(&sql).persistent(false), |query, (board, period)| {
                query.bind(*board).bind(*period)
            });
            counts.extend(query.fetch_all(&mut *conn).await?);
        }
        Ok(counts)
    }

    /// Those of `user_ids` who joined the board period. The caller holds
    /// the period's row, so no join commits in between; a locking read, as
    /// `last_posts` explains, sees every join committed before.
    pub async fn entrants_among(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
    ) -> StoreResult<HashSet<i64>> {
        if user_ids.is_empty() {
            return Ok(HashSet::new());
        }
        let sql = format!(
            "SELECT user_id FROM board_entrants WHERE board = ? AND period = ? AND user_id IN ({}){}",
            placeholders(user_ids.len()),
            self.dialect.share_lock()
        );
        let query = user_ids
            .iter()
            .fold(self.sql_scalar::<i64>(&sql).persistent(false).bind(board).bind(period), |query, id| query.bind(*id));
        Ok(query.fetch_all(&mut *conn).await?.into_iter().collect())
    }

    /// Adds an entrant (the caller checked the room under the period's lock).
    pub async fn insert_entrant(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_id: i64,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.sql("INSERT INTO board_entrants (board, period, user_id, joined_at) VALUES (?, ?, ?, ?)")
            .bind(board)
            .bind(period)
            .bind(user_id)
            .bind(at)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Each of `user_ids`' posts in a board period, held and rejected ones
    /// included: their attempts. One range of `board_scores_by_period` per
    /// player, at most `max_attempts` rows long where the limit holds.
    pub async fn attempts_among(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
    ) -> StoreResult<HashMap<i64, i64>> {
        if user_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = format!(
            "SELECT user_id, COUNT(*) FROM board_scores WHERE board = ? AND period = ? AND user_id IN ({}) \
             GROUP BY user_id{}",
            placeholders(user_ids.len()),
            self.dialect.share_lock()
        );
        let query = user_ids
            .iter()
            .fold(self.sql_as::<(i64, i64)>(&sql).persistent(false).bind(board).bind(period), |query, id| {
                query.bind(*id)
            });
        Ok(query.fetch_all(&mut *conn).await?.into_iter().collect())
    }
}
