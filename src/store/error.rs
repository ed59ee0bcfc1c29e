//! What can go wrong in the store, said without the driver: conflicts to
//! retry, taken unique keys, an unavailable database.

use crate::error::{ApiError, ErrorCode};

/// How often a write that keeps losing to other transactions is run.
pub const WRITE_ATTEMPTS: usize = 3;

/// An error that may mean the transaction lost to another one.
pub trait MaybeConflict {
    fn is_conflict(&self) -> bool;
}

impl MaybeConflict for StoreError {
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
    }
}

/// Runs `write` (one whole transaction: begin, work, commit) again while it
/// loses to another transaction, [`WRITE_ATTEMPTS`] times in all: a
/// deadlock or a cluster's certification failure rolled it back whole, so
/// running it again is safe. `on_conflict` hears of each retry.
pub async fn retry_conflicts<T, E: MaybeConflict>(
    mut write: impl AsyncFnMut() -> Result<T, E>,
    mut on_conflict: impl FnMut(&E),
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        match write().await {
            Err(error) if error.is_conflict() && attempt < WRITE_ATTEMPTS => {
                on_conflict(&error);
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// What went wrong in the database, in the terms callers act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database does not answer, or every connection is busy: retry later.
    #[error("database unavailable: {0}")]
    Unavailable(sqlx::Error),
    /// A unique key already holds this value.
    #[error("{0:?} is taken")]
    Taken(UniqueKey),
    /// The transaction lost to another one (a deadlock, a cluster's
    /// certification failure) and was rolled back whole: run it again.
    #[error("transaction conflict, rolled back: {0}")]
    Conflict(sqlx::Error),
    /// The schema is not what this version needs (migrations).
    #[error("schema: {0}")]
    Schema(String),
    /// The database answered something this code cannot read.
    #[error("unexpected data: {0}")]
    Corrupt(String),
    /// Anything else the driver reported.
    #[error(transparent)]
    Database(sqlx::Error),
}

/// The unique keys whose violation is a domain outcome rather than a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniqueKey {
    LoginName,
    BoardId,
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => Self::Unavailable(error),
            sqlx::Error::Decode(_) | sqlx::Error::ColumnDecode { .. } | sqlx::Error::ColumnNotFound(_) => {
                Self::Corrupt(error.to_string())
            }
            // SQLSTATE 40001: deadlock (MySQL 1213) or serialization failure;
            // SQLite's SQLITE_BUSY_SNAPSHOT (517): a read snapshot older than
            // a commit it would write over. Either way: run it again.
            sqlx::Error::Database(ref db) if matches!(db.code().as_deref(), Some("40001" | "517")) => {
                Self::Conflict(error)
            }
            // SQLite still locked after its busy timeout (SQLITE_BUSY 5,
            // SQLITE_BUSY_RECOVERY 261, SQLITE_LOCKED 6): too busy to answer
            // now, a 503 to retry, not a bug.
            sqlx::Error::Database(ref db) if matches!(db.code().as_deref(), Some("5" | "261" | "6")) => {
                Self::Unavailable(error)
            }
            // A statement stopped at its time limit (MariaDB 1969, SQLSTATE
            // 70100; MySQL 3024): the database is too busy to answer now.
            sqlx::Error::Database(ref db)
                if db.code().as_deref() == Some("70100") || db.message().contains("execution time exceeded") =>
            {
                Self::Unavailable(error)
            }
            other => Self::Database(other),
        }
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        match error {
            sqlx::migrate::MigrateError::Execute(inner) => inner.into(),
            other => Self::Schema(other.to_string()),
        }
    }
}

impl StoreError {
    /// Turns a unique violation of a statement into `Taken(key)`: the one
    /// place constraint errors become domain outcomes.
    pub(super) fn taken_as(key: UniqueKey) -> impl FnOnce(sqlx::Error) -> Self {
        move |error| if is_unique_violation(&error) { Self::Taken(key) } else { error.into() }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// What a store failure means to a client: the one place it is decided.
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            // Saturated pool or a database that does not answer: the client
            // may retry, nothing about it is a bug in the request.
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "database unavailable");
                Self::new(ErrorCode::DatabaseUnavailable)
            }
            StoreError::Taken(UniqueKey::LoginName) => Self::new(ErrorCode::LoginNameTaken),
            StoreError::Taken(UniqueKey::BoardId) => Self::new(ErrorCode::BoardExists),
            other => Self::internal(other),
        }
    }
}

/// A unique-index violation (see [`StoreError::taken_as`]).
pub(super) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}
