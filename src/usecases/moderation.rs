//! Moderation: what an admin does to players and posts (removing a post,
//! bans, renames) and the audit log that records it. Each is a change to
//! a player's account (see `account_changes`).

use std::sync::Arc;

use serde_json::json;
use sqlx::AnyConnection;

use crate::boards::CustomBoard;
use crate::config::PlantedFault;
use crate::domain::{Access, DisplayName, PostStatus, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::scoring::{count_post, next_entry, Points};
use crate::state::AppState;
use crate::store::{AuditRecord, AuditRow, EntryRow, EntryWrite, PeriodPlayers, StoreError, UserRow};
use crate::usecases::account_changes::{in_transaction, lock_user, publish, Changed, Failure};
use crate::usecases::events;

/// Who did an admin action: as the audit log names them (`admin`, or
/// `key:<id>` for an admin key), and what their role reaches.
#[derive(Debug, Clone)]
pub struct Actor {
    pub name: String,
    pub access: Access,
}

pub(super) async fn audit(
    state: &AppState,
    conn: &mut AnyConnection,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> Result<(), StoreError> {
    let detail = detail.to_string();
    let record = AuditRecord { at: Timestamp::now(), actor: &actor.name, action, target, detail: &detail };
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
        recount_player(state, conn, &mut row).await?;
        let entries = change_fed_posts(state, conn, &row, ("best", score_id), FedChange::Delete).await?;
        let detail = json!({"board": "scores", "score_id": score_id, "user_id": owner});
        audit(state, conn, actor, "delete_score", &format!("user:{owner}"), detail).await?;
        let engine_left_stale = state.settings.planted_fault() == Some(PlantedFault::StaleEngineAfterDelete);
        Ok::<_, Failure>(Changed { users: vec![row], entries, engine_left_stale, ..Changed::default() })
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
        let now_entry = recount_entry(state, conn, board, period, &user, before).await?;
        events::period_amended(state, conn, &[(number, period)], "score_deleted", owner).await?;
        let mut entries = vec![now_entry];
        entries.extend(change_fed_posts(state, conn, &user, (&board.spec.id, score_id), FedChange::Delete).await?);
        let detail = json!({"board": board.spec.id, "score_id": score_id, "user_id": owner, "period": period});
        audit(state, conn, actor, "delete_score", &format!("user:{owner}"), detail).await?;
        Ok::<_, Failure>(Changed { entries, ..Changed::default() })
    })
    .await?;
    publish(state, changed).await;
    Ok(())
}

/// What becomes of an original's fed posts (v4 `feeds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FedChange {
    /// The original was deleted: they go with it.
    Delete,
    /// The original was held and is now decided: its held fed posts take
    /// the same status.
    Decide(PostStatus),
}

/// Applies `change` to the posts an original fed (`original`: its board's
/// id, `best` for `/api/scores`, and its post id), recounting each fed
/// board's entry, board by board in number order with each board's
/// period and entry locked first (the writer's order). The caller holds
/// the player's row lock. Returns the entries as the rank engine must now
/// show them.
pub(super) async fn change_fed_posts(
    state: &AppState,
    conn: &mut AnyConnection,
    user: &UserRow,
    original: (&str, i64),
    change: FedChange,
) -> Result<Vec<(EntryRow, bool)>, Failure> {
    let mut fed = state.store.fed_posts(conn, original.0, original.1).await?;
    // The partitions' copies of fed posts go with them (the original's
    // own copies are among its fed posts).
    let mut copies = Vec::new();
    for post in &fed {
        if let Some(board) = state.boards.by_number(post.board).filter(|board| board.spec.partitioning.is_some()) {
            copies.extend(state.store.fed_posts(conn, &board.spec.id, post.id).await?);
        }
    }
    fed.extend(copies);
    fed.sort_by_key(|post| post.board);
    if let FedChange::Decide(_) = change {
        fed.retain(|post| PostStatus::from_stored(&post.status) == PostStatus::Held);
    }
    let numbers: Vec<i64> = fed.iter().map(|post| post.board).collect();
    let existing = state.store.lock_boards(conn, &numbers).await?;
    let mut entries = Vec::new();
    for post in fed {
        // A deleted board's posts go with it (`purges`).
        let Some(board) = state.boards.by_number(post.board).filter(|_| existing.contains(&post.board)) else {
            continue;
        };
        if !state.store.lock_existing_period(conn, post.board, post.period).await? {
            continue;
        }
        let before =
            state.store.entries_for_update(conn, post.board, post.period, &[user.id]).await?.into_iter().next();
        let reason = match change {
            FedChange::Delete => {
                state.store.delete_board_score(conn, post.board, post.id, user.id).await?;
                "score_deleted"
            }
            FedChange::Decide(status) => {
                state.store.set_board_post_status(conn, post.id, status).await?;
                if status != PostStatus::Accepted {
                    continue;
                }
                "held_accepted"
            }
        };
        entries.push(recount_entry(state, conn, &board, post.period, user, before).await?);
        events::period_amended(state, conn, &[(post.board, post.period)], reason, user.id).await?;
    }
    Ok(entries)
}

/// Recounts a player's entry in a board period from the period's accepted
/// posts (replayed through the writer's own rule), after a post was removed
/// or accepted: writes it (a change of the period, which voids its final
/// standings), or deletes it when no post is left, and moves the period's
/// player count either way. The board, the period and the entry (`before`)
/// are locked by the caller, in the writer's order. Returns the entry as
/// the rank engine must now show it.
pub(super) async fn recount_entry(
    state: &AppState,
    conn: &mut AnyConnection,
    board: &CustomBoard,
    period: i64,
    user: &UserRow,
    before: Option<EntryRow>,
) -> Result<(EntryRow, bool), Failure> {
    let (number, owner) = (board.spec.number, user.id);
    let posts = state.store.period_posts_of(conn, number, period, owner).await?;
    let version = before.as_ref().map_or(0, |entry| entry.version) + 1;
    let hidden = user.banned_at.is_some();
    let entry = posts.iter().fold(None, |entry, post| {
        let metadata = post.metadata.clone();
        let points = Points::new(post.score, &[post.subscore1, post.subscore2].map(|s| s.unwrap_or(0)));
        Some(next_entry(board, entry, owner, period, points, post.id, metadata, post.created_at).0)
    });
    let players_added = match (&before, &entry) {
        (None, Some(_)) if !hidden => 1,
        (Some(_), None) if !hidden => -1,
        _ => 0,
    };
    if players_added != 0 {
        let start = board.recent_periods().first().map_or(Timestamp::now(), |p| p.start);
        let count = PeriodPlayers { board: number, period, starts_at: start, ends_at: None, added: players_added };
        state.store.add_period_players(conn, &[count]).await?;
    }
    Ok(match entry {
        Some(entry) => {
            // A new place on the board: a change walks leave out.
            let changed = state.store.number_changes(conn, number, period, 1).await?;
            let entry = EntryRow { version, changed, ..entry };
            state.store.write_entries(conn, &[EntryWrite { entry: &entry, ranking: board.spec.ranking() }]).await?;
            if hidden && before.is_none() {
                // Found by the model test: a held post of a banned player,
                // accepted, made an entry the board's reads showed.
                state.store.hide_entry(conn, number, period, owner).await?;
            }
            (entry, !hidden)
        }
        None => {
            let changed = state.store.delete_entry(conn, number, period, owner).await?;
            let gone = before.unwrap_or_else(|| empty_entry(number, period, owner));
            (EntryRow { version, changed, ..gone }, false)
        }
    })
}

/// A player's aggregates recounted from their accepted posts of
/// `/api/scores`, written, and the built-in boards' player count moved if
/// they joined or left them. The caller holds the player's row lock.
pub(super) async fn recount_player(
    state: &AppState,
    conn: &mut AnyConnection,
    row: &mut UserRow,
) -> Result<(), StoreError> {
    let was_listed = row.is_listed();
    recount(row, &state.store.all_scores_of(conn, row.id).await?);
    row.version += 1;
    state.store.set_aggregates(conn, row).await?;
    match (was_listed, row.is_listed()) {
        (true, false) => state.store.add_board_players(conn, -1).await?,
        (false, true) => state.store.add_board_players(conn, 1).await?,
        _ => {}
    }
    Ok(())
}

fn empty_entry(board: i64, period: i64, user_id: i64) -> EntryRow {
    EntryRow {
        board,
        period,
        user_id,
        score: 0,
        subscore1: 0,
        subscore2: 0,
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
        let periods: Vec<(i64, i64)> = entries.iter().map(|entry| (entry.board, entry.period)).collect();
        events::period_amended(state, conn, &periods, if banning { "ban" } else { "unban" }, user_id).await?;
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

/// What an admin change leaves in the audit log: whom it was done to,
/// and how.
pub(super) struct Audit {
    pub(super) target: String,
    pub(super) detail: serde_json::Value,
}

/// Runs an admin change and writes its audit record in one transaction
/// (run again on a conflict, as `in_transaction` does): the log has a
/// record exactly when the change was made.
pub(super) async fn audited<T>(
    state: &AppState,
    actor: &Actor,
    action: &str,
    mut change: impl AsyncFnMut(&mut AnyConnection) -> Result<(T, Audit), Failure>,
) -> Result<T, ApiError> {
    in_transaction(state, async |conn| {
        let (done, record) = change(conn).await?;
        audit(state, conn, actor, action, &record.target, record.detail).await?;
        Ok::<_, Failure>(done)
    })
    .await
}
