//! The final standings of ended periods (migration 7): each listed entry's
//! 0-based position and competition rank, written once the period has
//! ended, so that reading an ended period is a seek by position and a
//! player's rank is read off their row, however deep they are (without
//! them, a deep page or a bottom player's rank is a count over the
//! period's index). `usecases::standings` writes them; the database board
//! source reads them while they hold.
//!
//! They hold while the period's `standings_changes` equals its `changes`:
//! every change to the period's entries clears `standings_changes` in the
//! transaction that makes it: the score writer when it numbers a change (a
//! post committed just after the end), moderation hiding, showing or
//! deleting an entry (`CLEAR_STANDINGS`, which also drops a claim).

use sqlx::AnyConnection;

use super::{placeholders, Store, StoreResult};
use crate::domain::{BoardKey, Timestamp};

/// What moderation sets on a period whose listed entries it changes: the
/// standings no longer hold, and a writer part-way through them will not
/// record them (its claim is gone).
/// (It counts as a change of the period too, so that what watches the
/// period's `changes`, its live pages, sees a hidden or deleted entry; the
/// entry carries that number, [`PERIOD_CHANGE`].)
pub(super) const CLEAR_STANDINGS: &str = "changes = changes + 1, standings_changes = NULL, standings_claimed_at = NULL";

/// The number an entry hidden, shown again or removed by moderation takes
/// (`board_entries.changed`): the one its period's `CLEAR_STANDINGS` has
/// just counted. Every number of a period must be some entry's (or its
/// tombstone's): the rank sources begin a walk where the numbers they
/// have recorded run without a gap, so a number no entry carried stopped
/// them there, and every later walk of the board left out whoever changed
/// after it.
pub(super) const PERIOD_CHANGE: &str = "(SELECT p.changes FROM board_periods p \
     WHERE p.board = board_entries.board AND p.period = board_entries.period)";

/// An entry's place in board order, as the writing of the standings walks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct StandingKey {
    pub user_id: i64,
    pub rank_score: i64,
    pub rank_sub1: i64,
    pub rank_sub2: i64,
    pub achieved_at: i64,
}

impl StandingKey {
    /// What a rank is taken by: the score and subscores, as the order
    /// index holds them (ascending is better).
    pub fn ranked(&self) -> [i64; 3] {
        [self.rank_score, self.rank_sub1, self.rank_sub2]
    }

    /// Whether two entries share a rank.
    pub fn ties(&self, other: &Self) -> bool {
        self.ranked() == other.ranked()
    }
}

/// A custom board's period as one read sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct PeriodState {
    pub players: i64,
    pub changes: i64,
    standings_changes: Option<i64>,
}

impl PeriodState {
    /// Whether the final standings hold: written, and nothing changed since.
    pub fn standings_hold(&self) -> bool {
        self.standings_changes == Some(self.changes)
    }
}

/// An entry with its final place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalPlace {
    pub key: BoardKey,
    pub metadata: Option<String>,
    pub position: i64,
    pub rank: i64,
}

#[derive(sqlx::FromRow)]
struct FinalPlaceRow {
    id: i64,
    score: i64,
    subscore1: i64,
    subscore2: i64,
    at: i64,
    metadata: Option<String>,
    final_position: Option<i64>,
    final_rank: Option<i64>,
}

impl FinalPlaceRow {
    /// The entry's place, if it has one (hidden entries have none).
    fn place(self) -> Option<FinalPlace> {
        Some(FinalPlace {
            key: BoardKey { score: self.score, subscores: [self.subscore1, self.subscore2], at: self.at, id: self.id },
            metadata: self.metadata,
            position: self.final_position?,
            rank: self.final_rank?,
        })
    }
}

/// Entries after a key in board order (bound by [`key_binds`]). The plain
/// range bound first lets the index walk start at the key (an `OR` of
/// conditions is not a range to either database).
const AFTER_KEY: &str = " AND rank_score >= ? AND (rank_score > ? OR (rank_score = ? AND (rank_sub1 > ? \
                         OR (rank_sub1 = ? AND (rank_sub2 > ? OR (rank_sub2 = ? AND (achieved_at > ? \
                         OR (achieved_at = ? AND user_id > ?))))))))";
/// Entries up to and including a key (bound by [`key_binds`]).
const UP_TO_KEY: &str = " AND rank_score <= ? AND (rank_score < ? OR (rank_score = ? AND (rank_sub1 < ? \
                         OR (rank_sub1 = ? AND (rank_sub2 < ? OR (rank_sub2 = ? AND (achieved_at < ? \
                         OR (achieved_at = ? AND user_id <= ?))))))))";

fn key_binds(key: &StandingKey) -> [i64; 10] {
    let [score, first, second] = key.ranked();
    [score, score, score, first, first, second, second, key.achieved_at, key.achieved_at, key.user_id]
}

/// Board order, as the order index holds it.
const BOARD_ORDER: &str = "rank_score, rank_sub1, rank_sub2, achieved_at, user_id";

const STANDING_COLUMNS: &str =
    "user_id AS id, score, subscore1, subscore2, achieved_at AS at, metadata, final_position, final_rank";

impl Store {
    /// Ended periods (`ends_at` no later than `ended_by`) of existing boards
    /// without standings, that no writer claimed since `stale_claims_before`:
    /// a range of `board_periods_unsettled`, not a read of every kept period.
    pub async fn periods_without_standings(
        &self,
        ended_by: Timestamp,
        stale_claims_before: Timestamp,
    ) -> StoreResult<Vec<(i64, i64)>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT board, period FROM board_periods WHERE standings_changes IS NULL AND ends_at <= ? \
                 AND (standings_claimed_at IS NULL OR standings_claimed_at < ?) \
                 AND board IN (SELECT number FROM boards) ORDER BY board, period",
            )
            .bind(ended_by)
            .bind(stale_claims_before)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Claims the writing of a period's standings at `now` (unless another
    /// writer holds a claim since `stale_claims_before`, or they hold);
    /// returns the period's change count, which the entries read after it
    /// include.
    pub async fn claim_standings(
        &self,
        board: i64,
        period: i64,
        now: Timestamp,
        stale_claims_before: Timestamp,
    ) -> StoreResult<Option<i64>> {
        let mut tx = self.begin_write().await?;
        let claimed = self
            .sql(
                "UPDATE board_periods SET standings_claimed_at = ? WHERE board = ? AND period = ? \
                 AND (standings_changes IS NULL OR standings_changes <> changes) \
                 AND (standings_claimed_at IS NULL OR standings_claimed_at < ?)",
            )
            .bind(now)
            .bind(board)
            .bind(period)
            .bind(stale_claims_before)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        let changes = if claimed { Some(self.period_changes(&mut tx, board, period).await?) } else { None };
        tx.commit().await?;
        Ok(changes)
    }

    /// Forgets the places of a period's hidden entries (a ban since the
    /// standings were last written): only listed entries have one.
    pub async fn clear_hidden_standings(&self, board: i64, period: i64) -> StoreResult<()> {
        let mut conn = self.conn().await?;
        self.sql(
            "UPDATE board_entries SET final_position = NULL, final_rank = NULL \
             WHERE board = ? AND period = ? AND hidden = 1 AND final_position IS NOT NULL",
        )
        .bind(board)
        .bind(period)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Up to `limit` listed entries of a period after `after`, in board
    /// order, read on `conn` (a close reads them in its transaction).
    pub async fn standing_keys_after(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        after: Option<StandingKey>,
        limit: i64,
    ) -> StoreResult<Vec<StandingKey>> {
        let sql = format!(
            "SELECT user_id, rank_score, rank_sub1, rank_sub2, achieved_at FROM board_entries \
             WHERE board = ? AND period = ? AND hidden = 0{} ORDER BY {BOARD_ORDER} LIMIT ?",
            if after.is_some() { AFTER_KEY } else { "" }
        );
        let query = self.sql_as(&sql).bind(board).bind(period);
        let query = after.iter().flat_map(key_binds).fold(query, |query, value| query.bind(value));
        Ok(query.bind(limit).fetch_all(&mut *conn).await?)
    }

    /// Writes the places of a run of a period's listed entries: those after
    /// `after` up to and including `last`, the first of them at
    /// `first_position`; `tie` is the ranked values (see
    /// [`StandingKey::ranked`]) and rank of the entry just before the run
    /// (entries of the run with the same ones share its rank). One
    /// statement over one range of the order index: the database numbers
    /// the run with window functions.
    pub async fn write_standings(
        &self,
        board: i64,
        period: i64,
        after: Option<StandingKey>,
        last: StandingKey,
        first_position: i64,
        tie: Option<([i64; 3], i64)>,
    ) -> StoreResult<()> {
        // An entry's rank is 1 + the entries better by score and
        // subscores: those before the run (all better, unless tied with
        // the last of them) and those of the run (RANK() - 1).
        let run = format!(
            "SELECT board, period, user_id, \
             ? + ROW_NUMBER() OVER (ORDER BY {BOARD_ORDER}) - 1 AS place, \
             CASE WHEN rank_score = ? AND rank_sub1 = ? AND rank_sub2 = ? THEN ? \
             ELSE ? + RANK() OVER (ORDER BY rank_score, rank_sub1, rank_sub2) END AS standing \
             FROM board_entries WHERE board = ? AND period = ? AND hidden = 0{}{UP_TO_KEY}",
            if after.is_some() { AFTER_KEY } else { "" }
        );
        let sql = self.dialect.update_from(
            "board_entries",
            &run,
            &["board", "period", "user_id"],
            &[("final_position", "place"), ("final_rank", "standing")],
        );
        let query = self
            .sql_once(&sql)
            .bind(first_position)
            .bind(tie.map(|(ranked, _)| ranked[0]))
            .bind(tie.map(|(ranked, _)| ranked[1]))
            .bind(tie.map(|(ranked, _)| ranked[2]))
            .bind(tie.map(|(_, rank)| rank))
            .bind(first_position)
            .bind(board)
            .bind(period);
        let binds = after.iter().flat_map(key_binds).chain(key_binds(&last));
        let mut conn = self.conn().await?;
        binds.fold(query, |query, value| query.bind(value)).execute(&mut *conn).await?;
        Ok(())
    }

    /// Records a period's standings as written at change count `changes`,
    /// if the claim made at `claimed_at` still stands and nothing changed
    /// since; else gives the claim up. Returns whether they were recorded.
    pub async fn settle_standings(
        &self,
        board: i64,
        period: i64,
        claimed_at: Timestamp,
        changes: i64,
    ) -> StoreResult<bool> {
        let mut conn = self.conn().await?;
        let settled = self
            .sql(
                "UPDATE board_periods SET standings_changes = changes, standings_claimed_at = NULL \
                 WHERE board = ? AND period = ? AND standings_claimed_at = ? AND changes = ?",
            )
            .bind(board)
            .bind(period)
            .bind(claimed_at)
            .bind(changes)
            .execute(&mut *conn)
            .await?
            .rows_affected()
            == 1;
        if !settled {
            self.sql(
                "UPDATE board_periods SET standings_claimed_at = NULL \
                 WHERE board = ? AND period = ? AND standings_claimed_at = ?",
            )
            .bind(board)
            .bind(period)
            .bind(claimed_at)
            .execute(&mut *conn)
            .await?;
        }
        Ok(settled)
    }

    /// A custom board's period as of this read (`None`: no post or clock
    /// recorded it).
    pub async fn period_state(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
    ) -> StoreResult<Option<PeriodState>> {
        Ok(self
            .sql_as("SELECT players, changes, standings_changes FROM board_periods WHERE board = ? AND period = ?")
            .bind(board)
            .bind(period)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Up to `count` entries from 0-based `position`, by their final places
    /// (the standings must hold).
    pub async fn standings_from(
        &self,
        conn: &mut AnyConnection,
        (board, period): (i64, i64),
        position: i64,
        count: i64,
    ) -> StoreResult<Vec<FinalPlace>> {
        let sql = format!(
            "SELECT {STANDING_COLUMNS} FROM board_entries WHERE board = ? AND period = ? AND final_position >= ? \
             ORDER BY final_position LIMIT ?"
        );
        let rows: Vec<FinalPlaceRow> =
            self.sql_as(&sql).bind(board).bind(period).bind(position).bind(count).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().filter_map(FinalPlaceRow::place).collect())
    }

    /// The final places of those of `ids` who are listed (the standings
    /// must hold), in no order.
    pub async fn standings_of(
        &self,
        conn: &mut AnyConnection,
        (board, period): (i64, i64),
        ids: &[i64],
    ) -> StoreResult<Vec<FinalPlace>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // Places are told from their absence in Rust: a `final_position IS
        // NOT NULL` here made SQLite walk the whole period by that index
        // rather than seek each id by the primary key (1 s against 1 ms
        // for 100 ids of a million).
        let sql = format!(
            "SELECT {STANDING_COLUMNS} FROM {} WHERE board = ? AND period = ? AND user_id IN ({})",
            self.dialect.entries_by_key(),
            placeholders(ids.len())
        );
        let query = self.sql_as::<FinalPlaceRow>(&sql).persistent(false).bind(board).bind(period);
        let rows = ids.iter().fold(query, |query, id| query.bind(*id)).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().filter_map(FinalPlaceRow::place).collect())
    }
}
