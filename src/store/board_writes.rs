//! What the score writer does to the custom boards' tables inside its
//! batch transaction: a statement per kind of change (for all the batch's
//! boards and partitions at once), never one per post.

use std::collections::HashMap;

use sqlx::any::AnyArguments;
use sqlx::query::Query;
use sqlx::{Any, AnyConnection};

use super::board_reads::{rank_score, rank_subscores};
use super::custom_boards::{EntryRow, ENTRY_COLUMNS};
use super::{placeholders, rows_per_statement, statement_runs, Store, StoreResult};
use crate::boards::Period;
use crate::domain::{Board, BoardPeriod, PostStatus, Ranking, Timestamp};

/// A post to append to `board_scores`.
pub struct NewBoardPost<'a> {
    pub board: i64,
    pub period: i64,
    pub user_id: i64,
    pub score: i64,
    /// The post's subscores, as many as its board has.
    pub subscores: &'a [i64],
    pub metadata: Option<&'a str>,
    pub status: PostStatus,
    /// A fed post: its original's board id (`best` for `/api/scores`) and post id.
    pub via: Option<(&'a str, i64)>,
}

impl<'a> NewBoardPost<'a> {
    /// Binds the post's row, made at `at` (the 11 values of
    /// [`Store::insert_board_posts`]' columns).
    fn bind<'q>(&self, query: Query<'q, Any, AnyArguments<'q>>, at: Timestamp) -> Query<'q, Any, AnyArguments<'q>>
    where
        'a: 'q,
    {
        query
            .bind(self.board)
            .bind(self.period)
            .bind(self.user_id)
            .bind(self.score)
            .bind(self.subscores.first().copied())
            .bind(self.subscores.get(1).copied())
            .bind(self.metadata)
            .bind(at)
            .bind(self.status.as_str())
            .bind(self.via.map(|(board, _)| board))
            .bind(self.via.map(|(_, id)| id))
    }
}

/// An entry as a batch leaves it, on a board ordered by `ranking`.
pub struct EntryWrite<'a> {
    pub entry: &'a EntryRow,
    pub ranking: Ranking,
}

/// Players who got their first entry in a period, and the period's bounds
/// (its row is created by the first post if no clock recorded it yet).
pub struct PeriodPlayers {
    pub board: i64,
    pub period: i64,
    pub starts_at: Timestamp,
    pub ends_at: Option<Timestamp>,
    pub added: i64,
}

/// How [`Store::entries_of`] reads.
enum EntryRead {
    /// Locked until the transaction ends.
    ForUpdate,
    /// As committed.
    Committed,
    /// As committed, only those of players not banned.
    Listed,
}

impl Store {
    /// Which of these boards still exist, locked against deletion until the
    /// transaction ends (a share lock: other writers pass).
    pub async fn lock_boards(&self, conn: &mut AnyConnection, numbers: &[i64]) -> StoreResult<Vec<i64>> {
        let mut existing = Vec::with_capacity(numbers.len());
        for run in numbers.chunks(rows_per_statement(1)) {
            let sql = format!(
                "SELECT number FROM boards WHERE number IN ({}) ORDER BY number{}",
                placeholders(run.len()),
                self.dialect.share_lock()
            );
            let query =
                run.iter().fold(self.sql_scalar::<i64>(&sql).persistent(false), |query, number| query.bind(*number));
            existing.extend(query.fetch_all(&mut *conn).await?);
        }
        Ok(existing)
    }

    /// Takes the row of a board's period for this transaction (creating it
    /// for a period no clock recorded yet): writers of one board period
    /// queue here, one transaction at a time, before they lock its
    /// entries. Without it, two transactions that each lock the gap where
    /// a new entry goes, then insert into it, deadlock.
    pub async fn lock_period(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        starts_at: Timestamp,
        ends_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        let sql = format!(
            "INSERT INTO board_periods (board, period, starts_at, ends_at, players) VALUES (?, ?, ?, ?, 0){}",
            self.dialect.upsert_adding("board, period", "players")
        );
        self.sql(&sql).bind(board).bind(period).bind(starts_at).bind(ends_at).execute(&mut *conn).await?;
        Ok(())
    }

    /// [`Store::lock_period`] for several board periods in one statement,
    /// in the order given (the writer's: by board number).
    pub async fn lock_periods(&self, conn: &mut AnyConnection, periods: &[(i64, Period)]) -> StoreResult<()> {
        let rows: Vec<PeriodPlayers> = periods
            .iter()
            .map(|(board, period)| PeriodPlayers {
                board: *board,
                period: period.index,
                starts_at: period.start,
                ends_at: period.end,
                added: 0,
            })
            .collect();
        self.add_period_players(conn, &rows).await
    }

    /// Numbers `count` changes to a board period's entries: returns the
    /// first number, the others follow it. The caller holds the period's
    /// row (`lock_period`, `lock_existing_period`), so numbers are handed
    /// out in commit order, on every instance. A change clears the period's
    /// final standings, if it has them (a post committed just after the
    /// period ended): they are written again.
    pub async fn number_changes(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        count: i64,
    ) -> StoreResult<i64> {
        self.sql(
            "UPDATE board_periods SET changes = changes + ?, standings_changes = NULL WHERE board = ? AND period = ?",
        )
        .bind(count)
        .bind(board)
        .bind(period)
        .execute(&mut *conn)
        .await?;
        let changes = self.period_changes(conn, board, period).await?;
        Ok(changes - count + 1)
    }

    /// [`Store::number_changes`] for several board periods in two
    /// statements (a batch's boards, partitions included; two more for
    /// each run beyond what one statement takes): the first
    /// number of each, in the order given. The caller holds the periods'
    /// rows.
    pub async fn number_changes_of(
        &self,
        conn: &mut AnyConnection,
        counts: &[(i64, i64, i64)],
    ) -> StoreResult<Vec<i64>> {
        let mut firsts = Vec::with_capacity(counts.len());
        for run in statement_runs(counts, |_| 5) {
            firsts.extend(self.number_changes_in(conn, run).await?);
        }
        Ok(firsts)
    }

    /// [`Store::number_changes_of`] for as many board periods as one
    /// statement takes.
    async fn number_changes_in(&self, conn: &mut AnyConnection, counts: &[(i64, i64, i64)]) -> StoreResult<Vec<i64>> {
        let matches = vec!["(board = ? AND period = ?)"; counts.len()].join(" OR ");
        let sql = format!(
            "UPDATE board_periods SET changes = changes + CASE {} END, standings_changes = NULL WHERE {matches}",
            vec!["WHEN board = ? AND period = ? THEN ?"; counts.len()].join(" ")
        );
        let mut update = self.sql_once(&sql);
        for (board, period, count) in counts {
            update = update.bind(*board).bind(*period).bind(*count);
        }
        for (board, period, _) in counts {
            update = update.bind(*board).bind(*period);
        }
        update.execute(&mut *conn).await?;
        let sql = format!("SELECT board, period, changes FROM board_periods WHERE {matches}");
        let mut read = self.sql_as::<(i64, i64, i64)>(&sql).persistent(false);
        for (board, period, _) in counts {
            read = read.bind(*board).bind(*period);
        }
        let now: HashMap<(i64, i64), i64> =
            read.fetch_all(&mut *conn).await?.into_iter().map(|(b, p, changes)| ((b, p), changes)).collect();
        Ok(counts.iter().map(|(b, p, count)| now.get(&(*b, *p)).copied().unwrap_or(0) - count + 1).collect())
    }

    /// [`Store::entries_for_update`] for several board periods in one
    /// statement (a batch's boards, partitions included; one more for each
    /// run beyond what one statement takes): `players` gives
    /// each (board, period) its players. The caller holds the periods'
    /// rows, which every writer of their entries takes first.
    pub async fn entries_for_update_in(
        &self,
        conn: &mut AnyConnection,
        players: &[((i64, i64), Vec<i64>)],
    ) -> StoreResult<Vec<EntryRow>> {
        let players: Vec<&((i64, i64), Vec<i64>)> = players.iter().filter(|(_, ids)| !ids.is_empty()).collect();
        let mut entries = Vec::new();
        for run in statement_runs(&players, |(_, ids)| 2 + ids.len()) {
            entries.extend(self.entries_for_update_of(conn, run).await?);
        }
        Ok(entries)
    }

    /// [`Store::entries_for_update_in`] for as many board periods as one
    /// statement takes.
    async fn entries_for_update_of(
        &self,
        conn: &mut AnyConnection,
        players: &[&((i64, i64), Vec<i64>)],
    ) -> StoreResult<Vec<EntryRow>> {
        let condition: Vec<String> = players
            .iter()
            .map(|(_, ids)| format!("(board = ? AND period = ? AND user_id IN ({}))", placeholders(ids.len())))
            .collect();
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM {} WHERE {} ORDER BY board, period, user_id{}",
            self.dialect.entries_by_key(),
            condition.join(" OR "),
            self.dialect.lock_rows()
        );
        let mut query = self.sql_as::<EntryRow>(&sql).persistent(false);
        for ((board, period), ids) in players {
            query = query.bind(*board).bind(*period);
            for id in ids {
                query = query.bind(*id);
            }
        }
        Ok(query.fetch_all(&mut *conn).await?)
    }

    /// The entries of these players in one period of a board, locked until
    /// the transaction ends, in player order.
    pub async fn entries_for_update(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
    ) -> StoreResult<Vec<EntryRow>> {
        self.entries_of(conn, board, period, user_ids, EntryRead::ForUpdate).await
    }

    /// The entries of these players in one period of a board, as committed.
    pub async fn period_entries_of(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
    ) -> StoreResult<Vec<EntryRow>> {
        self.entries_of(conn, board, period, user_ids, EntryRead::Committed).await
    }

    /// The listed entries (of players not banned) among these players' in
    /// one period of a board, as committed.
    pub async fn listed_entries_of(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
    ) -> StoreResult<Vec<EntryRow>> {
        self.entries_of(conn, board, period, user_ids, EntryRead::Listed).await
    }

    async fn entries_of(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_ids: &[i64],
        read: EntryRead,
    ) -> StoreResult<Vec<EntryRow>> {
        if user_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (condition, lock) = match read {
            EntryRead::ForUpdate => ("", self.dialect.lock_rows()),
            EntryRead::Committed => ("", ""),
            EntryRead::Listed => (" AND hidden = 0", ""),
        };
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM {} WHERE board = ? AND period = ? AND user_id IN ({}){condition} \
             ORDER BY user_id{lock}",
            self.dialect.entries_by_key(),
            placeholders(user_ids.len()),
        );
        let mut query = self.sql_as::<EntryRow>(&sql).persistent(false).bind(board).bind(period);
        for id in user_ids {
            query = query.bind(*id);
        }
        Ok(query.fetch_all(&mut *conn).await?)
    }

    /// Appends posts in one statement; returns their ids in order (see
    /// `insert_scores` for how each backend reports them).
    pub async fn insert_board_posts(
        &self,
        conn: &mut AnyConnection,
        posts: &[NewBoardPost<'_>],
        at: Timestamp,
    ) -> StoreResult<Vec<i64>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        let columns = "INSERT INTO board_scores (board, period, user_id, score, subscore1, subscore2, metadata, \
                       created_at, status, via, via_post) VALUES";
        if self.inserts_one_by_one() {
            let mut ids = Vec::with_capacity(posts.len());
            let sql = format!("{columns} (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
            for post in posts {
                let query = post.bind(self.sql(&sql), at);
                ids.push(self.insert_returning_id(conn, query).await?);
            }
            return Ok(ids);
        }
        let mut ids = Vec::with_capacity(posts.len());
        for run in posts.chunks(rows_per_statement(11)) {
            let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; run.len()].join(", ");
            let sql = self.insert_sql(&format!("{columns} {values}"), "id");
            let query = run.iter().fold(self.sql_once(&sql), |query, post| post.bind(query, at));
            ids.extend(self.inserted_ids(conn, query, run.len()).await?);
        }
        Ok(ids)
    }

    /// Writes entries as a batch left them, new and changed alike, in one
    /// statement per [`rows_per_statement`] (their rows are locked by
    /// `entries_for_update`).
    pub async fn write_entries(&self, conn: &mut AnyConnection, entries: &[EntryWrite<'_>]) -> StoreResult<()> {
        for run in entries.chunks(rows_per_statement(15)) {
            self.write_entries_in(conn, run).await?;
        }
        Ok(())
    }

    /// [`Store::write_entries`] for as many entries as one statement takes.
    async fn write_entries_in(&self, conn: &mut AnyConnection, entries: &[EntryWrite<'_>]) -> StoreResult<()> {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; entries.len()].join(", ");
        let updated = [
            "score",
            "rank_score",
            "subscore1",
            "subscore2",
            "rank_sub1",
            "rank_sub2",
            "achieved_at",
            "post_id",
            "metadata",
            "plays",
            "version",
            "changed",
        ];
        let sql = format!(
            "INSERT INTO board_entries (board, period, user_id, score, rank_score, subscore1, subscore2, rank_sub1, \
             rank_sub2, achieved_at, post_id, metadata, plays, version, changed) VALUES {values}{}",
            self.dialect.upsert("board, period, user_id", &updated)
        );
        let mut query = self.sql_once(&sql);
        for EntryWrite { entry, ranking } in entries {
            let board = BoardPeriod { board: Board::Custom(entry.board), ranking: *ranking, period: entry.period };
            let [rank_sub1, rank_sub2] = rank_subscores(board, &entry.key());
            query = query
                .bind(entry.board)
                .bind(entry.period)
                .bind(entry.user_id)
                .bind(entry.score)
                .bind(rank_score(ranking.score, entry.score))
                .bind(entry.subscore1)
                .bind(entry.subscore2)
                .bind(rank_sub1)
                .bind(rank_sub2)
                .bind(entry.achieved_at)
                .bind(entry.post_id)
                .bind(entry.metadata.as_deref())
                .bind(entry.plays)
                .bind(entry.version)
                .bind(entry.changed);
        }
        query.execute(&mut *conn).await?;
        Ok(())
    }

    /// Counts players who got their first entry in a period, creating the
    /// period's row if no clock recorded it yet.
    pub async fn add_period_players(&self, conn: &mut AnyConnection, rows: &[PeriodPlayers]) -> StoreResult<()> {
        for run in rows.chunks(rows_per_statement(5)) {
            let values = vec!["(?, ?, ?, ?, ?)"; run.len()].join(", ");
            let sql = format!(
                "INSERT INTO board_periods (board, period, starts_at, ends_at, players) VALUES {values}{}",
                self.dialect.upsert_adding("board, period", "players")
            );
            let query = run.iter().fold(self.sql_once(&sql), |query, row| {
                query.bind(row.board).bind(row.period).bind(row.starts_at).bind(row.ends_at).bind(row.added)
            });
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }
}
