//! Many rows read as packed text, a range of ids at a time: what warms
//! the rank engine (every player's standing on the built-in boards, a
//! custom board's entries). Read as driver rows, a million of them cost
//! seconds; as a few `group_concat` strings per 50,000 ids, a fraction
//! (BENCHMARKS.md, "Custom boards").

use std::sync::Arc;

use futures_util::{stream, Stream, StreamExt as _, TryStreamExt as _};

use super::{Standing, Store, StoreError, StoreResult};

/// The ids a [`Store::packed_rows`] read covers: from `first` to `last`
/// (inclusive), about `rows` rows in all.
#[derive(Debug, Clone, Copy)]
pub(super) struct IdSpan {
    pub first: i64,
    pub last: i64,
    pub rows: i64,
}

impl Store {
    /// Every player on the built-in boards (at least one score, not banned), read as
    /// packed text (see [`Store::packed_rows`]).
    pub async fn board_standings(&self) -> StoreResult<Vec<Standing>> {
        let chunks: Vec<Vec<Standing>> = self.board_standings_in_chunks().await?.try_collect().await?;
        Ok(chunks.concat())
    }

    /// [`Store::board_standings`] a chunk of about 50,000 at a time, for a
    /// reader that need not hold them all (a rebuild of the boards in Redis).
    pub async fn board_standings_in_chunks(&self) -> StoreResult<impl Stream<Item = StoreResult<Vec<Standing>>> + '_> {
        let mut conn = self.conn().await?;
        let max_id: Option<i64> = self.sql_scalar("SELECT MAX(id) FROM users").fetch_one(&mut *conn).await?;
        drop(conn);
        const FIELDS: [&str; 5] = ["id", "best_score", "IFNULL(best_at, 0)", "total_score", "version"];
        let from = format!("{} WHERE play_count > 0 AND banned_at IS NULL", self.dialect.users_by_id());
        // User ids are handed out one after another: about one row per id.
        let span = max_id.map(|last| IdSpan { first: 0, last, rows: last + 1 });
        Ok(self.packed_chunks(&FIELDS, &from, &[], "id", span).map_ok(|values| {
            values
                .chunks_exact(FIELDS.len())
                .map(|r| Standing { id: r[0], best: r[1], best_at: r[2], total: r[3], version: r[4], listed: true })
                .collect()
        }))
    }

    /// Integer columns of many rows, read as packed text: `FROM {from}`
    /// (bound by `binds`) in ranges of `id_column` over `span` (none: no
    /// rows). The values come back flat, `fields.len()` per row (one
    /// allocation rather than one per row).
    pub(super) async fn packed_rows(
        &self,
        fields: &[&str],
        from: &str,
        binds: &[i64],
        id_column: &str,
        span: Option<IdSpan>,
    ) -> StoreResult<Vec<i64>> {
        let chunks: Vec<Vec<i64>> = self.packed_chunks(fields, from, binds, id_column, span).try_collect().await?;
        Ok(chunks.concat())
    }

    /// [`Store::packed_rows`] a range at a time: about 50,000 rows a range
    /// whatever the ids (a board of 100 players with ids up to 10,000,000
    /// is one read, not 200), two ranges at a time on two connections (the
    /// database's scan is the slow part), in order.
    fn packed_chunks(
        &self,
        fields: &[&str],
        from: &str,
        binds: &[i64],
        id_column: &str,
        span: Option<IdSpan>,
    ) -> impl Stream<Item = StoreResult<Vec<i64>>> + '_ {
        const ROWS_PER_CHUNK: i64 = 50_000;
        const PARALLEL_READS: usize = 2;
        let sql: Arc<str> = format!(
            "SELECT {} AS chunk FROM {from} AND {id_column} >= ? AND {id_column} < ?",
            self.dialect.packed(fields)
        )
        .into();
        let binds: Arc<[i64]> = binds.into();
        let width = fields.len();
        let (starts, ids_per_chunk) = match span {
            None => (Vec::new(), 1),
            Some(IdSpan { first, last, rows }) => {
                let chunks = (rows / ROWS_PER_CHUNK + 1).max(1);
                let ids_per_chunk = ((last - first) / chunks + 1).max(1);
                let step = usize::try_from(ids_per_chunk).unwrap_or(usize::MAX);
                ((first..=last).step_by(step).collect(), ids_per_chunk)
            }
        };
        stream::iter(starts)
            .map(move |from| {
                let (sql, binds) = (Arc::clone(&sql), Arc::clone(&binds));
                async move { self.packed_chunk(&sql, &binds, from, from.saturating_add(ids_per_chunk), width).await }
            })
            .buffered(PARALLEL_READS)
    }

    async fn packed_chunk(&self, sql: &str, binds: &[i64], from: i64, to: i64, width: usize) -> StoreResult<Vec<i64>> {
        use sqlx::Row as _;
        let mut conn = self.conn().await?;
        let query = binds.iter().fold(self.sql(sql), |query, value| query.bind(*value));
        let row = query.bind(from).bind(to).fetch_one(&mut *conn).await?;
        // SQLite hands back text, MySQL a blob (GROUP_CONCAT beyond 512 bytes).
        let chunk = match row.try_get::<Option<String>, _>("chunk") {
            Ok(text) => text,
            Err(_) => {
                row.try_get::<Option<Vec<u8>>, _>("chunk")?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            }
        };
        chunk.map_or(Ok(Vec::new()), |chunk| parse_packed(&chunk, width).map_err(StoreError::Corrupt))
    }
}

/// Parses `a,b,…;a,b,…` of `width` integers per record into one flat list.
fn parse_packed(chunk: &str, width: usize) -> Result<Vec<i64>, String> {
    let mut values = Vec::new();
    for record in chunk.split(';').filter(|record| !record.is_empty()) {
        let before = values.len();
        for field in record.split(',') {
            values.push(field.parse().map_err(|_| format!("bad packed record {record:?}"))?);
        }
        if values.len() - before != width {
            return Err(format!("bad packed record {record:?}"));
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_packed_rows() {
        assert_eq!(parse_packed("1,50,1000,70,2;7,0,5,0,1", 5).unwrap(), [1, 50, 1000, 70, 2, 7, 0, 5, 0, 1]);
        assert_eq!(parse_packed("-3,4", 2).unwrap(), [-3, 4]);
        assert!(parse_packed("1,2,3", 5).is_err());
        assert!(parse_packed("1,x", 2).is_err());
        assert!(parse_packed("", 5).unwrap().is_empty());
    }
}
