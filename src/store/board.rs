//! What the rank engine and ranking pages read from `users`: the standings
//! to warm the engine, and display names for a page's entries.

use std::collections::HashMap;

use futures_util::{stream, StreamExt as _, TryStreamExt as _};
use sqlx::{AnyConnection, Row};

use super::{placeholders, Store};
use crate::rank::Standing;

impl Store {
    /// Every player on the boards (at least one score), read in id ranges
    /// as packed text (see `Dialect::standings_chunk`), two ranges at a
    /// time on two connections (the database's scan is the slow part).
    pub async fn board_standings(&self) -> Result<Vec<Standing>, sqlx::Error> {
        const IDS_PER_CHUNK: i64 = 50_000;
        const PARALLEL_READS: usize = 2;
        let mut conn = self.conn().await?;
        let max_id: Option<i64> =
            self.sql("SELECT MAX(id) AS max_id FROM users").fetch_one(&mut *conn).await?.try_get("max_id")?;
        drop(conn);
        let starts: Vec<i64> = (0..=max_id.unwrap_or(-1)).step_by(IDS_PER_CHUNK as usize).collect();
        let chunks: Vec<Vec<Standing>> = stream::iter(starts)
            .map(|from| self.standings_chunk(from, from + IDS_PER_CHUNK))
            .buffered(PARALLEL_READS)
            .try_collect()
            .await?;
        Ok(chunks.concat())
    }

    async fn standings_chunk(&self, from: i64, to: i64) -> Result<Vec<Standing>, sqlx::Error> {
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
            parse_standings(&chunk, &mut standings).map_err(sqlx::Error::Protocol)?;
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
        let placeholders = placeholders(ids.len());
        let sql = format!("SELECT id, display_name FROM users WHERE id IN ({placeholders})");
        let mut query = self.sql_once(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|row| Ok((row.try_get("id")?, row.try_get("display_name")?))).collect()
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
