//! The custom boards' tables: the catalog (`boards`, with its rules,
//! tournament terms and reward bands), each player's entry per period
//! (`board_entries`) and the posts (`board_scores`). Their periods
//! (`board_periods`): `board_periods`.

use sqlx::AnyConnection;

use super::{Store, StoreError, StoreResult, UniqueKey};
use crate::domain::{BoardKey, PartitionOf, PartitionValue, Timestamp, MAX_SUBSCORES};

/// A row of the catalog.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct BoardRow {
    pub number: i64,
    pub id: String,
    pub name: String,
    pub sort_order: String,
    pub operator: String,
    pub reset: Option<String>,
    pub timezone: String,
    pub archive_periods: i64,
    pub min_score: i64,
    pub max_score: i64,
    pub created_at: Timestamp,
    #[sqlx(flatten)]
    pub rules: RulesRow,
    /// As at creation.
    #[sqlx(flatten)]
    pub tournament: TournamentRow,
    /// 1: a league's own board.
    pub league: i64,
    /// The subscores, as a JSON list (see `domain::Subscore`).
    pub subscores: String,
    /// Partitions (v4): the metadata field, the most a period opens, the
    /// only values taken (a JSON list).
    pub partition_by: Option<String>,
    pub max_partitions: i64,
    pub partition_values: Option<String>,
    /// A partition's row: its board's number and its value.
    pub partition_of: Option<i64>,
    pub partition_value: Option<String>,
}

impl BoardRow {
    /// Where a partition's row belongs; `None` for a board's (or a
    /// partition row this version cannot read).
    pub fn partition(&self) -> Option<PartitionOf> {
        let value = PartitionValue::parse_str(self.partition_value.as_deref()?)?;
        Some(PartitionOf { board: self.partition_of?, value })
    }
}

const BOARD_COLUMNS: &str = "number, id, name, sort_order, operator, reset, timezone, archive_periods, min_score, \
                             max_score, created_at, min_interval_ms, writers, hold_beyond, hold_jump, feeds, \
                             join_required, max_entrants, max_attempts, starts_at, ends_at, league, subscores, \
                             partition_by, max_partitions, partition_values, partition_of, partition_value";

/// A tournament's fields (on `boards` and on `board_terms` alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct TournamentRow {
    /// 0 or 1.
    pub join_required: i64,
    pub max_entrants: Option<i64>,
    pub max_attempts: Option<i64>,
    pub starts_at: Option<Timestamp>,
    pub ends_at: Option<Timestamp>,
}

/// A change to a tournament's fields, in force from `from_period` on
/// (`board_terms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct TermsRow {
    pub board: i64,
    pub from_period: i64,
    #[sqlx(flatten)]
    pub fields: TournamentRow,
}

/// A change to a tournament's fields, and the period in force when it was
/// made, recorded with its end under the change (an instance reloading
/// the catalog resumes its clock from the latest recorded period).
pub struct TermsChange {
    pub row: TermsRow,
    pub current: crate::boards::Period,
}

/// A board's rule columns (v3 score integrity), on `boards` and on
/// `builtin_board_rules` alike.
#[derive(Debug, Clone, PartialEq, Default, sqlx::FromRow)]
pub struct RulesRow {
    pub min_interval_ms: Option<i64>,
    /// `players` or `server`.
    pub writers: String,
    pub hold_beyond: Option<i64>,
    pub hold_jump: Option<f64>,
    /// The fed boards' numbers, as a JSON list.
    pub feeds: String,
}

/// The rules of a built-in board, as stored once set.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct BuiltinRulesRow {
    /// `best` or `total`.
    pub board: String,
    #[sqlx(flatten)]
    pub rules: RulesRow,
}

/// A player's entry on a board in a period.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EntryRow {
    pub board: i64,
    pub period: i64,
    pub user_id: i64,
    pub score: i64,
    /// The board's subscores (0 for those it does not have).
    pub subscore1: i64,
    pub subscore2: i64,
    pub achieved_at: Timestamp,
    pub post_id: i64,
    pub metadata: Option<String>,
    pub plays: i64,
    pub version: i64,
    /// The number of the period's change that last wrote the entry (see
    /// [`Store::number_changes`]).
    pub changed: i64,
}

impl EntryRow {
    pub fn subscores(&self) -> [i64; MAX_SUBSCORES] {
        [self.subscore1, self.subscore2]
    }

    /// The entry's place in its board's order.
    pub fn key(&self) -> BoardKey {
        BoardKey { score: self.score, subscores: self.subscores(), at: self.achieved_at.millis(), id: self.user_id }
    }
}

pub(super) const ENTRY_COLUMNS: &str =
    "board, period, user_id, score, subscore1, subscore2, achieved_at, post_id, metadata, plays, version, changed";

/// What [`Store::purge_chunk`] deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purge {
    /// A period no longer kept.
    Period { board: i64, period: i64 },
    /// Everything of a deleted board.
    Board(i64),
}

/// A post to a custom board.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BoardScoreRow {
    pub id: i64,
    pub board: i64,
    pub period: i64,
    pub user_id: i64,
    pub score: i64,
    /// The post's subscores, as many as its board has (NULL beyond).
    pub subscore1: Option<i64>,
    pub subscore2: Option<i64>,
    pub metadata: Option<String>,
    pub created_at: Timestamp,
    /// `accepted`, `held` or `rejected` (see `domain::PostStatus`).
    pub status: String,
    /// A fed post: its original's board (`best` for `/api/scores`).
    pub via: Option<String>,
}

impl BoardScoreRow {
    /// The post's subscores, as many as its board has.
    pub fn subscores(&self) -> Vec<i64> {
        [self.subscore1, self.subscore2].into_iter().flatten().collect()
    }
}

/// What a new board stores.
pub struct NewBoard<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub sort_order: &'a str,
    pub operator: &'a str,
    pub reset: Option<&'a str>,
    pub timezone: &'a str,
    pub archive_periods: i64,
    pub min_score: i64,
    pub max_score: i64,
    pub created_at: Timestamp,
    pub rules: &'a RulesRow,
    pub join_required: bool,
    pub max_entrants: Option<i64>,
    pub max_attempts: Option<i64>,
    pub starts_at: Option<Timestamp>,
    pub ends_at: Option<Timestamp>,
    /// The ladder, when the board is a league's own.
    pub league: Option<&'a LadderRow>,
    /// The subscores, as a JSON list (see `domain::Subscore`).
    pub subscores: &'a str,
    /// The reward bands (v4).
    pub rewards: &'a [BandRow],
    /// Partitions (v4; see [`BoardRow`]).
    pub partition_by: Option<&'a str>,
    pub max_partitions: i64,
    pub partition_values: Option<&'a str>,
}

/// A reward band of a board (`board_rewards`): ranks `rank_from..=rank_to`,
/// or a `top_percent` in hundredths; the reward's JSON text.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BandRow {
    pub board: i64,
    /// The band's place in the board's list, from 0.
    pub band: i64,
    pub rank_from: Option<i64>,
    pub rank_to: Option<i64>,
    pub top_percent: Option<i64>,
    pub reward: String,
}

/// A league's ladder as stored (`leagues`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LadderRow {
    /// The tiers' names, lowest first: a JSON list.
    pub tiers: String,
    pub cohort_size: i64,
    pub promote: i64,
    pub demote: i64,
}

impl LadderRow {
    pub fn of(ladder: &crate::domain::Ladder) -> Self {
        Self {
            tiers: serde_json::Value::from(ladder.tiers.clone()).to_string(),
            cohort_size: ladder.cohort_size,
            promote: ladder.promote,
            demote: ladder.demote,
        }
    }

    /// The ladder as stored (written by [`LadderRow::of`], so valid).
    pub fn ladder(&self) -> crate::domain::Ladder {
        crate::domain::Ladder {
            tiers: serde_json::from_str(&self.tiers).unwrap_or_default(),
            cohort_size: self.cohort_size,
            promote: self.promote,
            demote: self.demote,
        }
    }
}

impl Store {
    /// Adds a board and its period 0; `Taken(BoardId)` when the id exists.
    pub async fn insert_board(
        &self,
        tx: &mut AnyConnection,
        board: &NewBoard<'_>,
        first_period_end: Option<Timestamp>,
    ) -> StoreResult<i64> {
        let sql = self.insert_sql(
            "INSERT INTO boards (id, name, sort_order, operator, reset, timezone, archive_periods, min_score, \
             max_score, created_at, min_interval_ms, writers, hold_beyond, hold_jump, feeds, join_required, \
             max_entrants, max_attempts, starts_at, ends_at, league, subscores, partition_by, max_partitions, \
             partition_values) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            "number",
        );
        let query = self
            .sql(&sql)
            .bind(board.id)
            .bind(board.name)
            .bind(board.sort_order)
            .bind(board.operator)
            .bind(board.reset)
            .bind(board.timezone)
            .bind(board.archive_periods)
            .bind(board.min_score)
            .bind(board.max_score)
            .bind(board.created_at)
            .bind(board.rules.min_interval_ms)
            .bind(&board.rules.writers)
            .bind(board.rules.hold_beyond)
            .bind(board.rules.hold_jump)
            .bind(&board.rules.feeds)
            .bind(i64::from(board.join_required))
            .bind(board.max_entrants)
            .bind(board.max_attempts)
            .bind(board.starts_at)
            .bind(board.ends_at)
            .bind(i64::from(board.league.is_some()))
            .bind(board.subscores)
            .bind(board.partition_by)
            .bind(board.max_partitions)
            .bind(board.partition_values);
        let number = self.insert_returning_id(tx, query).await.map_err(StoreError::taken_as(UniqueKey::BoardId))?;
        self.set_rewards(tx, number, board.rewards).await?;
        if let Some(ladder) = board.league {
            self.sql("INSERT INTO leagues (board, tiers, cohort_size, promote, demote) VALUES (?, ?, ?, ?, ?)")
                .bind(number)
                .bind(&ladder.tiers)
                .bind(ladder.cohort_size)
                .bind(ladder.promote)
                .bind(ladder.demote)
                .execute(&mut *tx)
                .await?;
        }
        self.sql("INSERT INTO board_periods (board, period, starts_at, ends_at, players) VALUES (?, 0, ?, ?, 0)")
            .bind(number)
            .bind(board.created_at)
            .bind(first_period_end)
            .execute(&mut *tx)
            .await?;
        self.bump_catalog_version(tx).await?;
        Ok(number)
    }

    /// Replaces a board's reward bands (their `board` and `band` are
    /// `number` and their place in `bands`).
    async fn set_rewards(&self, tx: &mut AnyConnection, number: i64, bands: &[BandRow]) -> StoreResult<()> {
        self.sql("DELETE FROM board_rewards WHERE board = ?").bind(number).execute(&mut *tx).await?;
        for (index, band) in bands.iter().enumerate() {
            self.sql(
                "INSERT INTO board_rewards (board, band, rank_from, rank_to, top_percent, reward) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(number)
            .bind(index as i64)
            .bind(band.rank_from)
            .bind(band.rank_to)
            .bind(band.top_percent)
            .bind(&band.reward)
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    }

    /// Every board's reward bands, by board and band.
    pub async fn board_rewards(&self) -> StoreResult<Vec<BandRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, band, rank_from, rank_to, top_percent, reward FROM board_rewards ORDER BY board, band",
            )
            .fetch_all(&mut *conn)
            .await?)
    }

    /// One board's reward bands as they stand in the caller's transaction
    /// (what a close grants).
    pub async fn rewards_of(&self, conn: &mut AnyConnection, number: i64) -> StoreResult<Vec<BandRow>> {
        Ok(self
            .sql_as("SELECT board, band, rank_from, rank_to, top_percent, reward FROM board_rewards WHERE board = ? ORDER BY band")
            .bind(number)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Every board of the catalog.
    pub async fn boards(&self) -> StoreResult<Vec<BoardRow>> {
        let mut conn = self.conn().await?;
        let sql = format!("SELECT {BOARD_COLUMNS} FROM boards ORDER BY id");
        Ok(self.sql_as(&sql).fetch_all(&mut *conn).await?)
    }

    /// One board by id.
    pub async fn board(&self, id: &str) -> StoreResult<Option<BoardRow>> {
        let mut conn = self.conn().await?;
        let sql = format!("SELECT {BOARD_COLUMNS} FROM boards WHERE id = ?");
        Ok(self.sql_as(&sql).bind(id).fetch_optional(&mut *conn).await?)
    }

    /// Bumped by every change to the catalog (instances watch it).
    pub async fn catalog_version(&self) -> StoreResult<i64> {
        let mut conn = self.conn().await?;
        Ok(self.sql_scalar("SELECT version FROM catalog_version WHERE id = 1").fetch_one(&mut *conn).await?)
    }

    pub(super) async fn bump_catalog_version(&self, conn: &mut sqlx::AnyConnection) -> StoreResult<()> {
        self.sql("UPDATE catalog_version SET version = version + 1 WHERE id = 1").execute(&mut *conn).await?;
        Ok(())
    }

    /// A board's new name and rules, and a change to its tournament's
    /// fields; `false` when there is no such board.
    pub async fn amend_board(
        &self,
        tx: &mut AnyConnection,
        id: &str,
        name: &str,
        rules: &RulesRow,
        rewards: Option<&[BandRow]>,
        change: Option<&TermsChange>,
    ) -> StoreResult<bool> {
        let done = self
            .sql(
                "UPDATE boards SET name = ?, min_interval_ms = ?, writers = ?, hold_beyond = ?, hold_jump = ?, \
                 feeds = ? WHERE id = ?",
            )
            .bind(name)
            .bind(rules.min_interval_ms)
            .bind(&rules.writers)
            .bind(rules.hold_beyond)
            .bind(rules.hold_jump)
            .bind(&rules.feeds)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        if let Some(rewards) = rewards {
            let number: i64 =
                self.sql_scalar("SELECT number FROM boards WHERE id = ?").bind(id).fetch_one(&mut *tx).await?;
            self.set_rewards(tx, number, rewards).await?;
        }
        if let Some(change) = change {
            self.change_terms(tx, change).await?;
        }
        self.bump_catalog_version(tx).await?;
        Ok(true)
    }

    /// Stores a change to a tournament's fields: it replaces the changes
    /// from its period on, and the changes no period from the one in force
    /// on needs any more go.
    async fn change_terms(&self, conn: &mut sqlx::AnyConnection, change: &TermsChange) -> StoreResult<()> {
        let (row, current) = (&change.row, change.current);
        self.record_periods_on(conn, row.board, &[current]).await?;
        self.sql("UPDATE board_periods SET ends_at = ? WHERE board = ? AND period = ? AND closed_at IS NULL")
            .bind(current.end)
            .bind(row.board)
            .bind(current.index)
            .execute(&mut *conn)
            .await?;
        self.sql("DELETE FROM board_terms WHERE board = ? AND from_period >= ?")
            .bind(row.board)
            .bind(row.from_period)
            .execute(&mut *conn)
            .await?;
        self.sql(
            "INSERT INTO board_terms (board, from_period, join_required, max_entrants, max_attempts, starts_at, \
             ends_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(row.board)
        .bind(row.from_period)
        .bind(row.fields.join_required)
        .bind(row.fields.max_entrants)
        .bind(row.fields.max_attempts)
        .bind(row.fields.starts_at)
        .bind(row.fields.ends_at)
        .execute(&mut *conn)
        .await?;
        let in_force: Option<i64> = self
            .sql_scalar("SELECT MAX(from_period) FROM board_terms WHERE board = ? AND from_period <= ?")
            .bind(row.board)
            .bind(current.index)
            .fetch_one(&mut *conn)
            .await?;
        if let Some(in_force) = in_force {
            self.sql("DELETE FROM board_terms WHERE board = ? AND from_period < ?")
                .bind(row.board)
                .bind(in_force)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// Every change to a tournament's fields, of every board.
    pub async fn board_terms(&self) -> StoreResult<Vec<TermsRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, from_period, join_required, max_entrants, max_attempts, starts_at, ends_at \
                 FROM board_terms ORDER BY board, from_period",
            )
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The rules set on the built-in boards.
    pub async fn builtin_rules(&self) -> StoreResult<Vec<BuiltinRulesRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, min_interval_ms, writers, hold_beyond, hold_jump, feeds FROM builtin_board_rules \
                 ORDER BY board",
            )
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Sets a built-in board's rules (every instance reloads them with the catalog).
    pub async fn set_builtin_rules(&self, tx: &mut AnyConnection, rules: &BuiltinRulesRow) -> StoreResult<()> {
        self.sql("DELETE FROM builtin_board_rules WHERE board = ?").bind(&rules.board).execute(&mut *tx).await?;
        self.sql(
            "INSERT INTO builtin_board_rules (board, min_interval_ms, writers, hold_beyond, hold_jump, feeds) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&rules.board)
        .bind(rules.rules.min_interval_ms)
        .bind(&rules.rules.writers)
        .bind(rules.rules.hold_beyond)
        .bind(rules.rules.hold_jump)
        .bind(&rules.rules.feeds)
        .execute(&mut *tx)
        .await?;
        self.bump_catalog_version(tx).await?;
        Ok(())
    }

    /// Deletes a board from the catalog; `false` when there is no such
    /// board. Its periods, entries and posts are left to
    /// [`Store::purge_chunk`]: nothing reads them once the catalog has no
    /// board of that number (numbers are never reused), and deleting a
    /// million rows in this transaction would hold every post behind it.
    pub async fn delete_board(&self, tx: &mut AnyConnection, number: i64) -> StoreResult<bool> {
        // Its partitions with it (their rows are purged as its are).
        let done = self
            .sql("DELETE FROM boards WHERE number = ? OR partition_of = ?")
            .bind(number)
            .bind(number)
            .execute(&mut *tx)
            .await?;
        self.bump_catalog_version(tx).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Boards deleted from the catalog whose rows are still stored.
    pub async fn deleted_boards(&self) -> StoreResult<Vec<i64>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_scalar("SELECT DISTINCT board FROM board_periods WHERE board NOT IN (SELECT number FROM boards)")
            .fetch_all(&mut *conn)
            .await?)
    }

    /// A player's entries in the given (board, period)s, each board's
    /// current one: one primary-key lookup per period, so the cost follows
    /// the boards, not every period the player ever played (a player of
    /// a board that resets every second and keeps 1,000 periods has up to
    /// 1,001 entries there).
    pub async fn entries_of_user_in(&self, user_id: i64, periods: &[(i64, i64)]) -> StoreResult<Vec<EntryRow>> {
        let mut conn = self.conn().await?;
        let mut rows = Vec::new();
        for chunk in super::statement_runs(periods, |_| 3) {
            let each = vec!["(board = ? AND period = ? AND user_id = ?)"; chunk.len()].join(" OR ");
            let sql = format!("SELECT {ENTRY_COLUMNS} FROM board_entries WHERE {each}");
            let query = chunk.iter().fold(self.sql_as::<EntryRow>(&sql).persistent(false), |query, (board, period)| {
                query.bind(*board).bind(*period).bind(user_id)
            });
            rows.extend(query.fetch_all(&mut *conn).await?);
        }
        Ok(rows)
    }

    /// Up to `limit` of a player's posts to a board, newest first, older
    /// than `before`.
    pub async fn board_history(
        &self,
        user_id: i64,
        board: i64,
        before: Option<i64>,
        limit: i64,
    ) -> StoreResult<Vec<BoardScoreRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT id, board, period, user_id, score, subscore1, subscore2, metadata, created_at, status, via FROM board_scores \
                 WHERE user_id = ? AND board = ? AND id < ? ORDER BY id DESC LIMIT ?",
            )
            .bind(user_id)
            .bind(board)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Deletes up to `chunk` rows of each of a purged period's (or deleted
    /// board's) entries and posts, each statement committing on its own so
    /// that posts never wait long behind it; returns how many went. The
    /// period rows go last, once nothing else is left: they are what
    /// [`Store::deleted_boards`] finds an unfinished purge by.
    pub async fn purge_chunk(&self, purge: Purge, chunk: i64) -> StoreResult<u64> {
        let (condition, binds) = match purge {
            Purge::Period { board, period } => ("board = ? AND period = ?", vec![board, period]),
            Purge::Board(board) => ("board = ?", vec![board]),
        };
        let mut conn = self.conn().await?;
        let mut deleted = 0;
        // A league's rows go with its board's (they name it `board` too),
        // and a deleted board's tournament changes and reward bands with it
        // (the rewards it granted stay: they are the players').
        let more_tables: &[&str] = match purge {
            Purge::Period { .. } => &["league_cohorts", "league_placements"],
            Purge::Board(_) => {
                &["league_cohorts", "league_placements", "league_members", "leagues", "board_terms", "board_rewards"]
            }
        };
        for table in ["board_entries", "board_scores", "board_entrants"].iter().chain(more_tables) {
            let sql = self.dialect.delete_chunk(table, condition);
            let query = binds.iter().fold(self.sql(&sql), |query, value| query.bind(*value));
            deleted += query.bind(chunk).execute(&mut *conn).await?.rows_affected();
        }
        if deleted == 0 {
            let sql = format!("DELETE FROM board_periods WHERE {condition}");
            let query = binds.iter().fold(self.sql(&sql), |query, value| query.bind(*value));
            query.execute(&mut *conn).await?;
        }
        Ok(deleted)
    }

    /// Periods of a board older than `oldest_kept` that still have rows.
    pub async fn expired_periods(&self, board: i64, oldest_kept: i64) -> StoreResult<Vec<i64>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_scalar("SELECT period FROM board_periods WHERE board = ? AND period < ? ORDER BY period")
            .bind(board)
            .bind(oldest_kept)
            .fetch_all(&mut *conn)
            .await?)
    }
}
