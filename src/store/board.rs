//! What the rank engine and ranking pages read from `users`: the standings
//! to warm the engine, display names for a page's entries, and the boards
//! themselves, straight from the indexes, for the engine to answer from
//! while the shared board in Redis is down.

use std::collections::HashMap;

use futures_util::{stream, StreamExt as _, TryStreamExt as _};
use sqlx::AnyConnection;

use super::{placeholders, Standing, Store, StoreError, StoreResult};
use crate::domain::{Board, BoardKey};

/// One board's statements. Board order is score descending, then (best
/// board) `best_at` ascending, then id ascending; players are the users
/// with at least one score, which are exactly those with a `best_at` (the
/// first score is always a best). Testing `best_at` rather than
/// `play_count` keeps each statement inside the board's index
/// (`users_best_board`, `users_total_board`, both holding `best_at`): at a
/// million players, a page at offset 500,000 by `play_count` was a table
/// scan and a sort (0.75 s on MariaDB), by `best_at` an index walk.
struct BoardSql {
    /// Up to `?` keys from position `?`.
    keys_at: &'static str,
    /// Up to `?` keys after a key (bound by [`bind_key`]).
    keys_after: &'static str,
    /// Players before a key (bound by [`bind_key`]).
    position_of: &'static str,
    /// The score column: a row with a strictly greater score than a given
    /// one is always a player (scores are never negative), so counting
    /// those needs no `play_count` test and stays inside the index.
    score_column: &'static str,
    /// The key of player `?`, if on the board.
    key_of: &'static str,
}

const BEST_SQL: BoardSql = BoardSql {
    keys_at: "SELECT id, best_score AS score, best_at AS at FROM users WHERE best_at IS NOT NULL \
              ORDER BY best_score DESC, best_at, id LIMIT ? OFFSET ?",
    keys_after: "SELECT id, best_score AS score, best_at AS at FROM users WHERE best_at IS NOT NULL \
                 AND (best_score < ? OR (best_score = ? AND (best_at > ? OR (best_at = ? AND id > ?)))) \
                 ORDER BY best_score DESC, best_at, id LIMIT ?",
    position_of: "SELECT COUNT(*) AS n FROM users WHERE best_at IS NOT NULL \
                  AND (best_score > ? OR (best_score = ? AND (best_at < ? OR (best_at = ? AND id < ?))))",
    score_column: "best_score",
    key_of: "SELECT id, best_score AS score, best_at AS at FROM users WHERE id = ? AND best_at IS NOT NULL",
};

const TOTAL_SQL: BoardSql = BoardSql {
    keys_at: "SELECT id, total_score AS score, NULL AS at FROM users WHERE best_at IS NOT NULL \
              ORDER BY total_score DESC, id LIMIT ? OFFSET ?",
    keys_after: "SELECT id, total_score AS score, NULL AS at FROM users WHERE best_at IS NOT NULL \
                 AND (total_score < ? OR (total_score = ? AND id > ?)) ORDER BY total_score DESC, id LIMIT ?",
    position_of: "SELECT COUNT(*) AS n FROM users WHERE best_at IS NOT NULL \
                  AND (total_score > ? OR (total_score = ? AND id < ?))",
    score_column: "total_score",
    key_of: "SELECT id, total_score AS score, NULL AS at FROM users WHERE id = ? AND best_at IS NOT NULL",
};

fn board_sql(board: Board) -> &'static BoardSql {
    match board {
        Board::Best => &BEST_SQL,
        Board::Total => &TOTAL_SQL,
    }
}

/// The values a "before / after this key" condition binds, in order.
fn key_binds(board: Board, key: BoardKey) -> Vec<i64> {
    match board {
        Board::Best => vec![key.score, key.score, key.at, key.at, key.id],
        Board::Total => vec![key.score, key.score, key.id],
    }
}

/// A board entry as the board statements select it (`at` is NULL on the
/// total board, which does not order by time).
#[derive(sqlx::FromRow)]
struct KeyRow {
    id: i64,
    score: i64,
    at: Option<i64>,
}

impl From<KeyRow> for BoardKey {
    fn from(row: KeyRow) -> Self {
        BoardKey { score: row.score, at: row.at.unwrap_or(0), id: row.id }
    }
}

/// A display name of a page's player.
#[derive(sqlx::FromRow)]
struct NameRow {
    id: i64,
    display_name: String,
}

impl Store {
    /// Every player on the boards (at least one score), read in id ranges
    /// as packed text (see `Dialect::standings_chunk`), two ranges at a
    /// time on two connections (the database's scan is the slow part).
    pub async fn board_standings(&self) -> StoreResult<Vec<Standing>> {
        const IDS_PER_CHUNK: i64 = 50_000;
        const PARALLEL_READS: usize = 2;
        let mut conn = self.conn().await?;
        let max_id: Option<i64> = self.sql_scalar("SELECT MAX(id) FROM users").fetch_one(&mut *conn).await?;
        drop(conn);
        let starts: Vec<i64> = (0..=max_id.unwrap_or(-1)).step_by(IDS_PER_CHUNK as usize).collect();
        let chunks: Vec<Vec<Standing>> = stream::iter(starts)
            .map(|from| self.standings_chunk(from, from + IDS_PER_CHUNK))
            .buffered(PARALLEL_READS)
            .try_collect()
            .await?;
        Ok(chunks.concat())
    }

    async fn standings_chunk(&self, from: i64, to: i64) -> StoreResult<Vec<Standing>> {
        use sqlx::Row as _;
        let mut conn = self.conn().await?;
        let row = self.sql(self.dialect.standings_chunk()).bind(from).bind(to).fetch_one(&mut *conn).await?;
        // SQLite hands back text, MySQL a blob (GROUP_CONCAT beyond 512 bytes).
        let chunk = match row.try_get::<Option<String>, _>("chunk") {
            Ok(text) => text,
            Err(_) => {
                row.try_get::<Option<Vec<u8>>, _>("chunk")?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            }
        };
        let mut standings = Vec::new();
        if let Some(chunk) = chunk {
            parse_standings(&chunk, &mut standings).map_err(StoreError::Corrupt)?;
        }
        Ok(standings)
    }

    /// Display names of a page's players, in one query.
    pub async fn display_names(&self, ids: &[i64]) -> StoreResult<HashMap<i64, String>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = format!("SELECT id, display_name FROM users WHERE id IN ({})", placeholders(ids.len()));
        let mut query = self.sql_as::<NameRow>(&sql).persistent(false);
        for id in ids {
            query = query.bind(*id);
        }
        let mut conn = self.conn().await?;
        let rows = query.fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(|row| (row.id, row.display_name)).collect())
    }
}

/// The boards straight from the database's indexes: what the rank engine
/// reads while the shared board in Redis is unusable. Each takes the
/// connection of the caller's read snapshot.
impl Store {
    /// Players on the boards (the same on both), from `board_stats`.
    pub async fn board_players(&self, conn: &mut AnyConnection) -> StoreResult<i64> {
        let players: Option<i64> =
            self.sql_scalar("SELECT players FROM board_stats WHERE id = 1").fetch_optional(&mut *conn).await?;
        Ok(players.unwrap_or(0))
    }

    /// Adds players who got their first score, inside the transaction that
    /// gave it to them.
    pub async fn add_board_players(&self, conn: &mut AnyConnection, added: i64) -> StoreResult<()> {
        self.sql("UPDATE board_stats SET players = players + ? WHERE id = 1").bind(added).execute(&mut *conn).await?;
        Ok(())
    }

    /// For each (board, score): how many players have a strictly greater
    /// score, i.e. the score's competition rank minus one. One round trip.
    pub async fn board_players_above(
        &self,
        conn: &mut AnyConnection,
        scores: &[(Board, i64)],
    ) -> StoreResult<Vec<i64>> {
        use sqlx::Row as _;
        if scores.is_empty() {
            return Ok(Vec::new());
        }
        let counts: Vec<String> = scores
            .iter()
            .enumerate()
            .map(|(i, (board, _))| {
                format!("(SELECT COUNT(*) FROM users WHERE {} > ?) AS n{i}", board_sql(*board).score_column)
            })
            .collect();
        let sql = format!("SELECT {}", counts.join(", "));
        let mut query = self.sql_once(&sql);
        for (_, score) in scores {
            query = query.bind(*score);
        }
        let row = query.fetch_one(&mut *conn).await?;
        Ok((0..scores.len()).map(|i| row.try_get(i)).collect::<Result<_, _>>()?)
    }

    /// Players before `key` in the board's order.
    pub async fn board_position_of(&self, conn: &mut AnyConnection, board: Board, key: BoardKey) -> StoreResult<i64> {
        let query = self.sql_scalar(board_sql(board).position_of);
        let query = key_binds(board, key).into_iter().fold(query, |query, value| query.bind(value));
        Ok(query.fetch_one(&mut *conn).await?)
    }

    /// Up to `count` keys from 0-based `position`.
    pub async fn board_keys_at(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        position: i64,
        count: i64,
    ) -> StoreResult<Vec<BoardKey>> {
        let rows: Vec<KeyRow> =
            self.sql_as(board_sql(board).keys_at).bind(count).bind(position).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(BoardKey::from).collect())
    }

    /// Up to `count` keys after `key` (which need not exist any more).
    pub async fn board_keys_after(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        key: BoardKey,
        count: i64,
    ) -> StoreResult<Vec<BoardKey>> {
        let query = self.sql_as::<KeyRow>(board_sql(board).keys_after);
        let query = key_binds(board, key).into_iter().fold(query, |query, value| query.bind(value));
        let rows = query.bind(count).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(BoardKey::from).collect())
    }

    /// A player's key, if they are on the board.
    pub async fn board_key_of(&self, conn: &mut AnyConnection, board: Board, id: i64) -> StoreResult<Option<BoardKey>> {
        let row: Option<KeyRow> = self.sql_as(board_sql(board).key_of).bind(id).fetch_optional(&mut *conn).await?;
        Ok(row.map(BoardKey::from))
    }
}

/// Parses `id,best,best_at,total,plays;…`.
fn parse_standings(chunk: &str, out: &mut Vec<Standing>) -> Result<(), String> {
    for record in chunk.split(';').filter(|r| !r.is_empty()) {
        let mut fields = record.split(',').map(str::parse::<i64>);
        let mut next = || fields.next().and_then(Result::ok).ok_or_else(|| format!("bad standings record {record:?}"));
        out.push(Standing { id: next()?, best: next()?, best_at: next()?, total: next()?, plays: next()? });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_packed_standings() {
        let mut out = Vec::new();
        parse_standings("1,50,1000,70,2;7,0,5,0,1", &mut out).unwrap();
        assert_eq!(
            out,
            [
                Standing { id: 1, best: 50, best_at: 1000, total: 70, plays: 2 },
                Standing { id: 7, best: 0, best_at: 5, total: 0, plays: 1 },
            ]
        );
        assert!(parse_standings("1,2,3", &mut out).is_err());
        assert!(parse_standings("", &mut out).is_ok());
    }
}
