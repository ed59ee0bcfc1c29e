//! The custom boards' periods (`board_periods`): those that began, where
//! each board's clock resumes, their change counts (what live pages and
//! kept pages of a period watch), and a period's entries as a warm-up
//! loads them.

use std::collections::HashMap;

use super::packed::IdSpan;
use super::{Store, StoreResult};
use crate::domain::{Timestamp, MAX_SUBSCORES};

/// A period that began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct PeriodRow {
    pub board: i64,
    pub period: i64,
    pub starts_at: Timestamp,
    pub ends_at: Option<Timestamp>,
    pub players: i64,
}

/// An entry as a warm-up loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmEntry {
    pub user_id: i64,
    pub score: i64,
    pub subscores: [i64; MAX_SUBSCORES],
    pub achieved_at: Timestamp,
    pub version: i64,
    pub changed: i64,
    pub metadata: Option<String>,
}

/// A period's entries as a warm-up loads them: every change up to
/// `changes` is in them (later ones may be too).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WarmPeriod {
    pub changes: i64,
    pub entries: Vec<WarmEntry>,
}

impl Store {
    /// The newest stored period of every board (where its clock resumes).
    pub async fn latest_periods(&self) -> StoreResult<Vec<PeriodRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT p.board, p.period, p.starts_at, p.ends_at, p.players FROM board_periods p \
                 JOIN (SELECT board, MAX(period) AS period FROM board_periods GROUP BY board) newest \
                 ON newest.board = p.board AND newest.period = p.period",
            )
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Records periods that began (their bounds are the same whoever
    /// computes them, so a row already there is simply kept).
    pub async fn record_periods(&self, board: i64, periods: &[crate::boards::Period]) -> StoreResult<()> {
        let mut conn = self.conn().await?;
        self.record_periods_on(&mut conn, board, periods).await
    }

    pub(super) async fn record_periods_on(
        &self,
        conn: &mut sqlx::AnyConnection,
        board: i64,
        periods: &[crate::boards::Period],
    ) -> StoreResult<()> {
        for run in periods.chunks(super::rows_per_statement(4)) {
            let values = vec!["(?, ?, ?, ?, 0)"; run.len()].join(", ");
            let sql = format!(
                "{} INTO board_periods (board, period, starts_at, ends_at, players) VALUES {values}{}",
                self.dialect.insert_ignore(),
                self.dialect.on_conflict_ignore()
            );
            let query = run.iter().fold(self.sql_once(&sql), |query, period| {
                query.bind(board).bind(period.index).bind(period.start).bind(period.end)
            });
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// A board's periods before `before` (exclusive), newest first.
    pub async fn periods(&self, board: i64, before: i64, limit: i64) -> StoreResult<Vec<PeriodRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, period, starts_at, ends_at, players FROM board_periods \
                 WHERE board = ? AND period < ? ORDER BY period DESC LIMIT ?",
            )
            .bind(board)
            .bind(before)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// One period of a board, if it began and is kept.
    pub async fn period(&self, board: i64, period: i64) -> StoreResult<Option<PeriodRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, period, starts_at, ends_at, players FROM board_periods WHERE board = ? AND period = ?",
            )
            .bind(board)
            .bind(period)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Every listed entry of one period of a board (a warm-up; a banned
    /// player's entries are hidden): the numbers as
    /// packed text (see `packed_rows`), the metadata of those that have it
    /// as rows. The period's change count is read first, so every change it
    /// counts is in the entries (the reads are not one snapshot).
    pub async fn period_entries(&self, board: i64, period: i64) -> StoreResult<WarmPeriod> {
        let mut conn = self.conn().await?;
        let changes = self.period_changes(&mut conn, board, period).await?;
        let (first, last, rows): (Option<i64>, Option<i64>, i64) = self
            .sql_as(
                "SELECT MIN(user_id), MAX(user_id), COUNT(*) FROM board_entries \
                 WHERE board = ? AND period = ? AND hidden = 0",
            )
            .bind(board)
            .bind(period)
            .fetch_one(&mut *conn)
            .await?;
        let span = first.zip(last).map(|(first, last)| IdSpan { first, last, rows });
        let mut metadata: HashMap<i64, String> = self
            .sql_as::<(i64, String)>(
                "SELECT user_id, metadata FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 \
                 AND metadata IS NOT NULL",
            )
            .bind(board)
            .bind(period)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        drop(conn);
        let fields = ["user_id", "score", "achieved_at", "version", "changed", "subscore1", "subscore2"];
        let values = self
            .packed_rows(
                &fields,
                "board_entries WHERE board = ? AND period = ? AND hidden = 0",
                &[board, period],
                "user_id",
                span,
            )
            .await?;
        let entries = values
            .chunks_exact(fields.len())
            .map(|r| WarmEntry {
                user_id: r[0],
                score: r[1],
                subscores: [r[5], r[6]],
                achieved_at: Timestamp::from_millis(r[2]),
                version: r[3],
                changed: r[4],
                metadata: metadata.remove(&r[0]),
            })
            .collect();
        Ok(WarmPeriod { changes, entries })
    }

    /// A period's change count, `None` when the period has no row (never
    /// recorded, or no longer kept): what a live page of it watches, one
    /// primary-key lookup.
    pub async fn period_stamp(&self, board: i64, period: i64) -> StoreResult<Option<i64>> {
        let mut conn = self.conn().await?;
        self.changes_of(&mut conn, board, period).await
    }

    /// How many changes a board period's entries have had (0 for a period
    /// no post reached).
    pub async fn period_changes(&self, conn: &mut sqlx::AnyConnection, board: i64, period: i64) -> StoreResult<i64> {
        Ok(self.changes_of(conn, board, period).await?.unwrap_or(0))
    }

    async fn changes_of(&self, conn: &mut sqlx::AnyConnection, board: i64, period: i64) -> StoreResult<Option<i64>> {
        Ok(self
            .sql_scalar("SELECT changes FROM board_periods WHERE board = ? AND period = ?")
            .bind(board)
            .bind(period)
            .fetch_optional(&mut *conn)
            .await?)
    }
}
