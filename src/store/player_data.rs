//! Everything hiscore holds about one player, read for their right of
//! access (`GET /api/me/export`): their posts a chunk at a time (a player
//! may have posted a great deal), the rest in one read each. Nothing here
//! reads a secret: no password hash, token, key or stored answer.

use super::moderation::AuditRow;
use super::rows::USER_COLUMNS;
use super::{Store, StoreResult, UserRow};
use crate::domain::Timestamp;

/// A post on any board: `board` is `best` for `/api/scores`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PostRow {
    pub id: i64,
    pub board: String,
    pub period: i64,
    pub score: i64,
    pub metadata: Option<String>,
    pub created_at: Timestamp,
    pub status: String,
    pub via: Option<String>,
}

/// An entry on a custom board's period.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OwnEntryRow {
    pub board: String,
    /// An entry in one of the board's partitions: its value.
    pub partition_value: Option<String>,
    pub period: i64,
    pub score: i64,
    pub achieved_at: Timestamp,
    pub plays: i64,
    pub metadata: Option<String>,
}

/// A league's place (tier index, cohort) in one period, and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PlacementRow {
    pub league: String,
    pub period: i64,
    pub tier: i64,
    pub cohort: i64,
    pub placed_at: Timestamp,
    pub final_rank: Option<i64>,
    pub movement: Option<String>,
}

impl Store {
    /// The player's row, banned or not.
    pub async fn own_account(&self, user_id: i64) -> StoreResult<Option<(UserRow, Option<String>)>> {
        let mut conn = self.conn().await?;
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?");
        let Some(row) = self.sql_as::<UserRow>(&sql).bind(user_id).fetch_optional(&mut *conn).await? else {
            return Ok(None);
        };
        let reason: Option<String> =
            self.sql_scalar("SELECT ban_reason FROM users WHERE id = ?").bind(user_id).fetch_one(&mut *conn).await?;
        Ok(Some((row, reason)))
    }

    /// Up to `limit` of the player's posts of `/api/scores` after `after`, by id.
    pub async fn own_scores(&self, user_id: i64, after: i64, limit: i64) -> StoreResult<Vec<PostRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT id, 'best' AS board, id * 0 AS period, score, NULL AS metadata, created_at, status, NULL AS via \
                 FROM scores WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?",
            )
            .bind(user_id)
            .bind(after)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Up to `limit` of the player's posts to custom boards (leagues' too)
    /// after `after`, by id.
    pub async fn own_board_posts(&self, user_id: i64, after: i64, limit: i64) -> StoreResult<Vec<PostRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT s.id, b.id AS board, s.period, s.score, s.metadata, s.created_at, s.status, s.via \
                 FROM board_scores s JOIN boards b ON b.number = s.board \
                 WHERE s.user_id = ? AND s.id > ? AND b.partition_of IS NULL ORDER BY s.id LIMIT ?",
            )
            .bind(user_id)
            .bind(after)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The player's entries on every custom board's periods.
    pub async fn own_entries(&self, user_id: i64) -> StoreResult<Vec<OwnEntryRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT COALESCE(o.id, b.id) AS board, b.partition_value, e.period, e.score, \
                 e.achieved_at, e.plays, e.metadata FROM board_entries e JOIN boards b ON b.number = e.board \
                 LEFT JOIN boards o ON o.number = b.partition_of WHERE e.user_id = ? \
                 ORDER BY COALESCE(o.id, b.id), b.partition_value, e.period",
            )
            .bind(user_id)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The leagues the player is in, with their tier index.
    pub async fn own_memberships(&self, user_id: i64) -> StoreResult<Vec<(String, i64)>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT b.id, m.tier FROM league_members m JOIN boards b ON b.number = m.board \
                 WHERE m.user_id = ? ORDER BY b.id",
            )
            .bind(user_id)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The player's places in every league's periods.
    pub async fn own_placements(&self, user_id: i64) -> StoreResult<Vec<PlacementRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT b.id AS league, p.period, p.tier, p.cohort, p.placed_at, p.final_rank, p.movement \
                 FROM league_placements p JOIN boards b ON b.number = p.board WHERE p.user_id = ? \
                 ORDER BY b.id, p.period",
            )
            .bind(user_id)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The tournaments' periods the player joined: (board, period, when).
    pub async fn own_entrant_places(&self, user_id: i64) -> StoreResult<Vec<(String, i64, Timestamp)>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as(
                "SELECT b.id, n.period, n.joined_at FROM board_entrants n JOIN boards b ON b.number = n.board \
                 WHERE n.user_id = ? ORDER BY b.id, n.period",
            )
            .bind(user_id)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The audit records about the player (`user:<id>`), oldest first. An
    /// admin's search of the log: `target` has no index.
    pub async fn audit_about(&self, user_id: i64) -> StoreResult<Vec<AuditRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT id, at, actor, action, target, detail FROM audit_log WHERE target = ? ORDER BY id")
            .bind(format!("user:{user_id}"))
            .fetch_all(&mut *conn)
            .await?)
    }
}

/// A stored JSON text as JSON (null if it is not JSON: never expected).
pub fn json_text(text: Option<&str>) -> serde_json::Value {
    text.and_then(|text| serde_json::from_str(text).ok()).unwrap_or(serde_json::Value::Null)
}
