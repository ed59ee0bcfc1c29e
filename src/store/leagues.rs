//! Leagues (v3): the ladder (`leagues`), each player's tier
//! (`league_members`), the cohorts of each period (`league_cohorts`) and
//! who was placed where, with the final rank and move once the period
//! closed (`league_placements`). Every table names the league by its own
//! board's number (`board`); migration 14 says why.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::{LadderRow, Store, StoreResult};
use crate::domain::Timestamp;

/// A player's place in a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Placement {
    pub tier: i64,
    pub cohort: i64,
}

/// A placement to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewPlacement {
    pub board: i64,
    pub period: i64,
    pub user_id: i64,
    pub placement: Placement,
    /// The placement opens its cohort.
    pub new_cohort: bool,
    pub at: Timestamp,
}

/// A cohort member with their entry on the league's board, if shown.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CohortMember {
    pub user_id: i64,
    pub tier: i64,
    pub cohort: i64,
    /// Null when the player has no shown entry (banned, post deleted).
    pub score: Option<i64>,
    pub rank_score: Option<i64>,
    pub achieved_at: Option<Timestamp>,
    pub metadata: Option<String>,
}

/// A member as a close ranks them: their place and their shown entry's
/// key (null: none shown, banned or post deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct ClosingMember {
    pub user_id: i64,
    pub tier: i64,
    pub cohort: i64,
    pub rank_score: Option<i64>,
}

/// A closed period the player was placed in.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PlacementHistory {
    pub period: i64,
    pub tier: i64,
    pub cohort: i64,
    pub movement: String,
}

/// A player's fate when a period closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub user_id: i64,
    /// `up`, `down` or `stay`.
    pub movement: &'static str,
    /// Their tier for their next placement.
    pub next_tier: i64,
}

/// Members whose moves one statement records: one `SELECT` each in a
/// `UNION ALL`, under SQLite's 500 terms of a compound select. The board
/// and the period are the same for all: written into the statement as
/// numbers, not bound once a row (a close of 100,000 members spent most
/// of its time binding).
const MOVES_PER_STATEMENT: usize = 400;

/// The members' columns with their entries, in board order (entries
/// without a shown entry last).
const MEMBERS: &str = "SELECT p.user_id, p.tier, p.cohort, e.score, e.rank_score, e.achieved_at, e.metadata \
     FROM league_placements p LEFT JOIN board_entries e \
     ON e.board = p.board AND e.period = p.period AND e.user_id = p.user_id AND e.hidden = 0";
const MEMBER_ORDER: &str = "ORDER BY e.rank_score IS NULL, e.rank_score, e.achieved_at, p.user_id";

impl Store {
    /// A league's ladder, by its board's number.
    pub async fn ladder(&self, board: i64) -> StoreResult<Option<LadderRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT tiers, cohort_size, promote, demote FROM leagues WHERE board = ?")
            .bind(board)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Every league's ladder, by board number.
    pub async fn ladders(&self) -> StoreResult<HashMap<i64, LadderRow>> {
        #[derive(sqlx::FromRow)]
        struct Row {
            board: i64,
            #[sqlx(flatten)]
            ladder: LadderRow,
        }
        let mut conn = self.conn().await?;
        let rows: Vec<Row> =
            self.sql_as("SELECT board, tiers, cohort_size, promote, demote FROM leagues").fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(|row| (row.board, row.ladder)).collect())
    }

    /// The player's place in a period, if placed.
    pub async fn placement(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_id: i64,
    ) -> StoreResult<Option<Placement>> {
        Ok(self
            .sql_as("SELECT tier, cohort FROM league_placements WHERE board = ? AND period = ? AND user_id = ?")
            .bind(board)
            .bind(period)
            .bind(user_id)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// The tier a player is placed in next; `None` for one never placed.
    pub async fn member_tier(&self, conn: &mut AnyConnection, board: i64, user_id: i64) -> StoreResult<Option<i64>> {
        Ok(self
            .sql_scalar("SELECT tier FROM league_members WHERE board = ? AND user_id = ?")
            .bind(board)
            .bind(user_id)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// The most recently opened cohort of a tier in a period: (number, members).
    pub async fn newest_cohort(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        tier: i64,
    ) -> StoreResult<Option<(i64, i64)>> {
        Ok(self
            .sql_as(
                "SELECT seq, members FROM league_cohorts WHERE board = ? AND period = ? AND tier = ? \
                 ORDER BY seq DESC LIMIT 1",
            )
            .bind(board)
            .bind(period)
            .bind(tier)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// Places a player (the caller holds the period's lock): the
    /// placement, one more member in the cohort (opened here when new), and
    /// the player's tier remembered.
    pub async fn place(&self, conn: &mut AnyConnection, new: NewPlacement) -> StoreResult<()> {
        let NewPlacement { board, period, user_id, placement: Placement { tier, cohort }, new_cohort, at } = new;
        if new_cohort {
            self.sql("INSERT INTO league_cohorts (board, period, tier, seq, members) VALUES (?, ?, ?, ?, 1)")
                .bind(board)
                .bind(period)
                .bind(tier)
                .bind(cohort)
                .execute(&mut *conn)
                .await?;
        } else {
            self.sql(
                "UPDATE league_cohorts SET members = members + 1 WHERE board = ? AND period = ? AND tier = ? AND seq = ?",
            )
            .bind(board)
            .bind(period)
            .bind(tier)
            .bind(cohort)
            .execute(&mut *conn)
            .await?;
        }
        self.sql(
            "INSERT INTO league_placements (board, period, user_id, tier, cohort, placed_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(board)
        .bind(period)
        .bind(user_id)
        .bind(tier)
        .bind(cohort)
        .bind(at)
        .execute(&mut *conn)
        .await?;
        let remember = format!(
            "{} INTO league_members (board, user_id, tier) VALUES (?, ?, ?){}",
            self.dialect.insert_ignore(),
            self.dialect.on_conflict_ignore()
        );
        self.sql(&remember).bind(board).bind(user_id).bind(tier).execute(&mut *conn).await?;
        Ok(())
    }

    /// A cohort's members with their entries, in board order.
    pub async fn cohort_members(
        &self,
        board: i64,
        period: i64,
        tier: i64,
        cohort: i64,
    ) -> StoreResult<Vec<CohortMember>> {
        let mut conn = self.conn().await?;
        let sql =
            format!("{MEMBERS} WHERE p.board = ? AND p.period = ? AND p.tier = ? AND p.cohort = ? {MEMBER_ORDER}");
        Ok(self
            .sql_as::<CohortMember>(&sql)
            .bind(board)
            .bind(period)
            .bind(tier)
            .bind(cohort)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Every member placed in a period with their shown entry's key, in
    /// no order (the close sorts them): what the moves are made from.
    pub async fn period_members(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
    ) -> StoreResult<Vec<ClosingMember>> {
        Ok(self
            .sql_as(
                "SELECT p.user_id, p.tier, p.cohort, e.rank_score FROM league_placements p LEFT JOIN board_entries e \
                 ON e.board = p.board AND e.period = p.period AND e.user_id = p.user_id AND e.hidden = 0 \
                 WHERE p.board = ? AND p.period = ?",
            )
            .bind(board)
            .bind(period)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Per tier of a period: (tier, cohorts, players).
    pub async fn tier_counts(&self, board: i64, period: i64) -> StoreResult<Vec<(i64, i64, i64)>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                // One row per cohort, not per player (a SUM is DECIMAL on
                // MySQL: cast back to an integer).
                "SELECT tier, COUNT(*), CAST(COALESCE(SUM(members), 0) AS SIGNED) FROM league_cohorts \
                 WHERE board = ? AND period = ? GROUP BY tier ORDER BY tier",
            )
            .bind(board)
            .bind(period)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The closed periods a player was placed in, newest first.
    pub async fn placement_history(&self, board: i64, user_id: i64, limit: i64) -> StoreResult<Vec<PlacementHistory>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                // A closed period's placement without a movement stayed.
                "SELECT p.period, p.tier, p.cohort, COALESCE(p.movement, 'stay') AS movement \
                 FROM league_placements p JOIN board_periods b ON b.board = p.board AND b.period = p.period \
                 WHERE p.board = ? AND p.user_id = ? AND b.closed_at IS NOT NULL ORDER BY p.period DESC LIMIT ?",
            )
            .bind(board)
            .bind(user_id)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Records the moves of a closed period (in the closing transaction):
    /// the movement of each placement that moves, and the member's next
    /// tier. Those who stay (most) are not written at all: in a closed
    /// period, a placement without a movement stayed, and their tier is
    /// the same. (`final_rank`, of migration 14, is not written: a closed
    /// period's ranks are read from its entries as they stand.) One
    /// statement per [`MOVES_PER_STATEMENT`] movers each, not one per
    /// member (a league of 100,000 closes in one transaction).
    pub async fn record_moves(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        moves: &[Move],
    ) -> StoreResult<()> {
        let rows = |columns: &str, count: usize| {
            let first = format!("SELECT {board} AS board, {period} AS period, {columns}");
            let rest = columns.split(", ").map(|_| "?").collect::<Vec<_>>().join(", ");
            let rest = format!(" UNION ALL SELECT {board}, {period}, {rest}");
            format!("{first}{}", rest.repeat(count - 1))
        };
        let movers: Vec<&Move> = moves.iter().filter(|step| step.movement != "stay").collect();
        for chunk in movers.chunks(MOVES_PER_STATEMENT) {
            let source = rows("? AS user_id, ? AS movement, ? AS next_tier", chunk.len());
            let placements = self.dialect.update_from(
                "league_placements",
                &source,
                &["board", "period", "user_id"],
                &[("movement", "movement")],
            );
            let members =
                self.dialect.update_from("league_members", &source, &["board", "user_id"], &[("tier", "next_tier")]);
            for sql in [placements, members] {
                let query = chunk.iter().fold(self.sql_once(&sql), |query, step| {
                    query.bind(step.user_id).bind(step.movement).bind(step.next_tier)
                });
                query.execute(&mut *conn).await?;
            }
        }
        Ok(())
    }
}
