//! Moderation (admin) and the player's own account changes: removing a
//! post, bans, renames, password changes and erasure.
//!
//! Each is one transaction that locks the player's row first, the lock
//! every score batch takes too (see `scoring`), so a moderation and a post
//! of the same player never interleave: a post either commits before (and
//! is then counted, hidden or erased with the rest) or after (and then
//! sees the ban or the missing player). After the commit, [`publish`]
//! brings every copy up to date before the request is answered: the rank
//! engine (the local index, or Redis for every instance), the user rows in
//! Redis, rendered pages, display names and cached sessions.

use std::sync::Arc;

use serde_json::json;
use sqlx::AnyConnection;

use crate::boards::CustomBoard;
use crate::config::PlantedFault;
use crate::domain::{DisplayName, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::rank::EntryChange;
use crate::scoring::{count_post, entry_change, next_entry};
use crate::state::AppState;
use crate::store::{AuditRecord, AuditRow, EntryRow, EntryWrite, PeriodPlayers, StoreError, UserRow};

/// How often a moderation runs when it keeps losing to other transactions
/// (a deadlock with a score batch is resolved by rolling one back).
const ATTEMPTS: usize = 3;

/// Who did an admin action, as the audit log names them.
#[derive(Debug, Clone)]
pub struct Actor(pub String);

/// What a committed change did, for every copy of the data.
#[derive(Default)]
struct Changed {
    /// Player rows as they are now (on or off the built-in boards).
    users: Vec<UserRow>,
    /// Entries as they are now; `listed: false` takes one off its board.
    entries: Vec<(EntryRow, bool)>,
    /// Sessions ended (their token hashes).
    sessions: Vec<String>,
    /// Sessions of a player just banned: every use is 403 `banned` until
    /// the unban ends them.
    banned_sessions: Vec<String>,
    /// Players whose display name changed or who are gone.
    renamed: Vec<i64>,
    /// A player erased: their row as it was.
    erased: Option<UserRow>,
    /// The bench's planted fault: the rank engine is not told.
    engine_left_stale: bool,
}

/// Why a moderation's transaction stopped: a refusal for the caller, or
/// the database (retried when it was a conflict).
enum Failure {
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

/// Runs `work` in a write transaction, and again (up to [`ATTEMPTS`] in
/// all) when it or its commit loses to another transaction.
async fn in_transaction<T>(
    state: &AppState,
    mut work: impl AsyncFnMut(&mut AnyConnection) -> Result<T, Failure>,
) -> Result<T, ApiError> {
    let mut attempt = 1;
    loop {
        let mut tx = state.store.begin_write().await?;
        let error = match work(&mut tx).await {
            Ok(done) => match tx.commit().await {
                Ok(()) => return Ok(done),
                Err(error) => StoreError::from(error),
            },
            Err(Failure::Api(error)) => return Err(error),
            Err(Failure::Store(error)) => error,
        };
        if !matches!(error, StoreError::Conflict(_)) || attempt == ATTEMPTS {
            return Err(error.into());
        }
        attempt += 1;
    }
}

/// Locks the row of the player whose session asks; a session whose player
/// is gone is no session.
async fn lock_self(state: &AppState, conn: &mut AnyConnection, user_id: i64) -> Result<UserRow, Failure> {
    match lock_user(state, conn, user_id).await {
        Err(Failure::Api(_)) => Err(ErrorCode::InvalidSession.into()),
        other => other,
    }
}

/// Locks a player's row; 404 when there is none.
async fn lock_user(state: &AppState, conn: &mut AnyConnection, user_id: i64) -> Result<UserRow, Failure> {
    let rows = state.store.users_for_update(conn, &[user_id]).await?;
    rows.into_iter().next().ok_or(Failure::from(ErrorCode::UserNotFound))
}

async fn audit(
    state: &AppState,
    conn: &mut AnyConnection,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> Result<(), StoreError> {
    let detail = detail.to_string();
    let record = AuditRecord { at: Timestamp::now(), actor: &actor.0, action, target, detail: &detail };
    state.store.audit(conn, &record).await
}

/// `DELETE /api/admin/scores/{id}`: removes a post of `/api/scores` and
/// recounts the player's aggregates from what remains.
pub async fn delete_score(state: &AppState, actor: &Actor, score_id: i64) -> Result<(), ApiError> {
    let changed = in_transaction(state, async |conn| {
        let owner = state.store.score_owner(conn, score_id).await?.ok_or(ErrorCode::ScoreNotFound)?;
        let mut row = lock_user(state, conn, owner).await?;
        // Under the lock: the post may have gone meanwhile (another removal,
        // an erasure).
        if !state.store.delete_score(conn, score_id, owner).await? {
            return Err(ErrorCode::ScoreNotFound.into());
        }
        let was_listed = row.is_listed();
        recount(&mut row, &state.store.all_scores_of(conn, owner).await?);
        row.version += 1;
        state.store.set_aggregates(conn, &row).await?;
        if was_listed && !row.is_listed() {
            state.store.add_board_players(conn, -1).await?;
        }
        let detail = json!({"board": "scores", "score_id": score_id, "user_id": owner});
        audit(state, conn, actor, "delete_score", &format!("user:{owner}"), detail).await?;
        let engine_left_stale = state.settings.planted_fault == Some(PlantedFault::StaleEngineAfterDelete);
        Ok::<_, Failure>(Changed { users: vec![row], engine_left_stale, ..Changed::default() })
    })
    .await?;
    publish(state, changed).await;
    Ok(())
}

/// A player's aggregates recounted from their whole log, oldest first.
fn recount(row: &mut UserRow, scores: &[crate::store::ScoreRow]) {
    row.best_score = 0;
    row.best_at = None;
    row.best_score_id = None;
    row.total_score = 0;
    row.play_count = 0;
    for score in scores {
        count_post(row, score.score, score.id, score.created_at);
    }
}

/// `DELETE /api/admin/boards/{board}/scores/{id}`: removes a post on a
/// custom board and recounts its period's entry from the period's
/// remaining posts (by replaying them through the writer's own rule).
pub async fn delete_board_score(
    state: &AppState,
    actor: &Actor,
    board: &Arc<CustomBoard>,
    score_id: i64,
) -> Result<(), ApiError> {
    let number = board.spec.number;
    let changed = in_transaction(state, async |conn| {
        let (owner, period) =
            state.store.board_score_owner(conn, number, score_id).await?.ok_or(ErrorCode::ScoreNotFound)?;
        let user = lock_user(state, conn, owner).await?;
        // The writer's order: the board (against deletion), its period, the entry.
        if state.store.lock_boards(conn, &[number]).await?.is_empty() {
            return Err(ErrorCode::BoardNotFound.into());
        }
        if !state.store.lock_existing_period(conn, number, period).await? {
            return Err(ErrorCode::ScoreNotFound.into());
        }
        let before = state.store.entries_for_update(conn, number, period, &[owner]).await?.into_iter().next();
        if !state.store.delete_board_score(conn, number, score_id, owner).await? {
            return Err(ErrorCode::ScoreNotFound.into());
        }
        let posts = state.store.period_posts_of(conn, number, period, owner).await?;
        let version = before.as_ref().map_or(0, |entry| entry.version) + 1;
        let hidden = user.banned_at.is_some();
        let entry = posts.iter().fold(None, |entry, post| {
            let metadata = post.metadata.clone();
            Some(next_entry(board, entry, owner, period, post.score, post.id, metadata, post.created_at).0)
        });
        let now_entry = match entry {
            Some(entry) => {
                // A new place on the board: a change walks leave out.
                let changed = state.store.number_changes(conn, number, period, 1).await?;
                let entry = EntryRow { version, changed, ..entry };
                state.store.write_entries(conn, &[EntryWrite { entry: &entry, order: board.spec.order }]).await?;
                (entry, !hidden)
            }
            None => {
                state.store.delete_entry(conn, number, period, owner).await?;
                if before.is_some() && !hidden {
                    let start = board.recent_periods().first().map_or(Timestamp::now(), |p| p.start);
                    let count = PeriodPlayers { board: number, period, starts_at: start, ends_at: None, added: -1 };
                    state.store.add_period_players(conn, &[count]).await?;
                }
                let gone = before.clone().unwrap_or_else(|| empty_entry(number, period, owner));
                (EntryRow { version, ..gone }, false)
            }
        };
        let detail = json!({"board": board.spec.id, "score_id": score_id, "user_id": owner, "period": period});
        audit(state, conn, actor, "delete_score", &format!("user:{owner}"), detail).await?;
        Ok::<_, Failure>(Changed { entries: vec![now_entry], ..Changed::default() })
    })
    .await?;
    publish(state, changed).await;
    Ok(())
}

fn empty_entry(board: i64, period: i64, user_id: i64) -> EntryRow {
    EntryRow {
        board,
        period,
        user_id,
        score: 0,
        achieved_at: Timestamp::from_millis(0),
        post_id: 0,
        metadata: None,
        plays: 0,
        version: 0,
        changed: 0,
    }
}

/// A ban's reason: 1..=500 characters without control characters.
pub fn parse_reason(raw: Option<&serde_json::Value>) -> Result<String, ApiError> {
    let reason = raw.and_then(serde_json::Value::as_str).unwrap_or("");
    let length = reason.chars().count();
    if (1..=500).contains(&length) && !reason.chars().any(char::is_control) {
        Ok(reason.to_owned())
    } else {
        Err(ErrorCode::InvalidReason.into())
    }
}

/// `POST /api/admin/users/{id}/ban` and `DELETE` of it: takes the player
/// off every board and period (hiding, never deleting) and ends their
/// sessions, or brings them back where their scores put them.
pub async fn set_ban(
    state: &AppState,
    actor: &Actor,
    user_id: i64,
    reason: Option<String>,
) -> Result<UserRow, ApiError> {
    let banning = reason.is_some();
    let changed = in_transaction(state, async |conn| {
        let mut row = lock_user(state, conn, user_id).await?;
        match (banning, row.banned_at.is_some()) {
            (true, true) => return Err(ErrorCode::AlreadyBanned.into()),
            (false, false) => return Err(ErrorCode::NotBanned.into()),
            _ => {}
        }
        let now = Timestamp::now();
        state.store.set_ban(conn, user_id, reason.as_deref().map(|reason| (now, reason))).await?;
        let entries = state.store.set_entries_hidden(conn, user_id, banning).await?;
        if row.play_count > 0 {
            state.store.add_board_players(conn, if banning { -1 } else { 1 }).await?;
        }
        // Banned: the sessions stay, refused with 403 `banned` at every use;
        // unbanned: they end (the player logs in again).
        let (sessions, banned_sessions) = if banning {
            (Vec::new(), state.store.sessions_of(conn, user_id).await?)
        } else {
            (state.store.end_sessions(conn, user_id, None).await?, Vec::new())
        };
        row.banned_at = banning.then_some(now);
        row.version += 1;
        let (action, detail) = match &reason {
            Some(reason) => ("ban", json!({"reason": reason})),
            None => ("unban", json!({})),
        };
        audit(state, conn, actor, action, &format!("user:{user_id}"), detail).await?;
        let entries = entries.into_iter().map(|entry| (entry, !banning)).collect();
        Ok::<_, Failure>(Changed { users: vec![row.clone()], entries, sessions, banned_sessions, ..Changed::default() })
    })
    .await?;
    let row = changed.users[0].clone();
    publish(state, changed).await;
    Ok(row)
}

/// `PATCH /api/admin/users/{id}`: a new display name.
pub async fn rename(state: &AppState, actor: &Actor, user_id: i64, name: DisplayName) -> Result<UserRow, ApiError> {
    let changed = in_transaction(state, async |conn| {
        let mut row = lock_user(state, conn, user_id).await?;
        let detail = json!({"from": row.display_name, "to": name.as_str()});
        state.store.set_display_name(conn, user_id, name.as_str()).await?;
        row.display_name = name.as_str().to_owned();
        row.version += 1;
        audit(state, conn, actor, "rename", &format!("user:{user_id}"), detail).await?;
        Ok::<_, Failure>(Changed { users: vec![row], renamed: vec![user_id], ..Changed::default() })
    })
    .await?;
    let row = changed.users[0].clone();
    publish(state, changed).await;
    Ok(row)
}

/// What a player changes of their own account (`PATCH /api/me`).
pub struct AccountChange {
    pub display_name: Option<DisplayName>,
    /// The new password's hash (the current one was checked).
    pub password_hash: Option<String>,
}

/// Applies a player's own change; a new password ends every other session
/// of theirs (`session` is the one that asked, which stays).
pub async fn change_account(
    state: &AppState,
    user_id: i64,
    session: &str,
    change: AccountChange,
) -> Result<UserRow, ApiError> {
    let changed = in_transaction(state, async |conn| {
        let mut row = lock_self(state, conn, user_id).await?;
        let mut changed = Changed::default();
        if let Some(name) = &change.display_name {
            state.store.set_display_name(conn, user_id, name.as_str()).await?;
            row.display_name = name.as_str().to_owned();
            row.version += 1;
            changed.renamed.push(user_id);
        }
        if let Some(hash) = &change.password_hash {
            state.store.set_password_hash(conn, user_id, hash).await?;
            changed.sessions = state.store.end_sessions(conn, user_id, Some(session)).await?;
        }
        changed.users.push(row);
        Ok::<_, Failure>(changed)
    })
    .await?;
    let row = changed.users[0].clone();
    publish(state, changed).await;
    Ok(row)
}

/// `DELETE /api/me`: erases a player in one transaction: the row, every
/// post, entries on every board and period, sessions, idempotency keys.
pub async fn erase(state: &AppState, user_id: i64) -> Result<(), ApiError> {
    let changed = in_transaction(state, async |conn| {
        let row = lock_self(state, conn, user_id).await?;
        let entries = state.store.entries_of_user_on(conn, user_id).await?;
        let sessions = state.store.end_sessions(conn, user_id, None).await?;
        state.store.erase_user(conn, user_id, row.is_listed()).await?;
        let gone = UserRow { version: row.version + 1, banned_at: Some(Timestamp::now()), ..row.clone() };
        let entries =
            entries.into_iter().map(|entry| (EntryRow { version: entry.version + 1, ..entry }, false)).collect();
        Ok::<_, Failure>(Changed {
            users: vec![gone],
            entries,
            sessions,
            renamed: vec![user_id],
            erased: Some(row),
            ..Changed::default()
        })
    })
    .await?;
    publish(state, changed).await;
    Ok(())
}

/// `GET /api/admin/audit`: up to `limit` records older than `before`,
/// newest first, and where the next page starts.
pub async fn audit_log(
    state: &AppState,
    before: Option<i64>,
    limit: i64,
) -> Result<(Vec<AuditRow>, Option<i64>), ApiError> {
    let mut rows = state.store.audit_log(before, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next_before = if has_more { rows.last().map(|row| row.id) } else { None };
    Ok((rows, next_before))
}

/// Records an admin action that ran outside a moderation transaction (the
/// board catalog, initialize). A failure is logged, never the action's.
pub async fn record(state: &AppState, actor: &Actor, action: &str, target: &str, detail: serde_json::Value) {
    let result = async {
        let mut conn = state.store.conn().await?;
        audit(state, &mut conn, actor, action, target, detail).await
    }
    .await;
    if let Err(error) = result {
        tracing::error!(%error, action, target, "an admin action could not be written to the audit log");
    }
}

/// Brings every copy up to date with a committed change, before the
/// request is answered.
async fn publish(state: &AppState, changed: Changed) {
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
    if let Some(users) = &state.caches.users {
        match &changed.erased {
            Some(row) => users.forget(row).await,
            None => users.put_many(&changed.users).await,
        }
    }
    if let Some(row) = &changed.erased {
        state.limits.forget_player(&row.login_name.to_ascii_lowercase(), row.id).await;
    }
    // Pages of ended periods and of boards whose engine did not move.
    state.caches.pages.clear();
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
