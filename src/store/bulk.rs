//! Wiping and bulk-loading for `POST /api/admin/initialize`.

use sqlx::{AnyConnection, Executor, QueryBuilder};

use super::{AuditRecord, Store, StoreResult};
use crate::dataset::Dataset;

/// Rows per multi-row INSERT: about 24k bound parameters, under SQLite's
/// 32,766 and MySQL's 65,535 limits.
const USER_ROWS_PER_INSERT: usize = 2_000;
const SCORE_ROWS_PER_INSERT: usize = 5_000;

/// Everything initialize replaces (not `data_generation`, which counts them).
const TABLES: [&str; 24] = [
    "users",
    "scores",
    "sessions",
    "idempotency_keys",
    "board_stats",
    "boards",
    "board_periods",
    "board_entries",
    "board_scores",
    "audit_log",
    "builtin_board_rules",
    "server_keys",
    "held_posts",
    "board_entrants",
    "board_terms",
    "webhooks",
    "webhook_deliveries",
    "leagues",
    "league_members",
    "league_cohorts",
    "league_placements",
    "board_rewards",
    "granted_bands",
    "reward_grants",
];

impl Store {
    /// Deletes every row of every table.
    async fn wipe(&self, conn: &mut AnyConnection) -> StoreResult<()> {
        for table in TABLES {
            self.count_statement();
            // Board numbers are never reused (caches key boards by them):
            // a DELETE keeps the counter that a TRUNCATE would reset.
            let statement = if table == "boards" { format!("DELETE FROM {table}") } else { self.dialect.wipe(table) };
            conn.execute(statement.as_str()).await?;
        }
        Ok(())
    }

    /// Inserts a generated dataset with multi-row INSERTs. Every generated
    /// player gets the same `password_hash`.
    async fn load_dataset(&self, conn: &mut AnyConnection, data: &Dataset, password_hash: &str) -> StoreResult<()> {
        for chunk in data.users.chunks(USER_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO users (id, login_name, login_key, display_name, password_hash, best_score, best_at, \
                 best_score_id, total_score, play_count, created_at, version) ",
            );
            insert.push_values(chunk, |mut row, user| {
                row.push_bind(user.id)
                    .push_bind(user.login_name.clone())
                    .push_bind(user.login_name.to_ascii_lowercase())
                    .push_bind(user.display_name.clone())
                    .push_bind(password_hash.to_owned())
                    .push_bind(user.best_score)
                    .push_bind(user.best_at)
                    .push_bind(user.best_score_id)
                    .push_bind(user.total_score)
                    .push_bind(user.play_count)
                    .push_bind(user.created_at)
                    // One change per post, as the score writer counts them.
                    .push_bind(user.play_count);
            });
            self.count_statement();
            insert.build().persistent(false).execute(&mut *conn).await?;
        }
        for chunk in data.scores.chunks(SCORE_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::new("INSERT INTO scores (id, user_id, score, created_at) ");
            insert.push_values(chunk, |mut row, score| {
                row.push_bind(score.id).push_bind(score.user_id).push_bind(score.score).push_bind(score.created_at);
            });
            self.count_statement();
            insert.build().persistent(false).execute(&mut *conn).await?;
        }
        let players = data.users.iter().filter(|user| user.play_count > 0).count() as i64;
        self.sql("INSERT INTO board_stats (id, players) VALUES (1, ?)").bind(players).execute(&mut *conn).await?;
        Ok(())
    }
}

impl Store {
    /// Wipes every table, then loads `data` in one transaction that also
    /// sets the data generation to `generation` and writes the wiped audit
    /// log's first record, `audit`.
    pub async fn replace_all(
        &self,
        data: &Dataset,
        password_hash: &str,
        generation: i64,
        audit: &AuditRecord<'_>,
    ) -> StoreResult<()> {
        use sqlx::Connection as _;
        let mut conn = self.conn().await?;
        // Wiped outside the load transaction: TRUNCATE commits implicitly on MySQL.
        self.wipe(&mut conn).await?;
        let mut tx = conn.begin().await?;
        self.load_dataset(&mut tx, data, password_hash).await?;
        self.sql("UPDATE data_generation SET generation = ? WHERE id = 1").bind(generation).execute(&mut *tx).await?;
        self.audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }
}
