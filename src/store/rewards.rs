//! Rewards granted at the close of a period (v4): the bands each close
//! granted, as they were then (`granted_bands`), and one row per player
//! rewarded (`reward_grants`), written in the closing transaction; the
//! players' lists, claims, the operators' list per period, and the purge
//! of claims older than the retention.

use sqlx::AnyConnection;

use super::{Store, StoreResult};
use crate::domain::Timestamp;

/// A band as a close granted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedBand {
    pub band: i64,
    pub reward: String,
}

/// The period a close granted in, and what names it in the players' lists.
#[derive(Debug, Clone, Copy)]
pub struct ClosedPeriod<'a> {
    pub board: i64,
    pub period: i64,
    pub board_id: &'a str,
    pub league: bool,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
}

/// One player's reward from a close: the band it matched, their final
/// rank, and for a league their tier and cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewGrant {
    pub user_id: i64,
    pub band: i64,
    pub rank: i64,
    pub tier: Option<i64>,
    pub cohort: Option<i64>,
}

/// A grant as the lists show it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GrantRow {
    pub id: i64,
    pub user_id: i64,
    pub board_id: String,
    /// 1: the board is a league's own.
    pub league: i64,
    pub period: i64,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
    pub final_rank: i64,
    pub tier: Option<i64>,
    pub cohort: Option<i64>,
    pub reward: String,
    pub granted_at: Timestamp,
    pub claimed_at: Option<Timestamp>,
}

/// Which of a player's rewards a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    Unclaimed,
    Claimed,
    All,
}

const GRANT_COLUMNS: &str = "g.id, g.user_id, b.board_id, b.league, g.period, b.starts_at, b.ends_at, g.final_rank, \
                             g.tier, g.cohort, b.reward, g.granted_at, g.claimed_at";
const GRANTS_JOINED: &str =
    "reward_grants g JOIN granted_bands b ON b.board = g.board AND b.period = g.period AND b.band = g.band";
/// Grants per INSERT statement (8 values each, well inside every
/// backend's limit on bound values).
const GRANTS_PER_INSERT: usize = 500;

impl Store {
    /// Records a close's grants in the caller's (closing) transaction.
    pub async fn record_grants(
        &self,
        tx: &mut AnyConnection,
        closed: ClosedPeriod<'_>,
        bands: &[GrantedBand],
        grants: &[NewGrant],
        at: Timestamp,
    ) -> StoreResult<()> {
        for band in bands {
            self.sql(
                "INSERT INTO granted_bands (board, period, band, board_id, league, starts_at, ends_at, reward) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(closed.board)
            .bind(closed.period)
            .bind(band.band)
            .bind(closed.board_id)
            .bind(i64::from(closed.league))
            .bind(closed.starts_at)
            .bind(closed.ends_at)
            .bind(&band.reward)
            .execute(&mut *tx)
            .await?;
        }
        for chunk in grants.chunks(GRANTS_PER_INSERT) {
            let rows = vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
            let sql = format!(
                "INSERT INTO reward_grants (user_id, board, period, band, final_rank, tier, cohort, granted_at) \
                 VALUES {rows}"
            );
            let mut query = self.sql(&sql);
            for grant in chunk {
                query = query
                    .bind(grant.user_id)
                    .bind(closed.board)
                    .bind(closed.period)
                    .bind(grant.band)
                    .bind(grant.rank)
                    .bind(grant.tier)
                    .bind(grant.cohort)
                    .bind(at);
            }
            query.execute(&mut *tx).await?;
        }
        Ok(())
    }

    /// Up to `limit` of a player's rewards after grant `after`, oldest
    /// grant first.
    pub async fn player_rewards(
        &self,
        user_id: i64,
        state: ClaimState,
        after: i64,
        limit: i64,
    ) -> StoreResult<Vec<GrantRow>> {
        let claimed = match state {
            ClaimState::Unclaimed => " AND g.claimed_at IS NULL",
            ClaimState::Claimed => " AND g.claimed_at IS NOT NULL",
            ClaimState::All => "",
        };
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM {GRANTS_JOINED} WHERE g.user_id = ? AND g.id > ?{claimed} ORDER BY g.id LIMIT ?"
        );
        let mut conn = self.conn().await?;
        Ok(self.sql_as(&sql).bind(user_id).bind(after).bind(limit).fetch_all(&mut *conn).await?)
    }

    /// One of a player's rewards.
    pub async fn player_reward(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        id: i64,
    ) -> StoreResult<Option<GrantRow>> {
        let sql = format!("SELECT {GRANT_COLUMNS} FROM {GRANTS_JOINED} WHERE g.id = ? AND g.user_id = ?");
        Ok(self.sql_as(&sql).bind(id).bind(user_id).fetch_optional(&mut *conn).await?)
    }

    /// Claims a player's reward if unclaimed (a second claim keeps the
    /// first's time); the reward as it then stands, `None` when the player
    /// has no such reward.
    pub async fn claim_reward(&self, user_id: i64, id: i64, now: Timestamp) -> StoreResult<Option<GrantRow>> {
        let mut conn = self.conn().await?;
        self.sql("UPDATE reward_grants SET claimed_at = ? WHERE id = ? AND user_id = ? AND claimed_at IS NULL")
            .bind(now)
            .bind(id)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        self.player_reward(&mut conn, user_id, id).await
    }

    /// Up to `limit` grants of a board's period after grant `after`, in
    /// grant order (best rank first).
    pub async fn period_grants(&self, board: i64, period: i64, after: i64, limit: i64) -> StoreResult<Vec<GrantRow>> {
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM {GRANTS_JOINED} WHERE g.board = ? AND g.period = ? AND g.id > ? \
             ORDER BY g.id LIMIT ?"
        );
        let mut conn = self.conn().await?;
        Ok(self.sql_as(&sql).bind(board).bind(period).bind(after).bind(limit).fetch_all(&mut *conn).await?)
    }

    /// Deletes up to `chunk` rewards claimed before `before`; how many went.
    pub async fn purge_claimed_rewards(&self, before: Timestamp, chunk: i64) -> StoreResult<u64> {
        let mut conn = self.conn().await?;
        let ids: Vec<i64> = self
            .sql_scalar("SELECT id FROM reward_grants WHERE claimed_at < ? ORDER BY claimed_at LIMIT ?")
            .bind(before)
            .bind(chunk)
            .fetch_all(&mut *conn)
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let sql = format!("DELETE FROM reward_grants WHERE id IN ({})", super::placeholders(ids.len()));
        let query = ids.iter().fold(self.sql(&sql), |query, id| query.bind(*id));
        Ok(query.execute(&mut *conn).await?.rows_affected())
    }
}
