//! Posts to custom boards, and what a player posted and holds on them.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::resolve_custom;
use crate::boards::{CustomBoard, Period};
use crate::domain::{
    BoardKey, BoardPeriod, Hundredths, IdempotencyKey, Metadata, PostStatus, Score, Subscore, Timestamp,
};
use crate::error::{ApiError, ErrorCode};
use crate::rank::ScoreRank;
use crate::scoring::{Post, Posted, Target};
use crate::state::AppState;
use crate::store::BoardScoreRow;
use crate::usecases::scores::{self, Author};
use crate::views::{
    subscores_of, BoardHistory, BoardHistoryItem, Metadata as MetadataView, PeriodView, UserBoardEntry, UserBoards,
};

/// Posts a score to a custom board (the built-ins take theirs at `/api/scores`).
pub async fn post(
    state: &AppState,
    id: &str,
    author: Author,
    body: &Map<String, Value>,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    post_to(state, resolve_custom(state, id).await?, author, body, key).await
}

/// Posts a score to this board (a league's own too): the body's score in
/// the board's range and its metadata, through the score writer.
pub async fn post_to(
    state: &AppState,
    board: Arc<CustomBoard>,
    author: Author,
    body: &Map<String, Value>,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    author.may_write(board.spec.rules)?;
    let (user_id, by) = author.poster(body)?;
    let score = Score::parse_in(body.get("score"), board.spec.min_score, board.spec.max_score)?;
    let subscores = Subscore::parse_values(body.get("subscores"), &board.spec.subscores)?;
    let metadata = Metadata::parse(body.get("metadata"))?;
    let partition = match &board.spec.partitioning {
        Some(rule) => rule.partition_of(metadata.as_ref())?,
        None => None,
    };
    let min_interval_ms = board.spec.rules.min_interval_ms;
    let target = Target::Custom { board };
    let post = Post { user_id, by, score, subscores, target, metadata, partition, key, min_interval_ms };
    scores::submit(state, author, post).await
}

/// A player's posts to a custom board, newest first.
pub async fn history(
    state: &AppState,
    user_id: i64,
    id: &str,
    before: Option<i64>,
    limit: i64,
) -> Result<BoardHistory, ApiError> {
    let custom = resolve_custom(state, id).await?;
    let mut conn = state.store.conn().await?;
    // A banned player is as unknown to others as an erased one.
    if state.store.user(&mut conn, user_id).await?.is_none_or(|user| user.banned_at.is_some()) {
        return Err(ErrorCode::UserNotFound.into());
    }
    drop(conn);
    let mut rows = state.store.board_history(user_id, custom.spec.number, before, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next_before = if has_more { rows.last().map(|row| row.id) } else { None };
    let mut bounds: HashMap<i64, PeriodView> = HashMap::new();
    for period in custom.recent_periods() {
        bounds.insert(period.index, period.into());
    }
    let mut scores = Vec::with_capacity(rows.len());
    for row in rows {
        let period = match bounds.get(&row.period) {
            Some(view) => *view,
            None => {
                let view = match state.store.period(custom.spec.number, row.period).await? {
                    Some(found) => PeriodView { index: found.period, start: Some(found.starts_at), end: found.ends_at },
                    None => PeriodView { index: row.period, start: None, end: None },
                };
                bounds.insert(row.period, view);
                view
            }
        };
        scores.push(history_item(row, period));
    }
    Ok(BoardHistory { scores, next_before })
}

fn history_item(row: BoardScoreRow, period: PeriodView) -> BoardHistoryItem {
    BoardHistoryItem {
        id: row.id,
        score: row.score,
        subscores: Some(row.subscores()).filter(|subscores| !subscores.is_empty()),
        created_at: row.created_at,
        metadata: row.metadata.map(|text| MetadataView(Arc::from(text))),
        status: PostStatus::from_stored(&row.status).as_str(),
        period,
        via: row.via,
    }
}

/// A player's current entries on every board, the built-ins first, in one
/// call: one read of their custom entries and one batch of ranks.
pub async fn user_boards(state: &AppState, user_id: i64) -> Result<UserBoards, ApiError> {
    let (user, ranks) = crate::usecases::players::profile(state, user_id).await?.ok_or(ErrorCode::UserNotFound)?;
    let mut entries = Vec::new();
    if user.play_count > 0 {
        for (board, rank, score, achieved_at) in
            [("best", ranks.best, user.best_score, user.best_at), ("total", ranks.total, user.total_score, None)]
        {
            let Some(ScoreRank { rank, players }) = rank else { continue };
            entries.push(UserBoardEntry {
                board: board.to_owned(),
                period: PeriodView::BUILTIN,
                rank,
                top_percent: Hundredths::top(rank, players),
                score,
                subscores: None,
                achieved_at,
                metadata: None,
            });
        }
    }
    let now = Timestamp::now();
    let current: HashMap<i64, (Arc<CustomBoard>, Period)> = state
        .boards
        .all()
        .into_iter()
        .map(|board| (board.spec.number, (Arc::clone(&board), board.period_at(now))))
        .collect();
    let periods: Vec<(i64, i64)> = current.iter().map(|(number, (_, period))| (*number, period.index)).collect();
    let mut custom: Vec<(Arc<CustomBoard>, Period, crate::store::EntryRow)> = Vec::new();
    for entry in state.store.entries_of_user_in(user_id, &periods).await? {
        if let Some((board, period)) = current.get(&entry.board) {
            custom.push((Arc::clone(board), *period, entry));
        }
    }
    custom.sort_by(|a, b| a.0.spec.id.cmp(&b.0.spec.id));
    let keys: Vec<(BoardPeriod, BoardKey)> =
        custom.iter().map(|(board, period, entry)| (board.spec.period(period.index), entry.key())).collect();
    let board_ranks = state.ranks.ranks_of_keys(&keys).await?;
    for ((board, period, entry), ScoreRank { rank, players }) in custom.into_iter().zip(board_ranks) {
        entries.push(UserBoardEntry {
            board: board.spec.id.clone(),
            period: period.into(),
            rank,
            top_percent: Hundredths::top(rank, players),
            score: entry.score,
            subscores: subscores_of(board.spec.ranking(), &entry.subscores()),
            achieved_at: Some(entry.achieved_at),
            metadata: entry.metadata.map(|text| MetadataView(Arc::from(text))),
        });
    }
    Ok(UserBoards { entries })
}
