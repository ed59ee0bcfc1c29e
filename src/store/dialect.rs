//! The backends hiscore runs on, and every SQL difference between them,
//! side by side.

use sqlx::migrate::Migrator;

use super::{SqliteSync, MYSQL_MIGRATIONS, SQLITE_MIGRATIONS};

/// The backends hiscore runs on, and everything that differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    MySql,
}

impl Dialect {
    pub(super) fn of(url: &str) -> Self {
        if url.starts_with("sqlite:") {
            Self::Sqlite
        } else {
            Self::MySql
        }
    }

    pub(super) fn migrations(self) -> &'static Migrator {
        match self {
            Self::Sqlite => &SQLITE_MIGRATIONS,
            Self::MySql => &MYSQL_MIGRATIONS,
        }
    }

    /// Run on every new connection.
    pub(super) fn session_setup(self, sync: SqliteSync) -> &'static [&'static str] {
        match (self, sync) {
            // WAL lets readers run beside the one writer. FULL syncs the
            // log at every commit (one fsync per group-committed batch, not
            // per post): a committed post survives a power loss. NORMAL
            // survives a process crash only.
            (Self::Sqlite, SqliteSync::Full) => {
                &["PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA busy_timeout = 5000"]
            }
            (Self::Sqlite, SqliteSync::NormalUnsafeOnPowerLoss) => {
                &["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA busy_timeout = 5000"]
            }
            (Self::MySql, _) => &[
                "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
                // Room for the rank engine's warm-up chunks (see `standings_chunk`).
                "SET SESSION group_concat_max_len = 67108864",
            ],
        }
    }

    /// How a transaction that will write starts. SQLite must take the write
    /// lock up front: a deferred transaction that reads first and then writes
    /// can fail with SQLITE_BUSY instead of waiting.
    pub(super) fn begin_write(self) -> Option<&'static str> {
        match self {
            Self::Sqlite => Some("BEGIN IMMEDIATE"),
            Self::MySql => None,
        }
    }

    /// Appended to a SELECT that must lock the rows it reads.
    pub(super) fn lock_rows(self) -> &'static str {
        match self {
            // The write transaction (BEGIN IMMEDIATE) already excludes other writers.
            Self::Sqlite => "",
            Self::MySql => " FOR UPDATE",
        }
    }

    /// Appended to a SELECT that must keep the rows it reads from changing
    /// until the transaction ends, while letting others read them too.
    pub(super) fn share_lock(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::MySql => " LOCK IN SHARE MODE",
        }
    }

    /// `users` for a read by ranges of ids that must walk the primary key:
    /// with `banned_at IS NULL` in the condition, SQLite chose a board index
    /// (`banned_at` is its first column) and walked all of it for every
    /// range (1.3 s against 9 ms per 50,000 ids at 10M players: a warm-up
    /// of 116 s, BENCHMARKS.md "Scale").
    pub(super) fn users_by_id(self) -> &'static str {
        match self {
            Self::Sqlite => "users NOT INDEXED",
            Self::MySql => "users FORCE INDEX (PRIMARY)",
        }
    }

    /// `board_entries` for a read of some players' entries in one period
    /// (`user_id IN (…)`) that must seek each by the primary key: for 100
    /// ids MariaDB walked the whole period by the key's first two columns
    /// (1.3 s at a million entries, against 10 ms), where SQLite seeks.
    pub(super) fn entries_by_key(self) -> &'static str {
        match self {
            Self::Sqlite => "board_entries",
            Self::MySql => "board_entries FORCE INDEX (PRIMARY)",
        }
    }

    /// An aggregate of integer `fields` into one text `f1,f2,…;f1,f2,…`.
    /// Reading a million entries as a million driver rows costs seconds in
    /// sqlx; the database builds the same data as a few strings in a
    /// fraction of that (measured in BENCHMARKS.md).
    pub(super) fn packed(self, fields: &[&str]) -> String {
        match self {
            Self::Sqlite => format!("group_concat({}, ';')", fields.join(" || ',' || ")),
            Self::MySql => format!("GROUP_CONCAT(CONCAT_WS(',', {}) SEPARATOR ';')", fields.join(", ")),
        }
    }

    /// An INSERT that skips rows whose key exists: its verb, and its tail.
    pub(super) fn insert_ignore(self) -> &'static str {
        match self {
            Self::Sqlite => "INSERT",
            Self::MySql => "INSERT IGNORE",
        }
    }

    pub(super) fn on_conflict_ignore(self) -> &'static str {
        match self {
            Self::Sqlite => " ON CONFLICT DO NOTHING",
            Self::MySql => "",
        }
    }

    /// The tail of an INSERT that overwrites `columns` of a row whose key
    /// (`key`, SQLite needs it spelled) exists with the inserted values.
    pub(super) fn upsert(self, key: &str, columns: &[&str]) -> String {
        match self {
            Self::Sqlite => {
                let sets: Vec<String> = columns.iter().map(|c| format!("{c} = excluded.{c}")).collect();
                format!(" ON CONFLICT ({key}) DO UPDATE SET {}", sets.join(", "))
            }
            Self::MySql => {
                let sets: Vec<String> = columns.iter().map(|c| format!("{c} = VALUES({c})")).collect();
                format!(" ON DUPLICATE KEY UPDATE {}", sets.join(", "))
            }
        }
    }

    /// The tail of an INSERT that adds the inserted `column` to a row whose
    /// key (`key`) exists.
    pub(super) fn upsert_adding(self, key: &str, column: &str) -> String {
        match self {
            Self::Sqlite => format!(" ON CONFLICT ({key}) DO UPDATE SET {column} = {column} + excluded.{column}"),
            Self::MySql => format!(" ON DUPLICATE KEY UPDATE {column} = {column} + VALUES({column})"),
        }
    }

    /// A DELETE of at most `?` rows matching `condition` (bound first).
    pub(super) fn delete_chunk(self, table: &str, condition: &str) -> String {
        match self {
            Self::Sqlite => {
                format!("DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE {condition} LIMIT ?)")
            }
            Self::MySql => format!("DELETE FROM {table} WHERE {condition} LIMIT ?"),
        }
    }

    /// An UPDATE of `table` from a derived table `source` (as `c`), joined
    /// on `columns`, setting each (column, from `c`'s column). The binds are
    /// all in `source`, so both forms bind alike.
    pub(super) fn update_from(self, table: &str, source: &str, columns: &[&str], set: &[(&str, &str)]) -> String {
        let on = |alias: &str| {
            columns.iter().map(|column| format!("{alias}.{column} = c.{column}")).collect::<Vec<_>>().join(" AND ")
        };
        let assignments = |alias: &str| {
            let prefix = if alias.is_empty() { String::new() } else { format!("{alias}.") };
            set.iter().map(|(column, from)| format!("{prefix}{column} = c.{from}")).collect::<Vec<_>>().join(", ")
        };
        match self {
            Self::Sqlite => format!("UPDATE {table} SET {} FROM ({source}) AS c WHERE {}", assignments(""), on(table)),
            Self::MySql => format!("UPDATE {table} t JOIN ({source}) c ON {} SET {}", on("t"), assignments("t")),
        }
    }

    /// Empties a table. TRUNCATE is far faster on InnoDB; SQLite has none
    /// (its unqualified DELETE is the truncate optimisation).
    pub(super) fn wipe(self, table: &str) -> String {
        match self {
            Self::Sqlite => format!("DELETE FROM {table}"),
            Self::MySql => format!("TRUNCATE TABLE {table}"),
        }
    }
}
