//! Partitions (v4 `partition_by`): each is a row of `boards` of its own,
//! opened by the first post to it, so that its entries, periods and posts
//! are stored, locked and ranked under its own number like any board's.

use sqlx::AnyConnection;

use super::{placeholders, Store, StoreResult};
use crate::domain::PartitionValue;

/// A partition with entries in a period, as `/partitions` lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PartitionRow {
    pub value: String,
    pub players: i64,
}

/// A partition's id in `boards`: no client id has a `:`.
fn partition_id(board: i64, value: &PartitionValue) -> String {
    format!("{board}:{}", value.as_str())
}

impl Store {
    /// Opens board `board`'s partition of `value` unless it is open (its
    /// row: a copy of the board's, marked as the partition); returns its
    /// number and whether this call opened it, or `None` when the board
    /// is gone. In the caller's transaction, which then holds the row.
    pub async fn open_partition(
        &self,
        tx: &mut AnyConnection,
        board: i64,
        value: &PartitionValue,
    ) -> StoreResult<Option<(i64, bool)>> {
        let id = partition_id(board, value);
        let sql = format!(
            "{} INTO boards (id, name, sort_order, operator, reset, timezone, archive_periods, min_score, max_score, \
             created_at, subscores, starts_at, ends_at, partition_of, partition_value) \
             SELECT ?, name, sort_order, operator, reset, timezone, archive_periods, min_score, max_score, created_at, \
             subscores, starts_at, ends_at, number, ? FROM boards WHERE number = ? AND partition_of IS NULL{}",
            self.dialect.insert_ignore(),
            self.dialect.on_conflict_ignore()
        );
        let opened =
            self.sql(&sql).bind(&id).bind(value.as_str()).bind(board).execute(&mut *tx).await?.rows_affected() == 1;
        if opened {
            self.bump_catalog_version(tx).await?;
        }
        let number: Option<i64> =
            self.sql_scalar("SELECT number FROM boards WHERE id = ?").bind(&id).fetch_optional(&mut *tx).await?;
        Ok(number.map(|number| (number, opened)))
    }

    /// The number of board `board`'s partition of `value`, if it was opened.
    pub async fn partition_number(&self, board: i64, value: &PartitionValue) -> StoreResult<Option<i64>> {
        let mut conn = self.conn().await?;
        let id = partition_id(board, value);
        Ok(self.sql_scalar("SELECT number FROM boards WHERE id = ?").bind(&id).fetch_optional(&mut *conn).await?)
    }

    /// Of these partitions (by number), those with entries in `period`,
    /// read under the lock the caller holds on their board's period.
    pub async fn partitions_with_entries(
        &self,
        conn: &mut AnyConnection,
        partitions: &[i64],
        period: i64,
    ) -> StoreResult<Vec<i64>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT board FROM board_periods WHERE board IN ({}) AND period = ? AND players > 0{}",
            placeholders(partitions.len()),
            self.dialect.share_lock()
        );
        let mut query = self.sql_scalar::<i64>(&sql).persistent(false);
        for number in partitions {
            query = query.bind(*number);
        }
        Ok(query.bind(period).fetch_all(&mut *conn).await?)
    }

    /// How many of board `board`'s partitions have entries in `period`
    /// (under the lock the caller holds on the board's period).
    pub async fn count_partitions_with_entries(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
    ) -> StoreResult<i64> {
        let sql = format!(
            "SELECT COUNT(*) FROM board_periods p JOIN boards b ON b.number = p.board \
             WHERE b.partition_of = ? AND p.period = ? AND p.players > 0{}",
            self.dialect.share_lock()
        );
        Ok(self.sql_scalar(&sql).bind(board).bind(period).fetch_one(&mut *conn).await?)
    }

    /// [`Store::count_partitions_with_entries`] as committed, outside a
    /// transaction (before a partition is opened).
    pub async fn partitions_with_entries_now(&self, board: i64, period: i64) -> StoreResult<i64> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_scalar(
                "SELECT COUNT(*) FROM board_periods p JOIN boards b ON b.number = p.board \
                 WHERE b.partition_of = ? AND p.period = ? AND p.players > 0",
            )
            .bind(board)
            .bind(period)
            .fetch_one(&mut *conn)
            .await?)
    }

    /// Board `board`'s partitions with entries in `period`, in byte order
    /// of their values, after `after`.
    pub async fn partitions_of(
        &self,
        board: i64,
        period: i64,
        after: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<PartitionRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT b.partition_value AS value, p.players AS players FROM boards b \
                 JOIN board_periods p ON p.board = b.number \
                 WHERE b.partition_of = ? AND p.period = ? AND p.players > 0 AND b.partition_value > ? \
                 ORDER BY b.partition_value LIMIT ?",
            )
            .bind(board)
            .bind(period)
            .bind(after.unwrap_or(""))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }
}
