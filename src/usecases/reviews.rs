//! The review queue (v3 score integrity): posts a board's `hold_beyond` or
//! `hold_jump` held, and an admin's decision on each. Accepting recounts
//! the player's entry in the post's own period (ended or not), or their
//! aggregates for `/api/scores`, from every accepted post in the order they
//! were made: exactly as if the post had been accepted when it was made.
//! Rejecting changes nothing on any board.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::boards::CustomBoard;
use crate::domain::{Board, PeriodSelector, PostStatus, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::{HeldRow, BUILTIN_LOG};
use crate::usecases::account_changes::{in_transaction, lock_user, publish, Changed, Failure};
use crate::usecases::boards::{resolve, BoardRef};
use crate::usecases::events;
use crate::usecases::moderation::{audit, change_fed_posts, recount_entry, recount_player, Actor, FedChange};
use crate::usecases::rankings;
use crate::views::{BoardScoreView, Decided, HeldList, HeldPost, Metadata, PeriodView};

/// The longest note a decision keeps.
const MAX_NOTE_CHARS: usize = 500;

/// The board id a hold's log belongs to (`best` names `/api/scores`).
fn board_id(state: &AppState, hold: &HeldRow) -> Option<String> {
    if hold.board == BUILTIN_LOG {
        return Some("best".to_owned());
    }
    state.boards.by_number(hold.board).map(|board| board.spec.id.clone())
}

fn post_view(hold: &HeldRow) -> BoardScoreView {
    BoardScoreView {
        id: hold.post_id,
        score: hold.score,
        subscores: Some(hold.subscores()).filter(|subscores| !subscores.is_empty()),
        created_at: hold.created_at,
        metadata: hold.metadata.as_deref().map(|text| Metadata(Arc::from(text))),
        status: PostStatus::from_stored(&hold.status).as_str(),
    }
}

/// A hold's period as the answers show it.
fn period_view(board: Option<&CustomBoard>, index: i64) -> PeriodView {
    let Some(board) = board else { return PeriodView::BUILTIN };
    board
        .recent_periods()
        .into_iter()
        .find(|period| period.index == index)
        .map_or(PeriodView { index, start: None, end: None }, PeriodView::from)
}

/// `GET /api/admin/held`: undecided holds, oldest first, after queue
/// position `after`; of one board's log if `board` is given (`best` or
/// `total`: the `/api/scores` log).
pub async fn list(state: &AppState, board: Option<&str>, after: i64, limit: i64) -> Result<HeldList, ApiError> {
    let log = match board {
        None => None,
        Some(id) => Some(match resolve(state, id).await? {
            BoardRef::Builtin(_) => BUILTIN_LOG,
            BoardRef::Custom(custom) => custom.spec.number,
        }),
    };
    let mut rows = state.store.open_holds(log, after, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next_after = if has_more { rows.last().map(|row| row.id) } else { None };
    let boards: Vec<Option<String>> = rows.iter().map(|hold| board_id(state, hold)).collect();
    let originals: Vec<(&str, i64)> =
        rows.iter().zip(&boards).filter_map(|(hold, id)| Some((id.as_deref()?, hold.post_id))).collect();
    let mut fed: HashMap<(String, i64), Vec<String>> = HashMap::new();
    for (original, number) in state.store.held_fed_boards(&originals).await? {
        if let Some(board) = state.boards.by_number(number).filter(|board| board.spec.partition_of.is_none()) {
            fed.entry(original).or_default().push(board.spec.id.clone());
        }
    }
    let held = rows
        .iter()
        .zip(boards)
        .filter_map(|(hold, board)| {
            let board = board?;
            let custom = (hold.board != BUILTIN_LOG).then(|| state.boards.by_number(hold.board)).flatten();
            Some(HeldPost {
                score: post_view(hold),
                feeds: fed.remove(&(board.clone(), hold.post_id)).unwrap_or_default(),
                board,
                user_id: hold.user_id,
                rule: hold.rule.clone(),
                period: period_view(custom.as_deref(), hold.period),
            })
        })
        .collect();
    Ok(HeldList { held, next_after })
}

/// What an admin decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Accept,
    Reject,
}

fn parse_decision(body: &Map<String, Value>) -> Result<(Decision, Option<String>), ApiError> {
    let decision = match body.get("decision").and_then(Value::as_str) {
        Some("accept") => Decision::Accept,
        Some("reject") => Decision::Reject,
        _ => return Err(ErrorCode::InvalidDecision.into()),
    };
    let note = match body.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(note)) if note.chars().count() <= MAX_NOTE_CHARS => Some(note.clone()),
        Some(_) => return Err(ErrorCode::InvalidDecision.into()),
    };
    Ok((decision, note))
}

/// `POST /api/admin/held/{score_id}`: accepts or rejects a held post. The
/// id names a post of `/api/scores` or of a custom board (they are
/// numbered apart); when both are held, `board` in the body says which.
pub async fn decide(
    state: &AppState,
    actor: &Actor,
    post_id: i64,
    body: &Map<String, Value>,
) -> Result<Decided, ApiError> {
    let (decision, note) = parse_decision(body)?;
    let log = match body.get("board") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(match resolve(state, id).await? {
            BoardRef::Builtin(_) => BUILTIN_LOG,
            BoardRef::Custom(custom) => custom.spec.number,
        }),
        // Found by schemathesis: another type was ignored, not refused.
        Some(_) => return Err(ErrorCode::InvalidBoard.into()),
    };
    let (hold, changed) = in_transaction(state, async |conn| {
        let mut holds = state.store.holds_of_post(conn, post_id).await?;
        holds.retain(|hold| log.is_none_or(|log| hold.board == log));
        let hold = match holds.len() {
            0 => return Err(ErrorCode::ScoreNotFound.into()),
            1 => holds.remove(0),
            _ => return Err(ErrorCode::AmbiguousScore.into()),
        };
        if hold.decided_at.is_some() {
            return Err(ErrorCode::AlreadyDecided.into());
        }
        let mut user = lock_user(state, conn, hold.user_id).await?;
        let status = if decision == Decision::Accept { PostStatus::Accepted } else { PostStatus::Rejected };
        let mut changed = Changed::default();
        let original = board_id(state, &hold).unwrap_or_default();
        if hold.board == BUILTIN_LOG {
            state.store.decide_hold(conn, &hold, status, Timestamp::now()).await?;
            if decision == Decision::Accept {
                recount_player(state, conn, &mut user).await?;
                changed.users.push(user.clone());
            }
        } else {
            let board = state.boards.by_number(hold.board).ok_or(Failure::from(ErrorCode::BoardNotFound))?;
            // The writer's order: the board (against deletion), its period, the entry.
            if state.store.lock_boards(conn, &[hold.board]).await?.is_empty() {
                return Err(ErrorCode::BoardNotFound.into());
            }
            if !state.store.lock_existing_period(conn, hold.board, hold.period).await? {
                return Err(ErrorCode::ScoreNotFound.into());
            }
            let before = state
                .store
                .entries_for_update(conn, hold.board, hold.period, &[hold.user_id])
                .await?
                .into_iter()
                .next();
            state.store.decide_hold(conn, &hold, status, Timestamp::now()).await?;
            if decision == Decision::Accept {
                changed.entries.push(recount_entry(state, conn, &board, hold.period, &user, before).await?);
                events::period_amended(state, conn, &[(hold.board, hold.period)], "held_accepted", hold.user_id)
                    .await?;
            }
        }
        // The posts it fed were held with it: the decision is theirs too.
        let fed = FedChange::Decide(status);
        changed.entries.extend(change_fed_posts(state, conn, &user, (&original, hold.post_id), fed).await?);
        let action = if decision == Decision::Accept { "accept_score" } else { "reject_score" };
        let detail = json!({
            "board": board_id(state, &hold), "score_id": hold.post_id, "period": hold.period,
            "rule": hold.rule, "note": note,
        });
        audit(state, conn, actor, action, &format!("user:{}", hold.user_id), detail).await?;
        Ok::<_, Failure>((HeldRow { status: status.as_str().to_owned(), ..hold }, changed))
    })
    .await?;
    publish(state, changed).await;
    let outcome = if decision == Decision::Accept { "accepted" } else { "rejected" };
    state.reviews.with_label_values(&[outcome]).inc();
    let entry = entry_after(state, &hold).await?;
    Ok(Decided { score: post_view(&hold), entry })
}

/// The player's entry on the post's board and period after a decision.
async fn entry_after(state: &AppState, hold: &HeldRow) -> Result<Option<Value>, ApiError> {
    if hold.board == BUILTIN_LOG {
        return rankings::entry_of(state, &BoardRef::Builtin(Board::Best), PeriodSelector::Current, hold.user_id).await;
    }
    match state.boards.by_number(hold.board) {
        Some(custom) => {
            rankings::entry_of(state, &BoardRef::Custom(custom), PeriodSelector::Index(hold.period), hold.user_id).await
        }
        None => Ok(None),
    }
}
