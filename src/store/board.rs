//! What the rank engine and ranking pages read from `users`: the standings
//! to warm the engine, and display names for a page's entries.

use std::collections::HashMap;

use futures_util::TryStreamExt as _;
use sqlx::{AnyConnection, Row};

use super::Store;
use crate::rank::Standing;

impl Store {
    /// Every player on the boards (at least one score), streamed so that a
    /// million rows never sit in memory as driver rows.
    pub async fn board_standings(&self, conn: &mut AnyConnection) -> Result<Vec<Standing>, sqlx::Error> {
        let mut rows = self
            .sql("SELECT id, best_score, best_at, total_score, play_count FROM users WHERE play_count > 0")
            .fetch(conn);
        let mut standings = Vec::new();
        while let Some(row) = rows.try_next().await? {
            standings.push(Standing {
                id: row.try_get("id")?,
                best: row.try_get("best_score")?,
                best_at: row.try_get::<Option<i64>, _>("best_at")?.unwrap_or(0),
                total: row.try_get("total_score")?,
                plays: row.try_get("play_count")?,
            });
        }
        Ok(standings)
    }

    /// Display names of a page's players, in one query.
    pub async fn display_names(
        &self,
        conn: &mut AnyConnection,
        ids: &[i64],
    ) -> Result<HashMap<i64, String>, sqlx::Error> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let placeholders = vec!["?"; ids.len()].join(", ");
        let sql = format!("SELECT id, display_name FROM users WHERE id IN ({placeholders})");
        let mut query = self.sql(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|row| Ok((row.try_get("id")?, row.try_get("display_name")?))).collect()
    }
}
