//! The `users` table: accounts and their denormalised aggregates.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::rows::USER_COLUMNS;
use super::{placeholders, Store, StoreError, StoreResult, UniqueKey, UserRow};
use crate::domain::Timestamp;

/// What registration stores.
pub struct NewUser<'a> {
    pub login_name: &'a str,
    pub login_key: &'a str,
    pub display_name: &'a str,
    pub password_hash: &'a str,
    pub created_at: Timestamp,
}

/// A login's stored credentials.
#[derive(sqlx::FromRow)]
pub struct Credentials {
    pub id: i64,
    pub password_hash: String,
    pub banned_at: Option<Timestamp>,
}

impl Store {
    /// Inserts a user; `Taken(LoginName)` when the login name is taken
    /// (case-insensitively).
    pub async fn insert_user(&self, conn: &mut AnyConnection, user: &NewUser<'_>) -> StoreResult<i64> {
        let sql = self.insert_sql(
            "INSERT INTO users (login_name, login_key, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
            "id",
        );
        let query = self
            .sql(&sql)
            .bind(user.login_name)
            .bind(user.login_key)
            .bind(user.display_name)
            .bind(user.password_hash)
            .bind(user.created_at);
        self.insert_returning_id(conn, query).await.map_err(StoreError::taken_as(UniqueKey::LoginName))
    }

    /// The id, stored password hash and ban for a login key.
    pub async fn credentials(&self, conn: &mut AnyConnection, login_key: &str) -> StoreResult<Option<Credentials>> {
        Ok(self
            .sql_as("SELECT id, password_hash, banned_at FROM users WHERE login_key = ?")
            .bind(login_key)
            .fetch_optional(&mut *conn)
            .await?)
    }

    /// The stored credentials of a player.
    pub async fn credentials_of(&self, conn: &mut AnyConnection, user_id: i64) -> StoreResult<Option<Credentials>> {
        Ok(self
            .sql_as("SELECT id, password_hash, banned_at FROM users WHERE id = ?")
            .bind(user_id)
            .fetch_optional(&mut *conn)
            .await?)
    }

    pub async fn set_password_hash(&self, conn: &mut AnyConnection, user_id: i64, hash: &str) -> StoreResult<()> {
        self.sql("UPDATE users SET password_hash = ? WHERE id = ?")
            .bind(hash)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    pub async fn user(&self, conn: &mut AnyConnection, id: i64) -> StoreResult<Option<UserRow>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?");
        Ok(self.sql_as(&sql).bind(id).fetch_optional(&mut *conn).await?)
    }

    /// Players whose id is `q`, or whose login or display name starts
    /// with it (logins case-insensitively), banned ones included, by id;
    /// at most `limit`. An admin's search: the display-name prefix has no
    /// index and scans the table.
    pub async fn search_users(&self, q: &str, limit: i64) -> StoreResult<Vec<UserRow>> {
        let mut conn = self.conn().await?;
        let escaped = |text: &str| {
            let text = text.replace('!', "!!").replace('%', "!%").replace('_', "!_");
            format!("{text}%")
        };
        let id = q.parse::<i64>().unwrap_or(-1);
        // Logins are ASCII (an ASCII column on MariaDB, where comparing it
        // with other text is an error): other text cannot start one.
        let login = q.is_ascii().then(|| escaped(&q.to_ascii_lowercase()));
        let by_login = if login.is_some() { "OR login_key LIKE ? ESCAPE '!' " } else { "" };
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM users WHERE id = ? {by_login}OR display_name LIKE ? ESCAPE '!' \
             ORDER BY id LIMIT ?"
        );
        let mut query = self.sql_as(&sql).persistent(false).bind(id);
        if let Some(login) = login {
            query = query.bind(login);
        }
        Ok(query.bind(escaped(q)).bind(limit).fetch_all(&mut *conn).await?)
    }

    /// Users with the given ids, in one query, in no particular order;
    /// unknown ids are simply absent.
    pub async fn users(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<Vec<UserRow>> {
        self.users_where(conn, ids, "").await
    }

    /// The rows of `ids`, locked until the transaction ends (MySQL: `FOR
    /// UPDATE`; SQLite's write transaction already holds the only write lock).
    /// Locked in id order, so that concurrent batches cannot deadlock. The
    /// data generation is read first under a shared lock, so that no
    /// initialize commits new data until this transaction ends: the rows'
    /// `generation` is exactly the data they belong to.
    pub async fn users_for_update(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<Vec<UserRow>> {
        let sql = format!("SELECT generation FROM data_generation WHERE id = 1{}", self.dialect.share_lock());
        let generation: i64 = self.sql_scalar(&sql).fetch_one(&mut *conn).await?;
        let mut rows = self.users_where(conn, ids, self.dialect.lock_rows()).await?;
        for row in &mut rows {
            row.generation = generation;
        }
        Ok(rows)
    }

    /// The current data generation.
    pub async fn data_generation(&self) -> StoreResult<i64> {
        let mut conn = self.conn().await?;
        Ok(self.sql_scalar("SELECT generation FROM data_generation WHERE id = 1").fetch_one(&mut *conn).await?)
    }

    async fn users_where(&self, conn: &mut AnyConnection, ids: &[i64], lock: &str) -> StoreResult<Vec<UserRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql =
            format!("SELECT {USER_COLUMNS} FROM users WHERE id IN ({}) ORDER BY id{lock}", placeholders(ids.len()));
        let mut query = self.sql_as::<UserRow>(&sql).persistent(false);
        for id in ids {
            query = query.bind(*id);
        }
        Ok(query.fetch_all(&mut *conn).await?)
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
    ) -> StoreResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let cases = vec!["WHEN ? THEN ?"; changes.len()].join(" ");
        let ids = placeholders(changes.len());
        let sql = format!(
            "UPDATE users SET best_score = CASE id {cases} END, best_at = CASE id {cases} END, \
             best_score_id = CASE id {cases} END, total_score = total_score + CASE id {cases} END, \
             play_count = play_count + CASE id {cases} END, version = version + CASE id {cases} END \
             WHERE id IN ({ids})"
        );
        let mut query = self.sql_once(&sql);
        for (row, _, _) in changes {
            query = query.bind(row.id).bind(row.best_score);
        }
        for (row, _, _) in changes {
            query = query.bind(row.id).bind(row.best_at);
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
        // Each post is a change of the row.
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

/// A display name of a page's player.
#[derive(sqlx::FromRow)]
struct NameRow {
    id: i64,
    display_name: String,
}

impl Store {
    /// Display names of a page's players, in one query.
    pub async fn display_names(&self, ids: &[i64]) -> StoreResult<HashMap<i64, String>> {
        let mut conn = self.conn().await?;
        self.display_names_on(&mut conn, ids).await
    }

    /// Display names of these players (unknown ids left out), on a
    /// connection of the caller's (the score writer checks in its
    /// transaction that its players exist).
    pub async fn display_names_on(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<HashMap<i64, String>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = format!("SELECT id, display_name FROM users WHERE id IN ({})", placeholders(ids.len()));
        let mut query = self.sql_as::<NameRow>(&sql).persistent(false);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(|row| (row.id, row.display_name)).collect())
    }
}
