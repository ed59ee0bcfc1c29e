//! Board reads: rows in board order and the counts ranks are derived from.
//!
//! Keyset conditions are written as expanded `OR`s because MariaDB does not
//! use an index for row-constructor comparisons like `(a, b) < (?, ?)`.
//! Only players with `play_count > 0` are on a board.

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, AnyConnection, Row};

use super::Store;
use crate::domain::{Board, BoardKey};

/// One player as a board lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardRow {
    pub key: BoardKey,
    pub display_name: String,
}

impl BoardRow {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            key: BoardKey { score: row.try_get("score")?, at: row.try_get("at")?, id: row.try_get("id")? },
            display_name: row.try_get("display_name")?,
        })
    }
}

/// The statements of one board, so the two boards share all the code.
struct BoardSql {
    select: &'static str,
    order: &'static str,
    reverse_order: &'static str,
    /// Players strictly after a key in board order.
    after_key: &'static str,
    /// Players strictly before a key in board order.
    before_key: &'static str,
    score_column: &'static str,
}

const BEST: BoardSql = BoardSql {
    select: "SELECT id, display_name, best_score AS score, best_at AS at FROM users WHERE play_count > 0",
    order: "ORDER BY best_score DESC, best_at ASC, id ASC",
    reverse_order: "ORDER BY best_score ASC, best_at DESC, id DESC",
    after_key: "(best_score < ? OR (best_score = ? AND (best_at > ? OR (best_at = ? AND id > ?))))",
    before_key: "(best_score > ? OR (best_score = ? AND (best_at < ? OR (best_at = ? AND id < ?))))",
    score_column: "best_score",
};

const TOTAL: BoardSql = BoardSql {
    select: "SELECT id, display_name, total_score AS score, 0 AS at FROM users WHERE play_count > 0",
    order: "ORDER BY total_score DESC, id ASC",
    reverse_order: "ORDER BY total_score ASC, id DESC",
    after_key: "(total_score < ? OR (total_score = ? AND id > ?))",
    before_key: "(total_score > ? OR (total_score = ? AND id < ?))",
    score_column: "total_score",
};

fn statements(board: Board) -> &'static BoardSql {
    match board {
        Board::Best => &BEST,
        Board::Total => &TOTAL,
    }
}

/// Binds a key in the order the board's `after_key`/`before_key` expect.
fn bind_key<'q>(
    board: Board,
    query: Query<'q, Any, AnyArguments<'q>>,
    key: BoardKey,
) -> Query<'q, Any, AnyArguments<'q>> {
    match board {
        Board::Best => query.bind(key.score).bind(key.score).bind(key.at).bind(key.at).bind(key.id),
        Board::Total => query.bind(key.score).bind(key.score).bind(key.id),
    }
}

impl Store {
    /// `limit` rows starting at position `offset` (0-based).
    pub async fn board_rows_from_offset(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<BoardRow>, sqlx::Error> {
        let s = statements(board);
        let sql = format!("{} {} LIMIT ? OFFSET ?", s.select, s.order);
        let rows = self.sql(&sql).bind(limit).bind(offset).fetch_all(&mut *conn).await?;
        rows.iter().map(BoardRow::from_row).collect()
    }

    /// `limit` rows strictly after `key`, in board order.
    pub async fn board_rows_after(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        key: BoardKey,
        limit: i64,
    ) -> Result<Vec<BoardRow>, sqlx::Error> {
        let s = statements(board);
        let sql = format!("{} AND {} {} LIMIT ?", s.select, s.after_key, s.order);
        let rows = bind_key(board, self.sql(&sql), key).bind(limit).fetch_all(&mut *conn).await?;
        rows.iter().map(BoardRow::from_row).collect()
    }

    /// `limit` rows strictly before `key`, returned in board order.
    pub async fn board_rows_before(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        key: BoardKey,
        limit: i64,
    ) -> Result<Vec<BoardRow>, sqlx::Error> {
        let s = statements(board);
        let sql = format!("{} AND {} {} LIMIT ?", s.select, s.before_key, s.reverse_order);
        let rows = bind_key(board, self.sql(&sql), key).bind(limit).fetch_all(&mut *conn).await?;
        let mut rows = rows.iter().map(BoardRow::from_row).collect::<Result<Vec<_>, _>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// The row of one player on a board, if they are on it.
    pub async fn board_row(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        user_id: i64,
    ) -> Result<Option<BoardRow>, sqlx::Error> {
        let sql = format!("{} AND id = ?", statements(board).select);
        let row = self.sql(&sql).bind(user_id).fetch_optional(&mut *conn).await?;
        row.as_ref().map(BoardRow::from_row).transpose()
    }

    /// How many players come before `key` in board order (its 0-based position).
    pub async fn count_before_key(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        key: BoardKey,
    ) -> Result<i64, sqlx::Error> {
        let sql = format!("SELECT COUNT(*) AS n FROM users WHERE play_count > 0 AND {}", statements(board).before_key);
        bind_key(board, self.sql(&sql), key).fetch_one(&mut *conn).await?.try_get("n")
    }

    /// For each (board, score), how many players on that board have a
    /// strictly greater score, in one statement whatever the number of pairs.
    pub async fn counts_above(
        &self,
        conn: &mut AnyConnection,
        pairs: &[(Board, i64)],
    ) -> Result<Vec<i64>, sqlx::Error> {
        if pairs.is_empty() {
            return Ok(Vec::new());
        }
        let sql = pairs
            .iter()
            .enumerate()
            .map(|(i, (board, _))| {
                format!(
                    "SELECT {i} AS i, COUNT(*) AS n FROM users WHERE play_count > 0 AND {} > ?",
                    statements(*board).score_column
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let mut query = self.sql(&sql);
        for (_, score) in pairs {
            query = query.bind(*score);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        let mut counts = vec![0; pairs.len()];
        for row in rows {
            let i: i64 = row.try_get("i")?;
            let slot = usize::try_from(i).ok().and_then(|i| counts.get_mut(i));
            *slot.ok_or_else(|| sqlx::Error::Protocol("count index out of range".into()))? = row.try_get("n")?;
        }
        Ok(counts)
    }

    /// Players on the boards (both boards list the same players).
    pub async fn board_size(&self, conn: &mut AnyConnection) -> Result<i64, sqlx::Error> {
        self.sql("SELECT COUNT(*) AS n FROM users WHERE play_count > 0").fetch_one(&mut *conn).await?.try_get("n")
    }
}
