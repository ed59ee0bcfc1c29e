//! What moderation and self-service change: bans, removed posts, erased
//! players, ended sessions, and the audit log. Each function runs on the
//! caller's transaction, which has locked the player's row first (see
//! [`Store::users_for_update`]): the same lock every score batch takes, so
//! a post and a moderation of one player never interleave.
//!
//! Lock order, shared with the score writer: the player's row, then board
//! periods, then entries, then `board_stats`.

use sqlx::AnyConnection;

use super::custom_boards::{BoardScoreRow, EntryRow, ENTRY_COLUMNS};
use super::rows::ScoreRow;
use super::standings::{CLEAR_STANDINGS, PERIOD_CHANGE};
use super::{LongText, Store, StoreResult};
use crate::domain::{PostStatus, Timestamp};

/// A post an original fed, as its deletion or review finds it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FedPostRow {
    pub id: i64,
    pub board: i64,
    pub period: i64,
    pub status: String,
}

/// A record of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditRow {
    pub id: i64,
    pub at: Timestamp,
    pub actor: String,
    pub action: String,
    pub target: String,
    /// A JSON object.
    pub detail: LongText,
}

/// What a new audit record says.
pub struct AuditRecord<'a> {
    pub at: Timestamp,
    pub actor: &'a str,
    pub action: &'a str,
    pub target: &'a str,
    pub detail: &'a str,
}

impl Store {
    /// Bans (`Some((when, reason))`) or unbans a player; a change of the row.
    pub async fn set_ban(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        ban: Option<(Timestamp, &str)>,
    ) -> StoreResult<()> {
        self.sql("UPDATE users SET banned_at = ?, ban_reason = ?, version = version + 1 WHERE id = ?")
            .bind(ban.map(|(at, _)| at))
            .bind(ban.map(|(_, reason)| reason))
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Hides a banned player's entry that a recount has just written (a
    /// new entry is written shown, like every post's).
    pub async fn hide_entry(&self, conn: &mut AnyConnection, board: i64, period: i64, user_id: i64) -> StoreResult<()> {
        self.sql("UPDATE board_entries SET hidden = 1 WHERE board = ? AND period = ? AND user_id = ?")
            .bind(board)
            .bind(period)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Hides (a ban) or shows again (an unban) every entry of a player, on
    /// every board and period, and moves the periods' player counts with
    /// them; returns the entries as they are now.
    pub async fn set_entries_hidden(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        hidden: bool,
    ) -> StoreResult<Vec<EntryRow>> {
        // The periods first (the writer's lock order), counted while the
        // entries still show where they were.
        let sql = format!(
            "UPDATE board_periods SET players = players + ?, {CLEAR_STANDINGS} WHERE EXISTS (SELECT 1 \
             FROM board_entries e WHERE e.board = board_periods.board AND e.period = board_periods.period \
             AND e.user_id = ? AND e.hidden = ?)"
        );
        self.sql(&sql)
            .bind(if hidden { -1_i64 } else { 1 })
            .bind(user_id)
            .bind(i64::from(!hidden))
            .execute(&mut *conn)
            .await?;
        let sql = format!(
            "UPDATE board_entries SET hidden = ?, version = version + 1, changed = {PERIOD_CHANGE} \
             WHERE user_id = ? AND hidden = ?"
        );
        self.sql(&sql).bind(i64::from(hidden)).bind(user_id).bind(i64::from(!hidden)).execute(&mut *conn).await?;
        self.entries_of_user_on(conn, user_id).await
    }

    /// Every entry of a player, on every board and period.
    pub async fn entries_of_user_on(&self, conn: &mut AnyConnection, user_id: i64) -> StoreResult<Vec<EntryRow>> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM board_entries WHERE user_id = ? ORDER BY board, period");
        Ok(self.sql_as(&sql).bind(user_id).fetch_all(&mut *conn).await?)
    }

    /// The token hashes of a player's sessions (a ban marks their cached
    /// copies; the rows stay until the unban ends them).
    pub async fn sessions_of(&self, conn: &mut AnyConnection, user_id: i64) -> StoreResult<Vec<String>> {
        Ok(self
            .sql_scalar("SELECT token_hash FROM sessions WHERE user_id = ?")
            .bind(user_id)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Ends a player's sessions, all of them or all but one; returns the
    /// token hashes ended (for their cached copies).
    pub async fn end_sessions(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        keep: Option<&str>,
    ) -> StoreResult<Vec<String>> {
        let keep = keep.unwrap_or("");
        let hashes: Vec<String> = self
            .sql_scalar("SELECT token_hash FROM sessions WHERE user_id = ? AND token_hash <> ?")
            .bind(user_id)
            .bind(keep)
            .fetch_all(&mut *conn)
            .await?;
        self.sql("DELETE FROM sessions WHERE user_id = ? AND token_hash <> ?")
            .bind(user_id)
            .bind(keep)
            .execute(&mut *conn)
            .await?;
        Ok(hashes)
    }

    /// The player a post of `/api/scores` belongs to.
    pub async fn score_owner(&self, conn: &mut AnyConnection, score_id: i64) -> StoreResult<Option<i64>> {
        Ok(self.sql_scalar("SELECT user_id FROM scores WHERE id = ?").bind(score_id).fetch_optional(&mut *conn).await?)
    }

    /// Deletes a post of `/api/scores` if it is still this player's.
    pub async fn delete_score(&self, conn: &mut AnyConnection, score_id: i64, user_id: i64) -> StoreResult<bool> {
        let done = self
            .sql("DELETE FROM scores WHERE id = ? AND user_id = ?")
            .bind(score_id)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every accepted post of a player in `/api/scores`, oldest first (a
    /// recount: held and rejected posts count for nothing).
    /// A locking read: it sees every post committed before the player's row
    /// was locked, where a plain read could see the transaction's older
    /// snapshot (MySQL's repeatable read takes it at the first plain read).
    pub async fn all_scores_of(&self, conn: &mut AnyConnection, user_id: i64) -> StoreResult<Vec<ScoreRow>> {
        let sql = format!(
            "SELECT id, score, created_at, status FROM scores WHERE user_id = ? AND status = 'accepted' ORDER BY id{}",
            self.dialect.share_lock()
        );
        Ok(self.sql_as(&sql).bind(user_id).fetch_all(&mut *conn).await?)
    }

    /// The player and period of a post on a custom board.
    pub async fn board_score_owner(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        score_id: i64,
    ) -> StoreResult<Option<(i64, i64)>> {
        Ok(self
            .sql_as("SELECT user_id, period FROM board_scores WHERE id = ? AND board = ?")
            .bind(score_id)
            .bind(board)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// The posts an original fed (v4 `feeds`): `via` is the original's
    /// board id (`best` for `/api/scores`).
    pub async fn fed_posts(&self, conn: &mut AnyConnection, via: &str, original: i64) -> StoreResult<Vec<FedPostRow>> {
        Ok(self
            .sql_as("SELECT id, board, period, status FROM board_scores WHERE via_post = ? AND via = ? ORDER BY board")
            .bind(original)
            .bind(via)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// The boards holding posts fed by these originals ((board id, post
    /// id) each) with them, in one read: (original, fed board number).
    pub async fn held_fed_boards(&self, originals: &[(&str, i64)]) -> StoreResult<Vec<((String, i64), i64)>> {
        if originals.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let sql = format!(
            "SELECT via, via_post, board FROM board_scores WHERE via_post IN ({}) AND status = 'held' ORDER BY id",
            super::placeholders(originals.len())
        );
        let mut query = self.sql_as::<(String, i64, i64)>(&sql).persistent(false);
        for (_, id) in originals {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        Ok(rows
            .into_iter()
            .filter(|(via, id, _)| originals.contains(&(via.as_str(), *id)))
            .map(|(via, id, board)| ((via, id), board))
            .collect())
    }

    /// Sets the status of a post on a custom board (a fed post decided
    /// with its original).
    pub async fn set_board_post_status(
        &self,
        conn: &mut AnyConnection,
        id: i64,
        status: PostStatus,
    ) -> StoreResult<()> {
        self.sql("UPDATE board_scores SET status = ? WHERE id = ?")
            .bind(status.as_str())
            .bind(id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Takes a board period's row for this transaction (as the writer's
    /// `lock_period` does); `false` when the period is gone (purged).
    pub async fn lock_existing_period(&self, conn: &mut AnyConnection, board: i64, period: i64) -> StoreResult<bool> {
        let sql =
            format!("SELECT players FROM board_periods WHERE board = ? AND period = ?{}", self.dialect.lock_rows());
        let found: Option<i64> = self.sql_scalar(&sql).bind(board).bind(period).fetch_optional(&mut *conn).await?;
        Ok(found.is_some())
    }

    /// Deletes a post on a custom board if it is still this player's.
    pub async fn delete_board_score(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        score_id: i64,
        user_id: i64,
    ) -> StoreResult<bool> {
        let done = self
            .sql("DELETE FROM board_scores WHERE id = ? AND board = ? AND user_id = ?")
            .bind(score_id)
            .bind(board)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every accepted post of a player in one period of a board, oldest
    /// first (a recount of their entry).
    pub async fn period_posts_of(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_id: i64,
    ) -> StoreResult<Vec<BoardScoreRow>> {
        // A locking read, as in `all_scores_of`.
        let sql = format!(
            "SELECT id, board, period, user_id, score, subscore1, subscore2, metadata, created_at, status, via FROM board_scores \
             WHERE board = ? AND period = ? AND user_id = ? AND status = 'accepted' ORDER BY id{}",
            self.dialect.share_lock()
        );
        Ok(self.sql_as(&sql).bind(board).bind(period).bind(user_id).fetch_all(&mut *conn).await?)
    }

    /// Deletes a player's entry in a period (their last post there went):
    /// the period's final standings, if any, no longer hold. Returns the
    /// change number the removal took (its tombstone's, `PERIOD_CHANGE`).
    pub async fn delete_entry(
        &self,
        conn: &mut AnyConnection,
        board: i64,
        period: i64,
        user_id: i64,
    ) -> StoreResult<i64> {
        self.sql(&format!("UPDATE board_periods SET {CLEAR_STANDINGS} WHERE board = ? AND period = ?"))
            .bind(board)
            .bind(period)
            .execute(&mut *conn)
            .await?;
        self.sql("DELETE FROM board_entries WHERE board = ? AND period = ? AND user_id = ?")
            .bind(board)
            .bind(period)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        self.period_changes(conn, board, period).await
    }

    /// Writes a player's aggregates as recounted from the log; a change of
    /// the row.
    pub async fn set_aggregates(&self, conn: &mut AnyConnection, row: &super::UserRow) -> StoreResult<()> {
        self.sql(
            "UPDATE users SET best_score = ?, best_at = ?, best_score_id = ?, total_score = ?, play_count = ?, \
             version = ? WHERE id = ?",
        )
        .bind(row.best_score)
        .bind(row.best_at)
        .bind(row.best_score_id)
        .bind(row.total_score)
        .bind(row.play_count)
        .bind(row.version)
        .bind(row.id)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Sets a player's display name; a change of the row.
    pub async fn set_display_name(&self, conn: &mut AnyConnection, user_id: i64, name: &str) -> StoreResult<()> {
        self.sql("UPDATE users SET display_name = ?, version = version + 1 WHERE id = ?")
            .bind(name)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Appends to the audit log.
    pub async fn audit(&self, conn: &mut AnyConnection, record: &AuditRecord<'_>) -> StoreResult<()> {
        self.sql("INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)")
            .bind(record.at)
            .bind(record.actor)
            .bind(record.action)
            .bind(record.target)
            .bind(record.detail)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Up to `limit` audit records older than `before`, newest first.
    pub async fn audit_log(&self, before: Option<i64>, limit: i64) -> StoreResult<Vec<AuditRow>> {
        let mut conn = self.conn().await?;
        Ok(self
            .sql_as("SELECT id, at, actor, action, target, detail FROM audit_log WHERE id < ? ORDER BY id DESC LIMIT ?")
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?)
    }

    /// Deletes everything of a player (an erasure): their posts, entries
    /// (the periods' counts first), league places and history (the
    /// cohorts' counts first), tournament places, held posts, sessions,
    /// idempotency keys, and the row. `listed` says whether they counted
    /// on the built-in boards. Every table is deleted from by an index on
    /// `user_id`, so only the player's rows are locked. Returns the
    /// player's entries as they were, each listed one carrying the change
    /// number its removal took (`PERIOD_CHANGE`).
    pub async fn erase_user(&self, conn: &mut AnyConnection, user_id: i64, listed: bool) -> StoreResult<Vec<EntryRow>> {
        let sql = format!(
            "UPDATE board_periods SET players = players - 1, {CLEAR_STANDINGS} WHERE EXISTS (SELECT 1 \
             FROM board_entries e WHERE e.board = board_periods.board AND e.period = board_periods.period \
             AND e.user_id = ? AND e.hidden = 0)"
        );
        self.sql(&sql).bind(user_id).execute(&mut *conn).await?;
        let sql = format!("UPDATE board_entries SET changed = {PERIOD_CHANGE} WHERE user_id = ? AND hidden = 0");
        self.sql(&sql).bind(user_id).execute(&mut *conn).await?;
        let entries = self.entries_of_user_on(conn, user_id).await?;
        self.sql(
            "UPDATE league_cohorts SET members = members - 1 WHERE EXISTS (SELECT 1 FROM league_placements p \
             WHERE p.user_id = ? AND p.board = league_cohorts.board AND p.period = league_cohorts.period \
             AND p.tier = league_cohorts.tier AND p.cohort = league_cohorts.seq)",
        )
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
        for table in [
            "board_entries",
            "board_scores",
            "scores",
            "sessions",
            "idempotency_keys",
            "league_placements",
            "league_members",
            "board_entrants",
            "held_posts",
            "reward_grants",
        ] {
            self.sql(&format!("DELETE FROM {table} WHERE user_id = ?")).bind(user_id).execute(&mut *conn).await?;
        }
        if listed {
            self.add_board_players(conn, -1).await?;
        }
        self.sql("DELETE FROM users WHERE id = ?").bind(user_id).execute(&mut *conn).await?;
        Ok(entries)
    }
}
