//! A change to a player's account, by an admin (`moderation`) or by the
//! player (`accounts`): removing a post, a ban, a rename, a new password,
//! erasure.
//!
//! Each is one transaction that locks the player's row first, the lock
//! every score batch takes too (see `scoring`), so a change and a post of
//! the same player never interleave: a post either commits before (and is
//! then counted, hidden or erased with the rest) or after (and then sees
//! the ban or the missing player). After the commit, [`publish`] brings
//! every copy up to date before the request is answered: the rank engine
//! (the local index, or Redis for every instance), the user rows in Redis,
//! rendered pages, display names and cached sessions.

use sqlx::AnyConnection;

use crate::domain::Timestamp;
use crate::error::{ApiError, ErrorCode};
use crate::rank::EntryChange;
use crate::scoring::entry_change;
use crate::state::AppState;
use crate::store::{retry_conflicts, EntryRow, MaybeConflict, StoreError, UserRow};

/// What a committed change did, for every copy of the data.
#[derive(Default)]
pub(super) struct Changed {
    /// Player rows as they are now (on or off the built-in boards).
    pub(super) users: Vec<UserRow>,
    /// Entries as they are now; `listed: false` takes one off its board.
    pub(super) entries: Vec<(EntryRow, bool)>,
    /// Sessions ended (their token hashes).
    pub(super) sessions: Vec<String>,
    /// Sessions of a player just banned: every use is 403 `banned` until
    /// the unban ends them.
    pub(super) banned_sessions: Vec<String>,
    /// Players whose display name changed or who are gone.
    pub(super) renamed: Vec<i64>,
    /// A player erased: their row as it was.
    pub(super) erased: Option<UserRow>,
    /// The bench's planted fault: the rank engine is not told.
    pub(super) engine_left_stale: bool,
}

/// Why a change's transaction stopped: a refusal for the caller, or
/// the database (retried when it was a conflict).
pub(super) enum Failure {
    Api(ApiError),
    Store(StoreError),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl From<ErrorCode> for Failure {
    fn from(code: ErrorCode) -> Self {
        Self::Api(code.into())
    }
}

impl MaybeConflict for Failure {
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Store(error) if error.is_conflict())
    }
}

/// Runs `work` in a write transaction, and again when it or its commit
/// loses to another transaction (see [`retry_conflicts`]).
pub(super) async fn in_transaction<T>(
    state: &AppState,
    mut work: impl AsyncFnMut(&mut AnyConnection) -> Result<T, Failure>,
) -> Result<T, ApiError> {
    let outcome = retry_conflicts(
        async || {
            let mut tx = state.store.begin_write().await?;
            let done = work(&mut tx).await?;
            tx.commit().await.map_err(StoreError::from)?;
            Ok(done)
        },
        |_| {},
    )
    .await;
    outcome.map_err(|failure| match failure {
        Failure::Api(error) => error,
        Failure::Store(error) => error.into(),
    })
}

/// Locks the row of the player whose session asks; a session whose player
/// is gone is no session.
pub(super) async fn lock_self(state: &AppState, conn: &mut AnyConnection, user_id: i64) -> Result<UserRow, Failure> {
    match lock_user(state, conn, user_id).await {
        Err(Failure::Api(_)) => Err(ErrorCode::InvalidSession.into()),
        other => other,
    }
}

/// Locks a player's row; 404 when there is none.
pub(super) async fn lock_user(state: &AppState, conn: &mut AnyConnection, user_id: i64) -> Result<UserRow, Failure> {
    let rows = state.store.users_for_update(conn, &[user_id]).await?;
    rows.into_iter().next().ok_or(Failure::from(ErrorCode::UserNotFound))
}

/// Brings every copy up to date with a committed change, before the
/// request is answered.
pub(super) async fn publish(state: &AppState, changed: Changed) {
    if !changed.engine_left_stale {
        state.ranks.record(&changed.users).await;
    }
    let now = Timestamp::now();
    let entries: Vec<(EntryChange, Option<Timestamp>)> = changed
        .entries
        .iter()
        .filter_map(|(entry, listed)| {
            let board = state.boards.by_number(entry.board)?;
            // Ended periods are read from the database: nothing to record.
            let period = board.period_at(now);
            (period.index == entry.period).then(|| (entry_change(&board, entry, *listed), period.end))
        })
        .collect();
    state.ranks.record_entries(&entries).await;
    match &changed.erased {
        Some(row) => state.caches.users.forget(row).await,
        None => state.caches.users.put_many(&changed.users).await,
    }
    if let Some(row) = &changed.erased {
        state.limits.forget_player(&row.login_name.to_ascii_lowercase(), row.id).await;
    }
    // Pages of ended periods and of boards whose engine did not move.
    state.caches.renderings_changed();
    if !changed.renamed.is_empty() {
        state.caches.names.forget(&changed.renamed);
        if let Some(redis) = &state.redis {
            if let Err(error) = redis.increment(&redis.keys().names_version()).await {
                tracing::error!(%error, "a rename could not be announced to the other instances");
            }
        }
        // After the names version: an instance that sees a page's stamp
        // move reads the names it shows under the new version.
        state.ranks.names_changed().await;
    }
    crate::usecases::sessions::forget_sessions(state, &changed.sessions).await;
    crate::usecases::sessions::ban_sessions(state, &changed.banned_sessions).await;
}
