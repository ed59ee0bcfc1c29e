//! All SQL lives here, and only here. Queries are written once where MySQL
//! and SQLite agree (both take `?` placeholders through sqlx's `Any` driver);
//! the few dialect differences sit side by side in [`Dialect`].
//!
//! Every statement is built through [`Store::sql`], which counts it: the
//! count is exported in `/metrics` and lets tests prove that a page costs a
//! constant number of queries. Never run a query inside a loop over rows.

mod board;
mod bulk;
mod idempotency;
mod scores;
mod sessions;
mod users;

use std::str::FromStr;
use std::time::Duration;

use prometheus::IntCounter;
use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::query::Query;
use sqlx::{Any, AnyConnection, AnyPool, ConnectOptions, Executor, Row, Transaction};

pub use scores::ScoreRow;
pub use users::{NewUser, UserRow};

/// How long a request waits for a pooled connection before it gets a 503.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// The backends hiscore runs on, and everything that differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    MySql,
}

impl Dialect {
    fn of(url: &str) -> Self {
        if url.starts_with("sqlite:") {
            Self::Sqlite
        } else {
            Self::MySql
        }
    }

    fn schema(self) -> &'static str {
        match self {
            Self::Sqlite => include_str!("schema_sqlite.sql"),
            Self::MySql => include_str!("../../schema.sql"),
        }
    }

    /// Run on every new connection.
    fn session_setup(self) -> &'static [&'static str] {
        match self {
            // WAL lets readers run beside the one writer; NORMAL sync is
            // durable across process crashes (not power loss) in WAL mode.
            Self::Sqlite => &["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA busy_timeout = 5000"],
            Self::MySql => &[
                "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
                // Room for the rank engine's warm-up chunks (see `standings_chunk`).
                "SET SESSION group_concat_max_len = 67108864",
            ],
        }
    }

    /// How a transaction that will write starts. SQLite must take the write
    /// lock up front: a deferred transaction that reads first and then writes
    /// can fail with SQLITE_BUSY instead of waiting.
    fn begin_write(self) -> Option<&'static str> {
        match self {
            Self::Sqlite => Some("BEGIN IMMEDIATE"),
            Self::MySql => None,
        }
    }

    /// Appended to a SELECT that must lock the rows it reads.
    fn lock_rows(self) -> &'static str {
        match self {
            // The write transaction (BEGIN IMMEDIATE) already excludes other writers.
            Self::Sqlite => "",
            Self::MySql => " FOR UPDATE",
        }
    }

    /// How an INSERT reports the id it assigned: sqlx's `Any` driver has no
    /// last-insert id for SQLite, and MySQL 8 has no `RETURNING`.
    fn returning_id(self) -> &'static str {
        match self {
            Self::Sqlite => " RETURNING id",
            Self::MySql => "",
        }
    }

    /// One text of `id,best,best_at,total,plays;…` for the players of an id
    /// range. Reading a million players as a million driver rows costs
    /// seconds in sqlx; the database builds the same data as a few strings
    /// in a fraction of that (measured in BENCHMARKS.md).
    fn standings_chunk(self) -> &'static str {
        match self {
            Self::Sqlite => {
                "SELECT group_concat(id || ',' || best_score || ',' || IFNULL(best_at, 0) || ',' || total_score \
                 || ',' || play_count, ';') AS chunk FROM users WHERE id >= ? AND id < ? AND play_count > 0"
            }
            Self::MySql => {
                "SELECT GROUP_CONCAT(CONCAT_WS(',', id, best_score, IFNULL(best_at, 0), total_score, play_count) \
                 SEPARATOR ';') AS chunk FROM users WHERE id >= ? AND id < ? AND play_count > 0"
            }
        }
    }

    /// Empties a table. TRUNCATE is far faster on InnoDB; SQLite has none
    /// (its unqualified DELETE is the truncate optimisation).
    fn wipe(self, table: &str) -> String {
        match self {
            Self::Sqlite => format!("DELETE FROM {table}"),
            Self::MySql => format!("TRUNCATE TABLE {table}"),
        }
    }
}

/// The database: a connection pool and the dialect it speaks.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// Counts every statement this store runs (see the module docs).
    statements: IntCounter,
    /// Whether a multi-row INSERT gets consecutive ids (see `insert_scores`).
    consecutive_ids: bool,
}

impl Store {
    pub async fn connect(url: &str, max_connections: u32, statements: IntCounter) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let dialect = Dialect::of(url);
        let url = match dialect {
            Dialect::Sqlite => {
                create_sqlite_parent_dir(url)?;
                with_create_mode(url)
            }
            Dialect::MySql => url.to_owned(),
        };
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .min_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    for statement in dialect.session_setup() {
                        conn.execute(*statement).await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        let mut store = Self { pool, dialect, statements, consecutive_ids: true };
        store.create_schema().await?;
        store.count_board_players_if_missing().await?;
        if dialect == Dialect::MySql {
            let mut conn = store.pool.acquire().await?;
            let mode: i64 = sqlx::query("SELECT @@innodb_autoinc_lock_mode AS mode")
                .fetch_one(&mut *conn)
                .await?
                .try_get("mode")?;
            store.consecutive_ids = mode <= 1;
        }
        Ok(store)
    }

    /// Creates whatever tables and indexes are missing.
    async fn create_schema(&self) -> anyhow::Result<()> {
        let mut conn = self.pool.acquire().await?;
        for statement in split_statements(self.dialect.schema()) {
            conn.execute(statement.as_str()).await?;
        }
        Ok(())
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub async fn conn(&self) -> Result<PoolConnection<Any>, sqlx::Error> {
        self.pool.acquire().await
    }

    pub async fn begin_write(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        match self.dialect.begin_write() {
            Some(statement) => self.pool.begin_with(statement).await,
            None => self.pool.begin().await,
        }
    }

    /// A read snapshot: every statement in it sees the same data (SQLite's
    /// deferred transaction, InnoDB's REPEATABLE READ).
    pub async fn begin_read(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Answers whether the database is reachable.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        let mut conn = self.conn().await?;
        self.sql("SELECT 1").execute(&mut *conn).await.map(|_| ())
    }

    /// An INSERT statement that reports the new row's id (see [`Store::insert_returning_id`]).
    fn insert_sql(&self, insert: &str) -> String {
        format!("{insert}{}", self.dialect.returning_id())
    }

    /// Runs a query built from [`Store::insert_sql`] and returns the new id.
    async fn insert_returning_id<'q>(
        &self,
        conn: &mut AnyConnection,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Result<i64, sqlx::Error> {
        match self.dialect {
            Dialect::Sqlite => query.fetch_one(&mut *conn).await?.try_get("id"),
            Dialect::MySql => {
                let done = query.execute(&mut *conn).await?;
                done.last_insert_id().ok_or_else(|| sqlx::Error::Protocol("INSERT reported no id".into()))
            }
        }
    }

    /// The one place statements are built: counts them.
    fn sql<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>> {
        self.statements.inc();
        sqlx::query(text)
    }

    /// A statement whose text changes with its input (an `IN (…)` list, a
    /// multi-row INSERT): not kept in the per-connection prepared-statement
    /// cache, which every list length would otherwise fill up.
    fn sql_once<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>> {
        self.sql(text).persistent(false)
    }
}

fn create_sqlite_parent_dir(url: &str) -> anyhow::Result<()> {
    let path = url.trim_start_matches("sqlite:").trim_start_matches("//");
    let path = path.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    Ok(())
}

/// An embedded database is created on first start unless the URL says otherwise.
fn with_create_mode(url: &str) -> String {
    if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// Splits a schema file into statements, dropping `--` comment lines.
fn split_statements(schema: &str) -> Vec<String> {
    let without_comments: String =
        schema.lines().filter(|line| !line.trim_start().starts_with("--")).map(|line| format!("{line}\n")).collect();
    without_comments.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// `?, ?, …` for an `IN (…)` list of `count` values.
fn placeholders(count: usize) -> String {
    vec!["?"; count].join(", ")
}

/// A unique-index violation: the one constraint error callers turn into a
/// domain outcome (a taken login name, a repeated idempotency key).
fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_schemas_create_the_same_tables() {
        let tables = |dialect: Dialect| -> Vec<String> {
            split_statements(dialect.schema())
                .iter()
                .filter_map(|s| s.strip_prefix("CREATE TABLE IF NOT EXISTS "))
                .map(|rest| rest.split_whitespace().next().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(tables(Dialect::Sqlite), ["users", "scores", "sessions", "board_stats", "idempotency_keys"]);
        assert_eq!(tables(Dialect::Sqlite), tables(Dialect::MySql));
    }

    #[test]
    fn sqlite_parent_dir_is_parsed_from_the_url() {
        let dir = std::env::temp_dir().join(format!("hiscore-dir-test-{}", std::process::id()));
        let url = format!("sqlite://{}/db.sqlite?mode=rwc", dir.display());
        create_sqlite_parent_dir(&url).unwrap();
        assert!(dir.is_dir());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
