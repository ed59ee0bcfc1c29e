//! All SQL lives here, and only here. Queries are written once where MySQL
//! and SQLite agree (both take `?` placeholders through sqlx's `Any` driver);
//! the few dialect differences sit side by side in [`Dialect`]. The schema
//! is versioned migrations (`migrations/<dialect>/`), applied at start or by
//! `hiscore migrate`.
//!
//! Every statement is built through [`Store::sql`] and friends, which count
//! it: the count is exported in `/metrics` and lets tests prove that a page
//! costs a constant number of queries. Statements run inside
//! [`periodic_job`] are counted apart too, so that a request's cost can be
//! told from that of the jobs running beside it. Never run a query inside a loop over
//! rows. Errors leave as [`StoreError`], which says what went wrong without
//! exposing the driver to callers.

mod board_periods;
mod board_reads;
mod board_writes;
mod bulk;
mod custom_boards;
mod dialect;
mod entrants;
mod error;
mod held;
mod idempotency;
mod leagues;
mod moderation;
mod packed;
mod partitions;
mod player_data;
mod rewards;
mod rows;
mod scores;
mod secrets;
mod server_keys;
mod sessions;
mod standings;
mod users;
mod webhooks;

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use prometheus::IntCounter;

pub use crate::config::SqliteSync;
use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, AnyConnection, AnyPool, ConnectOptions, Executor, Transaction};

pub use self::board_periods::{PeriodRow, WarmEntry, WarmPeriod};
pub use self::board_reads::{KeyWithMetadata, MiddleRead, WalkedKey};
pub use self::board_writes::{EntryWrite, NewBoardPost, PeriodPlayers};
pub use self::custom_boards::{
    BandRow, BoardRow, BoardScoreRow, BuiltinRulesRow, EntryRow, LadderRow, NewBoard, Purge, RulesRow, TermsChange,
    TermsRow, TournamentRow,
};
pub use self::dialect::Dialect;
use self::error::is_unique_violation;
pub use self::error::{retry_conflicts, MaybeConflict, StoreError, StoreResult, UniqueKey, WRITE_ATTEMPTS};
pub use self::held::{HeldRow, NewHold, BUILTIN_LOG};
pub use self::leagues::{ClosingMember, CohortMember, Move, NewPlacement, Placement, PlacementHistory};
pub use self::moderation::{AuditRecord, AuditRow, FedPostRow};
pub use self::partitions::PartitionRow;
pub use self::player_data::{json_text, OwnEntryRow, PlacementRow, PostRow};
pub use self::rewards::{ClaimState, ClosedPeriod, GrantRow, GrantedBand, NewGrant};
pub use self::rows::{LongText, ScoreRow, Standing, UserRow};
pub use self::scores::PostLog;
pub use self::server_keys::ServerKeyRow;
pub use self::standings::{FinalPlace, PeriodState, StandingKey};
pub use self::users::NewUser;
pub use self::webhooks::{AttemptResult, DeliveryRow, DueDelivery, EndedPeriod, WebhookRow};

/// How long a request waits for a pooled connection before it gets a 503.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a board read waits for a connection of its pool.
const BOARD_READ_WAIT: Duration = Duration::from_secs(1);
/// How long one statement of a board read may run (MySQL/MariaDB).
pub const BOARD_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The connections of the board-read pool (see [`Store::for_board_reads`]).
fn board_read_connections(max_connections: u32) -> u32 {
    (max_connections / 4).max(2)
}

/// Stops any statement of this session after [`BOARD_READ_TIMEOUT`]:
/// MariaDB's `max_statement_time` (seconds), else MySQL's
/// `max_execution_time` (milliseconds, SELECTs only).
async fn limit_statement_time(conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
    let mariadb = format!("SET SESSION max_statement_time = {}", BOARD_READ_TIMEOUT.as_secs());
    if conn.execute(mariadb.as_str()).await.is_ok() {
        return Ok(());
    }
    let mysql = format!("SET SESSION max_execution_time = {}", BOARD_READ_TIMEOUT.as_millis());
    conn.execute(mysql.as_str()).await.map(drop)
}

/// Pool options whose new connections run the dialect's session set-up,
/// and, with `limit_time` on MySQL/MariaDB, [`limit_statement_time`].
fn with_session_setup(options: AnyPoolOptions, dialect: Dialect, sync: SqliteSync, limit_time: bool) -> AnyPoolOptions {
    options.after_connect(move |conn, _| {
        Box::pin(async move {
            for statement in dialect.session_setup(sync) {
                conn.execute(*statement).await?;
            }
            if limit_time && dialect == Dialect::MySql {
                limit_statement_time(conn).await?;
            }
            Ok(())
        })
    })
}

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static MYSQL_MIGRATIONS: Migrator = sqlx::migrate!("migrations/mysql");

/// Whether `Store::connect` brings the schema up to date itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrations {
    /// Apply what is missing (the default for `hiscore serve`).
    Apply,
    /// Refuse to start unless every migration is applied (operators who run
    /// `hiscore migrate` by hand).
    Require,
}

tokio::task_local! {
    /// Set while a periodic job runs (see [`periodic_job`]).
    static PERIODIC_JOB: ();
}

/// Runs `work` as a periodic job's: its statements count as the jobs'
/// (`hiscore_db_job_statements_total`). Tasks it spawns are not inside.
pub async fn periodic_job<F: Future>(work: F) -> F::Output {
    PERIODIC_JOB.scope((), work).await
}

/// The database: a connection pool and the dialect it speaks.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    /// The score writer's connection (see [`Store::begin_score_batch`]).
    score_batches: AnyPool,
    /// The pool of [`Store::for_board_reads`].
    board_reads: AnyPool,
    dialect: Dialect,
    /// Counts every statement this store runs (see the module docs).
    statements: IntCounter,
    /// Counts those run inside [`periodic_job`], when set.
    job_statements: Option<IntCounter>,
    /// How a multi-row INSERT reports the ids it assigned.
    insert_ids: InsertIds,
    /// Where large boards' middles were, shared by both pools' stores.
    middles: Arc<board_reads::Middles>,
    /// An event the outbox queues for a webhook only while it has fewer
    /// undelivered ones than this (see [`Store::bounding_outbox`]).
    outbox_bound: Option<(&'static str, i64)>,
}

/// How a multi-row INSERT reports the ids it assigned, in row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InsertIds {
    /// `RETURNING id`, sorted (a statement assigns its rows' ids in row
    /// order, whatever the step between them): SQLite, and MariaDB 10.5+
    /// when its ids are not consecutive (`innodb_autoinc_lock_mode` 2, as
    /// Galera requires).
    Returning,
    /// The first id, then one every `step` (`auto_increment_increment`):
    /// MySQL and MariaDB with `innodb_autoinc_lock_mode` 0 or 1, which
    /// reserve a statement's ids together.
    Consecutive { step: i64 },
    /// One INSERT per row: MySQL 8 with interleaved locks (no `RETURNING`).
    OneByOne,
}

/// Whether a `VERSION()` is MariaDB 10.5 or later (`INSERT … RETURNING`).
fn has_insert_returning(version: &str) -> bool {
    let mut numbers = version.split(['.', '-']).map_while(|part| part.parse::<u32>().ok());
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    version.contains("MariaDB") && (major, minor) >= (10, 5)
}

impl Store {
    /// Connects and brings the schema up to date (or checks it is).
    pub async fn connect(
        url: &str,
        max_connections: u32,
        statements: IntCounter,
        migrations: Migrations,
        sync: SqliteSync,
    ) -> StoreResult<Self> {
        let mut store = Self::open(url, max_connections, statements, sync).await?;
        match migrations {
            Migrations::Apply => {
                store.migrate().await?;
            }
            Migrations::Require => store.require_migrated().await?,
        }
        if store.dialect == Dialect::MySql {
            let mut conn = store.conn().await?;
            let mode: i64 = store.sql_scalar("SELECT @@innodb_autoinc_lock_mode").fetch_one(&mut *conn).await?;
            let step: i64 = store.sql_scalar("SELECT @@auto_increment_increment").fetch_one(&mut *conn).await?;
            let version: String = store.sql_scalar("SELECT VERSION()").fetch_one(&mut *conn).await?;
            store.insert_ids = match mode {
                0 | 1 => InsertIds::Consecutive { step: step.max(1) },
                _ if has_insert_returning(&version) => InsertIds::Returning,
                _ => InsertIds::OneByOne,
            };
        }
        Ok(store)
    }

    /// Connects without touching the schema (`hiscore migrate`).
    pub async fn open(url: &str, max_connections: u32, statements: IntCounter, sync: SqliteSync) -> StoreResult<Self> {
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
        let pool = with_session_setup(AnyPoolOptions::new(), dialect, sync, false)
            .max_connections(max_connections)
            .min_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await?;
        // Each connection to an in-memory database is a database of its own.
        let in_memory = url.contains(":memory:");
        let score_batches = if in_memory {
            pool.clone()
        } else {
            with_session_setup(AnyPoolOptions::new(), dialect, sync, false)
                .max_connections(1)
                .min_connections(0)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_lazy_with(options.clone())
        };
        let board_reads = if in_memory {
            pool.clone()
        } else {
            with_session_setup(AnyPoolOptions::new(), dialect, sync, true)
                .max_connections(board_read_connections(max_connections))
                .min_connections(0)
                .acquire_timeout(BOARD_READ_WAIT)
                .connect_lazy_with(options)
        };
        let insert_ids = match dialect {
            Dialect::Sqlite => InsertIds::Returning,
            Dialect::MySql => InsertIds::Consecutive { step: 1 },
        };
        Ok(Self {
            pool,
            score_batches,
            board_reads,
            dialect,
            statements,
            job_statements: None,
            insert_ids,
            middles: Arc::default(),
            outbox_bound: None,
        })
    }

    /// This store on its own pool for the rank engine's reads of boards
    /// (pages, ranks, friends boards when Redis cannot answer, and ended
    /// periods): reads anyone can ask for without an account, so they
    /// cannot take the connections the score writer, logins and sessions
    /// need. The pool is a quarter of `DB_MAX_CONNECTIONS` (at least 2),
    /// waits at most [`BOARD_READ_WAIT`] for a connection (then 503), and
    /// on MySQL/MariaDB each statement stops after [`BOARD_READ_TIMEOUT`].
    pub fn for_board_reads(&self) -> Store {
        Self { pool: self.board_reads.clone(), ..self.clone() }
    }

    /// Applies the migrations this database lacks; returns their versions.
    /// Several instances starting at once take turns (sqlx locks MySQL).
    pub async fn migrate(&self) -> StoreResult<Vec<i64>> {
        // One connection for all of it (a pool of one must do). sqlx's own
        // lock is `GET_LOCK(name, -1)`, which MariaDB answers at once with
        // NULL (a negative timeout is no wait there): two instances starting
        // together on a new database both applied the migrations, and one
        // stopped on a duplicate key (found by running the README's
        // two-instance recipe). So a lock of ours, with a real timeout,
        // held by this connection while the migrator runs on it.
        let mut conn = self.conn().await?;
        if self.dialect == Dialect::MySql {
            let got: Option<i64> = self
                .sql_scalar("SELECT GET_LOCK(CONCAT('hiscore-migrate:', DATABASE()), 120)")
                .fetch_one(&mut *conn)
                .await?;
            if got != Some(1) {
                return Err(StoreError::Schema("another instance held the migration lock for 120 s".into()));
            }
        }
        let migrated = async {
            let before = self.applied_migrations_on(&mut conn).await?;
            self.dialect.migrations().run(&mut *conn).await?;
            let after = self.applied_migrations_on(&mut conn).await?;
            Ok(after.into_iter().filter(|version| !before.contains(version)).collect())
        }
        .await;
        if self.dialect == Dialect::MySql {
            self.sql("SELECT RELEASE_LOCK(CONCAT('hiscore-migrate:', DATABASE()))").execute(&mut *conn).await?;
        }
        migrated
    }

    /// Fails unless every migration of this version is applied.
    async fn require_migrated(&self) -> StoreResult<()> {
        let applied = self.applied_migrations().await?;
        let missing: Vec<i64> = self
            .dialect
            .migrations()
            .iter()
            .map(|migration| migration.version)
            .filter(|version| !applied.contains(version))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(StoreError::Schema(format!("migrations {missing:?} are not applied: run `hiscore migrate`")))
        }
    }

    /// Versions recorded as applied (none on a database no migration has touched).
    async fn applied_migrations(&self) -> StoreResult<Vec<i64>> {
        let mut conn = self.conn().await?;
        self.applied_migrations_on(&mut conn).await
    }

    async fn applied_migrations_on(&self, conn: &mut AnyConnection) -> StoreResult<Vec<i64>> {
        let recorded = self
            .sql_scalar::<i64>("SELECT version FROM _sqlx_migrations WHERE success = TRUE ORDER BY version")
            .fetch_all(&mut *conn)
            .await;
        match recorded {
            Ok(versions) => Ok(versions),
            // No bookkeeping table yet: nothing applied.
            Err(sqlx::Error::Database(_)) => Ok(Vec::new()),
            Err(error) => Err(error.into()),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// A pooled connection, for the statements of one use case.
    pub async fn conn(&self) -> StoreResult<PoolConnection<Any>> {
        Ok(self.pool.acquire().await?)
    }

    pub async fn begin_write(&self) -> StoreResult<Transaction<'static, Any>> {
        Self::begin(&self.pool, self.dialect.begin_write()).await
    }

    /// The score writer's batch transaction: [`Store::begin_write`] on a
    /// connection of the writer's own, always the same one. SQLite keeps a
    /// connection's page cache only while no other connection writes; from
    /// the shared pool each batch took the connection idle longest, whose
    /// cache the writer's own earlier batches had made stale, and read its
    /// pages again (the log's indexes where posts go in, the entries). On
    /// MySQL/MariaDB it keeps the writer from waiting behind requests for a
    /// connection. 1.15x-1.17x the posts/s of the shared pool on SQLite
    /// (BENCHMARKS.md, "A connection of the writer's own").
    pub async fn begin_score_batch(&self) -> StoreResult<Transaction<'static, Any>> {
        Self::begin(&self.score_batches, self.dialect.begin_write()).await
    }

    /// A read snapshot: every statement in it sees the same data (SQLite's
    /// deferred transaction, InnoDB's REPEATABLE READ).
    pub async fn begin_read(&self) -> StoreResult<Transaction<'static, Any>> {
        Self::begin(&self.pool, None).await
    }

    /// Takes a connection and begins a transaction on it, on a task of its
    /// own, so that a caller dropped mid-way (a client gone, a timeout)
    /// cannot cut the `BEGIN` short. sqlx counts a transaction once the
    /// server's answer to `BEGIN` is read: a future dropped after the
    /// server began it and before the answer was read left the server in a
    /// transaction sqlx did not know of, so it was neither rolled back nor
    /// noticed, and the connection went back to the pool with it open (to
    /// hold its locks under the next user's statements: RELIABILITY.md, a
    /// `DROP DATABASE` waiting 24 minutes). On a task the `BEGIN` always
    /// completes; a transaction nobody takes is dropped there, and its
    /// rollback runs before the connection is pooled again.
    async fn begin(pool: &AnyPool, statement: Option<&'static str>) -> StoreResult<Transaction<'static, Any>> {
        let pool = pool.clone();
        let begun = tokio::spawn(async move {
            match statement {
                Some(statement) => pool.begin_with(statement).await,
                None => pool.begin().await,
            }
        });
        match begun.await {
            Ok(transaction) => Ok(transaction?),
            Err(error) => Err(StoreError::from(sqlx::Error::Io(std::io::Error::other(error)))),
        }
    }

    /// Answers whether the database is reachable.
    pub async fn ping(&self) -> StoreResult<()> {
        let mut conn = self.conn().await?;
        self.sql("SELECT 1").execute(&mut *conn).await?;
        Ok(())
    }

    /// An INSERT statement that reports the new row's auto-increment key,
    /// `column` (see [`Store::insert_returning_id`]).
    fn insert_sql(&self, insert: &str, column: &str) -> String {
        match self.insert_ids {
            InsertIds::Returning => format!("{insert} RETURNING {column} AS id"),
            InsertIds::Consecutive { .. } | InsertIds::OneByOne => insert.to_owned(),
        }
    }

    /// Whether a multi-row INSERT must be sent one row at a time.
    fn inserts_one_by_one(&self) -> bool {
        self.insert_ids == InsertIds::OneByOne
    }

    /// Runs an INSERT of `rows` rows built from [`Store::insert_sql`] and
    /// returns their ids in row order.
    async fn inserted_ids<'q>(
        &self,
        conn: &mut AnyConnection,
        query: Query<'q, Any, AnyArguments<'q>>,
        rows: usize,
    ) -> Result<Vec<i64>, sqlx::Error> {
        use sqlx::Row as _;
        match self.insert_ids {
            InsertIds::Returning => {
                let found = query.fetch_all(&mut *conn).await?;
                // By position: sqlx names no column of a prepared `INSERT … RETURNING` on MariaDB.
                let mut ids = found.iter().map(|row| row.try_get(0)).collect::<Result<Vec<i64>, _>>()?;
                ids.sort_unstable();
                Ok(ids)
            }
            InsertIds::Consecutive { .. } | InsertIds::OneByOne => {
                let step = match self.insert_ids {
                    InsertIds::Consecutive { step } => step,
                    _ if rows == 1 => 1,
                    _ => return Err(sqlx::Error::Protocol("a multi-row INSERT sent whole without RETURNING".into())),
                };
                let done = query.execute(&mut *conn).await?;
                let first =
                    done.last_insert_id().ok_or_else(|| sqlx::Error::Protocol("INSERT reported no id".into()))?;
                Ok((0..rows as i64).map(|i| first + i * step).collect())
            }
        }
    }

    /// Runs a one-row INSERT built from [`Store::insert_sql`] and returns the new id.
    async fn insert_returning_id<'q>(
        &self,
        conn: &mut AnyConnection,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Result<i64, sqlx::Error> {
        let ids = self.inserted_ids(conn, query, 1).await?;
        ids.first().copied().ok_or_else(|| sqlx::Error::Protocol("INSERT reported no id".into()))
    }

    /// Queues `event` for a webhook only while it has fewer than `backlog`
    /// undelivered ones (an event players can cause in a loop, which would
    /// otherwise outgrow any delivery).
    pub fn bounding_outbox(mut self, event: &'static str, backlog: i64) -> Self {
        self.outbox_bound = Some((event, backlog));
        self
    }

    /// Counts the statements run inside [`periodic_job`] on `counter` too.
    pub fn counting_job_statements(mut self, counter: IntCounter) -> Self {
        self.job_statements = Some(counter);
        self
    }

    /// Counts one statement.
    fn count_statement(&self) {
        self.statements.inc();
        if let Some(jobs) = &self.job_statements {
            if PERIODIC_JOB.try_with(|_| ()).is_ok() {
                jobs.inc();
            }
        }
    }

    /// The one place statements are built: counts them.
    fn sql<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>> {
        self.count_statement();
        sqlx::query(text)
    }

    /// A counted statement whose rows come out as `T` (a `FromRow` struct).
    fn sql_as<'q, T>(&self, text: &'q str) -> QueryAs<'q, Any, T, AnyArguments<'q>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        self.count_statement();
        sqlx::query_as(text)
    }

    /// A counted statement whose first column comes out as `T`.
    fn sql_scalar<'q, T>(&self, text: &'q str) -> QueryScalar<'q, Any, T, AnyArguments<'q>>
    where
        (T,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        self.count_statement();
        sqlx::query_scalar(text)
    }

    /// A statement whose text changes with its input (an `IN (…)` list, a
    /// multi-row INSERT): not kept in the per-connection prepared-statement
    /// cache, which every list length would otherwise fill up.
    fn sql_once<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>> {
        self.sql(text).persistent(false)
    }
}

fn create_sqlite_parent_dir(url: &str) -> StoreResult<()> {
    let path = url.trim_start_matches("sqlite:").trim_start_matches("//");
    let path = path.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|error| StoreError::Unavailable(error.into()))?;
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

/// `?, ?, …` for an `IN (…)` list of `count` values.
fn placeholders(count: usize) -> String {
    vec!["?"; count].join(", ")
}

/// The most bind parameters one statement carries: SQLite's limit (MySQL's
/// is 65,535). A batch at the contract's maxima (2,000 posts, each fed to
/// ten partitioned boards) writes ~44,000 rows: multi-row statements are
/// cut to fit ([`rows_per_statement`]).
const MAX_BINDS: usize = 32_766;

/// The most alternatives one `(…) OR (…)` condition names: SQLite parses
/// the chain into a tree as deep as it is long and refuses one deeper than
/// 1,000 ("Expression tree is too large"), and a batch opening a partition
/// per post names thousands of board periods.
const MAX_ALTERNATIVES: usize = 500;

/// How many rows of `binds` parameters each one statement takes.
const fn rows_per_statement(binds: usize) -> usize {
    MAX_BINDS / binds
}

/// Cuts `groups` (each naming `binds_of` parameters) into runs one
/// statement can take: at most [`MAX_ALTERNATIVES`] groups and
/// [`MAX_BINDS`] parameters each, in order.
fn statement_runs<T>(groups: &[T], binds_of: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut runs = Vec::new();
    let (mut start, mut binds) = (0, 0);
    for (index, group) in groups.iter().enumerate() {
        let more = binds_of(group);
        if index > start && (index - start == MAX_ALTERNATIVES || binds + more > MAX_BINDS) {
            runs.push(&groups[start..index]);
            (start, binds) = (index, 0);
        }
        binds += more;
    }
    if start < groups.len() {
        runs.push(&groups[start..]);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ApiError, ErrorCode};

    #[test]
    fn statement_runs_keep_to_the_alternatives_and_binds_one_statement_takes() {
        let groups: Vec<usize> = vec![2; 1_201];
        let runs = statement_runs(&groups, |binds| *binds);
        assert_eq!(runs.iter().map(|run| run.len()).collect::<Vec<_>>(), [500, 500, 201]);
        let wide = vec![10_000_usize, 10_000, 10_000, 2_766, 1];
        let runs = statement_runs(&wide, |binds| *binds);
        assert_eq!(runs.iter().map(|run| run.len()).collect::<Vec<_>>(), [4, 1], "32,766 fit, 32,767 do not");
        let alone = statement_runs(&[40_000_usize], |binds| *binds);
        assert_eq!(alone.len(), 1, "a group wider than a statement still goes, alone");
        assert!(statement_runs(&[] as &[usize], |binds| *binds).is_empty());
        assert!(rows_per_statement(15) * 15 <= MAX_BINDS);
    }

    /// SQLite still locked by another writer is a 503 to retry, not a bug.
    #[tokio::test]
    async fn a_locked_sqlite_is_unavailable_not_a_bug() {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/locked.db?mode=rwc", dir.path().display());
        let mut holder = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("PRAGMA journal_mode = WAL").execute(&mut holder).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE").execute(&mut holder).await.unwrap();
        let mut other = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("PRAGMA busy_timeout = 0").execute(&mut other).await.unwrap();
        let locked = sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap_err();
        let error = StoreError::from(locked);
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        assert_eq!(ApiError::from(error).code(), ErrorCode::DatabaseUnavailable);
    }

    /// A conflict runs the write again, up to WRITE_ATTEMPTS in all; any
    /// other failure, or the last conflict, is the answer.
    #[tokio::test]
    async fn a_write_that_loses_to_another_runs_again_a_few_times() {
        let conflict = || StoreError::Conflict(sqlx::Error::PoolTimedOut);
        for (conflicts, expected_runs, ok) in [(0, 1, true), (2, 3, true), (3, 3, false), (9, 3, false)] {
            let (mut runs, mut heard) = (0, 0);
            let outcome = retry_conflicts(
                async || {
                    runs += 1;
                    if runs <= conflicts {
                        Err(conflict())
                    } else {
                        Ok(runs)
                    }
                },
                |_| heard += 1,
            )
            .await;
            assert_eq!((runs, outcome.is_ok()), (expected_runs, ok), "{conflicts} conflicts");
            assert_eq!(heard, expected_runs - 1, "{conflicts} conflicts");
        }
        let mut runs = 0;
        let outcome: Result<(), _> = retry_conflicts(
            async || {
                runs += 1;
                Err(StoreError::Unavailable(sqlx::Error::PoolTimedOut))
            },
            |_| {},
        )
        .await;
        assert!(matches!(outcome, Err(StoreError::Unavailable(_))));
        assert_eq!(runs, 1, "only a conflict runs again");
    }

    #[test]
    fn insert_returning_is_mariadb_10_5_and_later() {
        assert!(has_insert_returning("10.11.19-MariaDB-0+deb12u1"));
        assert!(has_insert_returning("10.5.0-MariaDB"));
        assert!(has_insert_returning("11.4.2-MariaDB-log"));
        assert!(!has_insert_returning("10.4.32-MariaDB"));
        assert!(!has_insert_returning("8.0.36"), "MySQL has none");
    }

    /// A commit is on disk before it is answered unless the operator
    /// chose otherwise, by a name that says what it risks.
    #[tokio::test]
    async fn sqlite_commits_are_fully_synced_by_default() {
        for (sync, expected) in [(SqliteSync::default(), 2_i64), (SqliteSync::NormalUnsafeOnPowerLoss, 1)] {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}/sync.db", dir.path().display());
            let counter = IntCounter::new("statements", "statements").unwrap();
            let store = Store::open(&url, 1, counter, sync).await.unwrap();
            let level: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(store.pool()).await.unwrap();
            assert_eq!(level, expected, "{sync:?}");
        }
    }

    /// The score writer's batches run on a connection of their own: while
    /// requests hold every pooled connection, and batch after batch (a
    /// TEMP table is one connection's), never on a pooled one.
    #[tokio::test]
    async fn score_batches_run_on_one_connection_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/batches.db", dir.path().display());
        let counter = IntCounter::new("statements", "statements").unwrap();
        let store = Store::open(&url, 2, counter, SqliteSync::default()).await.unwrap();
        let held = [store.conn().await.unwrap(), store.conn().await.unwrap()];
        let mut batch = store.begin_score_batch().await.unwrap();
        sqlx::query("CREATE TEMP TABLE the_batches_connection (n INTEGER)").execute(&mut *batch).await.unwrap();
        batch.commit().await.unwrap();
        drop(held);
        for _ in 0..3 {
            let mut request = store.begin_write().await.unwrap();
            let seen = sqlx::query("SELECT n FROM temp.the_batches_connection").execute(&mut *request).await;
            assert!(seen.is_err(), "a pooled connection is not the writer's");
            request.rollback().await.unwrap();
            let mut batch = store.begin_score_batch().await.unwrap();
            sqlx::query("INSERT INTO temp.the_batches_connection (n) VALUES (1)").execute(&mut *batch).await.unwrap();
            batch.commit().await.unwrap();
        }
    }

    #[test]
    fn both_dialects_have_the_same_migrations() {
        let versions = |dialect: Dialect| -> Vec<(i64, String)> {
            dialect.migrations().iter().map(|m| (m.version, m.description.to_string())).collect()
        };
        assert_eq!(versions(Dialect::Sqlite), versions(Dialect::MySql));
        assert!(!versions(Dialect::Sqlite).is_empty());
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
