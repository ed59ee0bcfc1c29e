//! The `users` table: accounts and their denormalised aggregates.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::{is_unique_violation, placeholders, Store};
use crate::domain::Timestamp;

/// A user row as every profile view needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    pub id: i64,
    pub login_name: String,
    pub display_name: String,
    pub best_score: i64,
    pub best_at: Option<Timestamp>,
    pub best_score_id: Option<i64>,
    pub total_score: i64,
    pub play_count: i64,
    pub created_at: Timestamp,
}

const USER_COLUMNS: &str =
    "id, login_name, display_name, best_score, best_at, best_score_id, total_score, play_count, created_at";

impl UserRow {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            login_name: row.try_get("login_name")?,
            display_name: row.try_get("display_name")?,
            best_score: row.try_get("best_score")?,
            best_at: row.try_get::<Option<i64>, _>("best_at")?.map(Timestamp::from_millis),
            best_score_id: row.try_get("best_score_id")?,
            total_score: row.try_get("total_score")?,
            play_count: row.try_get("play_count")?,
            created_at: Timestamp::from_millis(row.try_get("created_at")?),
        })
    }
}

/// What registration stores.
pub struct NewUser<'a> {
    pub login_name: &'a str,
    pub login_key: &'a str,
    pub display_name: &'a str,
    pub password_hash: &'a str,
    pub created_at: Timestamp,
}

impl Store {
    /// Inserts a user; `None` when the login name is taken (case-insensitively).
    pub async fn insert_user(&self, conn: &mut AnyConnection, user: &NewUser<'_>) -> Result<Option<i64>, sqlx::Error> {
        let sql = self.insert_sql(
            "INSERT INTO users (login_name, login_key, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        );
        let query = self
            .sql(&sql)
            .bind(user.login_name)
            .bind(user.login_key)
            .bind(user.display_name)
            .bind(user.password_hash)
            .bind(user.created_at.millis());
        match self.insert_returning_id(conn, query).await {
            Ok(id) => Ok(Some(id)),
            Err(error) if is_unique_violation(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The id and stored password hash for a login key.
    pub async fn credentials(
        &self,
        conn: &mut AnyConnection,
        login_key: &str,
    ) -> Result<Option<(i64, String)>, sqlx::Error> {
        let row = self
            .sql("SELECT id, password_hash FROM users WHERE login_key = ?")
            .bind(login_key)
            .fetch_optional(&mut *conn)
            .await?;
        row.map(|row| Ok((row.try_get("id")?, row.try_get("password_hash")?))).transpose()
    }

    pub async fn set_password_hash(
        &self,
        conn: &mut AnyConnection,
        user_id: i64,
        hash: &str,
    ) -> Result<(), sqlx::Error> {
        self.sql("UPDATE users SET password_hash = ? WHERE id = ?")
            .bind(hash)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    pub async fn user(&self, conn: &mut AnyConnection, id: i64) -> Result<Option<UserRow>, sqlx::Error> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?");
        let row = self.sql(&sql).bind(id).fetch_optional(&mut *conn).await?;
        row.as_ref().map(UserRow::from_row).transpose()
    }

    /// Users with the given ids, in one query, in no particular order;
    /// unknown ids are simply absent.
    pub async fn users(&self, conn: &mut AnyConnection, ids: &[i64]) -> Result<Vec<UserRow>, sqlx::Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = placeholders(ids.len());
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id IN ({placeholders})");
        let mut query = self.sql_once(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(UserRow::from_row).collect()
    }

    /// The rows of `ids`, locked until the transaction ends (MySQL: `FOR
    /// UPDATE`; SQLite's write transaction already holds the only write lock).
    /// Locked in id order, so that concurrent batches cannot deadlock.
    pub async fn users_for_update(&self, conn: &mut AnyConnection, ids: &[i64]) -> Result<Vec<UserRow>, sqlx::Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = placeholders(ids.len());
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM users WHERE id IN ({placeholders}) ORDER BY id{}",
            self.dialect.lock_rows()
        );
        let mut query = self.sql_once(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(UserRow::from_row).collect()
    }

    /// Writes the aggregates of several players after a batch of posts, in
    /// one statement; each entry is (row, total added, plays added). The
    /// best fields come from rows locked by [`Store::users_for_update`]; the
    /// counters are still applied as increments, so they stay exact even if
    /// a caller forgot the lock.
    pub async fn set_many_aggregates(
        &self,
        conn: &mut AnyConnection,
        changes: &[(&UserRow, i64, i64)],
    ) -> Result<(), sqlx::Error> {
        if changes.is_empty() {
            return Ok(());
        }
        let cases = vec!["WHEN ? THEN ?"; changes.len()].join(" ");
        let ids = placeholders(changes.len());
        let sql = format!(
            "UPDATE users SET best_score = CASE id {cases} END, best_at = CASE id {cases} END, \
             best_score_id = CASE id {cases} END, total_score = total_score + CASE id {cases} END, \
             play_count = play_count + CASE id {cases} END WHERE id IN ({ids})"
        );
        let mut query = self.sql_once(&sql);
        for (row, _, _) in changes {
            query = query.bind(row.id).bind(row.best_score);
        }
        for (row, _, _) in changes {
            query = query.bind(row.id).bind(row.best_at.map(|t| t.millis()));
        }
        for (row, _, _) in changes {
            query = query.bind(row.id).bind(row.best_score_id);
        }
        for (row, total_added, _) in changes {
            query = query.bind(row.id).bind(*total_added);
        }
        for (row, _, plays_added) in changes {
            query = query.bind(row.id).bind(*plays_added);
        }
        for (row, _, _) in changes {
            query = query.bind(row.id);
        }
        query.execute(&mut *conn).await?;
        Ok(())
    }
}
