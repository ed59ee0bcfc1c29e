//! Boards: the catalog (create, rename, delete, list), their periods, posts
//! to custom boards, a player's posts and entries on them, and the
//! background work that keeps periods and archives in step.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::boards::{
    parse_timezone, BoardSpec, CustomBoard, Period, Schedule, DEFAULT_ARCHIVE_PERIODS, DEFAULT_MAX_SCORE,
    DEFAULT_MIN_SCORE, MAX_ARCHIVE_PERIODS, SCORE_LIMIT,
};
use crate::domain::{
    Board, BoardId, BoardName, BoardPeriod, IdempotencyKey, Metadata, Operator, Order, PeriodSelector, Score, Timestamp,
};
use crate::error::{ApiError, ErrorCode};
use crate::scoring::{Post, Posted, Target};
use crate::state::AppState;
use crate::store::{BoardRow, BoardScoreRow, NewBoard, PeriodRow, Purge};
use crate::usecases::moderation::{self, Actor};
use crate::usecases::sessions::SessionOwner;
use crate::views::{
    BoardHistory, BoardHistoryItem, BoardList, BoardView, Metadata as MetadataView, PeriodEntry, PeriodList,
    PeriodView, UserBoardEntry, UserBoards,
};

/// A board a request names: a built-in one or a custom one.
#[derive(Clone)]
pub enum BoardRef {
    Builtin(Board),
    Custom(Arc<CustomBoard>),
}

impl BoardRef {
    pub fn id(&self) -> &str {
        match self {
            Self::Builtin(Board::Total) => "total",
            Self::Builtin(_) => "best",
            Self::Custom(custom) => &custom.spec.id,
        }
    }

    pub fn board(&self) -> Board {
        match self {
            Self::Builtin(board) => *board,
            Self::Custom(custom) => custom.spec.board(),
        }
    }

    pub fn order(&self) -> Order {
        match self {
            Self::Builtin(_) => Order::Desc,
            Self::Custom(custom) => custom.spec.order,
        }
    }
}

/// A board period a read is about, and how the answer shows it.
#[derive(Debug, Clone, Copy)]
pub struct ResolvedPeriod {
    pub board: BoardPeriod,
    pub view: PeriodView,
}

/// The board with this id: 404 `board_not_found` when there is none. A
/// board this instance has not seen (created on another one) is looked up
/// in the database.
pub async fn resolve(state: &AppState, id: &str) -> Result<BoardRef, ApiError> {
    if let Some(board) = Board::builtin(id) {
        return Ok(BoardRef::Builtin(board));
    }
    if let Some(custom) = state.boards.get(id) {
        return Ok(BoardRef::Custom(custom));
    }
    if BoardId::parse_str(id).is_some() && state.store.board(id).await?.is_some() {
        reload_catalog(state).await?;
        if let Some(custom) = state.boards.get(id) {
            return Ok(BoardRef::Custom(custom));
        }
    }
    Err(ErrorCode::BoardNotFound.into())
}

/// The custom board with this id: 403 for the built-in ones.
pub async fn resolve_custom(state: &AppState, id: &str) -> Result<Arc<CustomBoard>, ApiError> {
    match resolve(state, id).await? {
        BoardRef::Custom(custom) => Ok(custom),
        BoardRef::Builtin(_) => Err(ErrorCode::BuiltinBoard.into()),
    }
}

/// The period a read is about: the one in force, or a kept one by index
/// (404 `period_not_found` for one that never began or is no longer kept).
pub async fn resolve_period(
    state: &AppState,
    board: &BoardRef,
    selector: PeriodSelector,
) -> Result<ResolvedPeriod, ApiError> {
    let custom = match board {
        BoardRef::Builtin(builtin) => {
            return match selector {
                PeriodSelector::Current | PeriodSelector::Index(0) => {
                    Ok(ResolvedPeriod { board: BoardPeriod::builtin(*builtin), view: PeriodView::BUILTIN })
                }
                PeriodSelector::Index(_) => Err(ErrorCode::PeriodNotFound.into()),
            };
        }
        BoardRef::Custom(custom) => custom,
    };
    let current = custom.period_at(Timestamp::now());
    let period = match selector {
        PeriodSelector::Current => current,
        PeriodSelector::Index(index) => kept_period(state, custom, current, index).await?,
    };
    Ok(ResolvedPeriod { board: custom.spec.period(period.index), view: period.into() })
}

/// A period by index, if it began and is kept.
async fn kept_period(state: &AppState, custom: &CustomBoard, current: Period, index: i64) -> Result<Period, ApiError> {
    if index > current.index || index < current.index - custom.spec.archive_periods {
        return Err(ErrorCode::PeriodNotFound.into());
    }
    if let Some(period) = custom.recent_periods().into_iter().find(|period| period.index == index) {
        return Ok(period);
    }
    let row = state.store.period(custom.spec.number, index).await?.ok_or(ErrorCode::PeriodNotFound)?;
    Ok(Period { index: row.period, start: row.starts_at, end: row.ends_at })
}

/// A board definition as `POST /api/admin/boards` sends it, validated.
struct Definition {
    id: BoardId,
    name: BoardName,
    order: Order,
    operator: Operator,
    reset: Option<String>,
    timezone: String,
    archive_periods: i64,
    min_score: i64,
    max_score: i64,
}

fn integer(
    raw: Option<&Value>,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
    code: ErrorCode,
) -> Result<i64, ApiError> {
    match raw {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value.as_i64().filter(|n| range.contains(n)).ok_or_else(|| code.into()),
    }
}

fn definition(body: &Map<String, Value>) -> Result<Definition, ApiError> {
    let id = BoardId::parse(body.get("id"))?;
    if Board::builtin(id.as_str()).is_some() {
        return Err(ApiError::with_message(ErrorCode::BoardExists, "`best` and `total` are the built-in boards"));
    }
    let name = BoardName::parse(body.get("name"))?;
    let order = Order::parse(body.get("order"))?;
    let operator = Operator::parse(body.get("operator"))?;
    if operator == Operator::Total && order == Order::Asc {
        return Err(ApiError::with_message(
            ErrorCode::InvalidOperator,
            "`total` boards rank higher sums first: `desc` only",
        ));
    }
    let timezone = match body.get("timezone") {
        None | Some(Value::Null) => "UTC".to_owned(),
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(ErrorCode::InvalidTimezone.into()),
    };
    let tz = parse_timezone(&timezone)?;
    let reset = match body.get("reset") {
        None | Some(Value::Null) => None,
        Some(Value::String(pattern)) => {
            Schedule::parse(pattern, tz)?;
            Some(pattern.trim().to_owned())
        }
        Some(_) => return Err(ErrorCode::InvalidReset.into()),
    };
    let archive_periods = integer(
        body.get("archive_periods"),
        DEFAULT_ARCHIVE_PERIODS,
        0..=MAX_ARCHIVE_PERIODS,
        ErrorCode::InvalidArchivePeriods,
    )?;
    let min_score =
        integer(body.get("min_score"), DEFAULT_MIN_SCORE, -SCORE_LIMIT..=SCORE_LIMIT, ErrorCode::InvalidMinScore)?;
    let max_score =
        integer(body.get("max_score"), DEFAULT_MAX_SCORE, min_score..=SCORE_LIMIT, ErrorCode::InvalidMaxScore)?;
    Ok(Definition { id, name, order, operator, reset, timezone, archive_periods, min_score, max_score })
}

fn spec_of(row: BoardRow) -> Result<BoardSpec, ApiError> {
    let corrupt = |what: &str| ApiError::internal(anyhow::anyhow!("board {}: bad {what} in the catalog", row.id));
    let order = match row.sort_order.as_str() {
        "asc" => Order::Asc,
        "desc" => Order::Desc,
        _ => return Err(corrupt("sort_order")),
    };
    let operator = Operator::parse(Some(&Value::String(row.operator.clone()))).map_err(|_| corrupt("operator"))?;
    Ok(BoardSpec {
        number: row.number,
        id: row.id,
        name: row.name,
        order,
        operator,
        reset: row.reset,
        timezone: row.timezone,
        archive_periods: row.archive_periods,
        min_score: row.min_score,
        max_score: row.max_score,
        created_at: row.created_at,
    })
}

/// Loads the catalog from the database into this instance's registry
/// (at start, and when another instance changed it).
pub async fn reload_catalog(state: &AppState) -> Result<(), ApiError> {
    let rows = state.store.boards().await?;
    let known: HashMap<i64, PeriodRow> =
        state.store.latest_periods().await?.into_iter().map(|row| (row.board, row)).collect();
    let mut boards = Vec::with_capacity(rows.len());
    for row in rows {
        let number = row.number;
        let created_at = row.created_at;
        let spec = spec_of(row)?;
        let known = known.get(&number).map_or(Period { index: 0, start: created_at, end: None }, |row| Period {
            index: row.period,
            start: row.starts_at,
            end: row.ends_at,
        });
        match CustomBoard::new(spec, known) {
            Ok(board) => boards.push(board),
            Err(error) => tracing::error!(number, %error, "a board of the catalog cannot be loaded"),
        }
    }
    state.boards.replace(boards);
    Ok(())
}

/// Creates a custom board.
pub async fn create(state: &AppState, actor: &Actor, body: &Map<String, Value>) -> Result<BoardView, ApiError> {
    let definition = definition(body)?;
    let created_at = Timestamp::now();
    let new = NewBoard {
        id: definition.id.as_str(),
        name: definition.name.as_str(),
        sort_order: definition.order.as_str(),
        operator: definition.operator.as_str(),
        reset: definition.reset.as_deref(),
        timezone: &definition.timezone,
        archive_periods: definition.archive_periods,
        min_score: definition.min_score,
        max_score: definition.max_score,
        created_at,
    };
    let spec = BoardSpec {
        number: 0,
        id: definition.id.as_str().to_owned(),
        name: definition.name.as_str().to_owned(),
        order: definition.order,
        operator: definition.operator,
        reset: definition.reset.clone(),
        timezone: definition.timezone.clone(),
        archive_periods: definition.archive_periods,
        min_score: definition.min_score,
        max_score: definition.max_score,
        created_at,
    };
    let first = Period { index: 0, start: created_at, end: None };
    let first_end = CustomBoard::new(spec.clone(), first)?.period_at(created_at).end;
    let number = state.store.insert_board(&new, first_end).await?;
    let board = state.boards.insert(CustomBoard::new(BoardSpec { number, ..spec }, first)?);
    state.ranks.add_board(&board).await;
    let view = BoardView::custom(&board.spec, board.period_at(Timestamp::now()));
    let detail = serde_json::to_value(&view).unwrap_or_default();
    moderation::record(state, actor, "create_board", &format!("board:{}", view.id), detail).await;
    Ok(view)
}

/// Renames a custom board (the only change a board takes).
pub async fn rename(
    state: &AppState,
    actor: &Actor,
    id: &str,
    body: &Map<String, Value>,
) -> Result<BoardView, ApiError> {
    resolve_custom(state, id).await?;
    let name = BoardName::parse(body.get("name"))?;
    if !state.store.rename_board(id, name.as_str()).await? {
        return Err(ErrorCode::BoardNotFound.into());
    }
    state.boards.rename(id, name.as_str());
    let board = state.boards.get(id).ok_or(ErrorCode::BoardNotFound)?;
    let detail = serde_json::json!({"name": board.spec.name});
    moderation::record(state, actor, "rename_board", &format!("board:{id}"), detail).await;
    Ok(BoardView::custom(&board.spec, board.period_at(Timestamp::now())))
}

/// Deletes a custom board with everything posted to it.
pub async fn delete(state: &AppState, actor: &Actor, id: &str) -> Result<(), ApiError> {
    let board = resolve_custom(state, id).await?;
    if !state.store.delete_board(board.spec.number).await? {
        return Err(ErrorCode::BoardNotFound.into());
    }
    state.boards.remove(id);
    state.ranks.forget_board(board.spec.number).await;
    state.caches.pages.clear();
    moderation::record(state, actor, "delete_board", &format!("board:{id}"), serde_json::json!({})).await;
    Ok(())
}

/// Every board, the built-ins first.
pub fn list(state: &AppState) -> BoardList {
    let now = Timestamp::now();
    let builtins = Board::BUILTIN.iter().map(|board| BoardView::builtin(*board, state.settings.max_score));
    let custom = state.boards.all().into_iter().map(|board| BoardView::custom(&board.spec, board.period_at(now)));
    BoardList { boards: builtins.chain(custom).collect() }
}

/// One board.
pub async fn get(state: &AppState, id: &str) -> Result<BoardView, ApiError> {
    Ok(match resolve(state, id).await? {
        BoardRef::Builtin(board) => BoardView::builtin(board, state.settings.max_score),
        BoardRef::Custom(custom) => BoardView::custom(&custom.spec, custom.period_at(Timestamp::now())),
    })
}

/// A board's kept periods, newest first, the current one included.
pub async fn periods(state: &AppState, id: &str, before: Option<i64>, limit: i64) -> Result<PeriodList, ApiError> {
    let custom = match resolve(state, id).await? {
        BoardRef::Builtin(_) => {
            let mut conn = state.store.conn().await?;
            let players = state.store.builtin_players(&mut conn).await?;
            let periods = if before.is_none_or(|before| before > 0) {
                vec![PeriodEntry { index: 0, start: None, end: None, players }]
            } else {
                Vec::new()
            };
            return Ok(PeriodList { periods, next_before: None });
        }
        BoardRef::Custom(custom) => custom,
    };
    let current = custom.period_at(Timestamp::now());
    let oldest = (current.index - custom.spec.archive_periods).max(0);
    let before = before.unwrap_or(i64::MAX).min(current.index + 1);
    let rows = state.store.periods(custom.spec.number, before, limit + 1).await?;
    let mut periods: HashMap<i64, PeriodEntry> = rows
        .into_iter()
        .map(|row| {
            (
                row.period,
                PeriodEntry { index: row.period, start: Some(row.starts_at), end: row.ends_at, players: row.players },
            )
        })
        .collect();
    // Periods this instance saw begin that no post reached yet.
    for period in custom.recent_periods() {
        periods.entry(period.index).or_insert(PeriodEntry {
            index: period.index,
            start: Some(period.start),
            end: period.end,
            players: 0,
        });
    }
    let mut periods: Vec<PeriodEntry> =
        periods.into_values().filter(|p| p.index < before && p.index >= oldest).collect();
    periods.sort_by_key(|period| std::cmp::Reverse(period.index));
    let has_more = periods.len() as i64 > limit;
    periods.truncate(usize::try_from(limit).unwrap_or(0));
    let next_before = if has_more { periods.last().map(|period| period.index) } else { None };
    Ok(PeriodList { periods, next_before })
}

/// Posts a score to a custom board (the built-ins take theirs at `/api/scores`).
pub async fn post(
    state: &AppState,
    id: &str,
    owner: SessionOwner,
    body: &Map<String, Value>,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let SessionOwner { user_id, generation } = owner;
    let board = resolve_custom(state, id).await?;
    let score = Score::parse_in(body.get("score"), board.spec.min_score, board.spec.max_score)?;
    let metadata = Metadata::parse(body.get("metadata"))?;
    super::scores::submit(state, Post { user_id, generation, score, target: Target::Custom { board, metadata }, key })
        .await
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
        created_at: row.created_at,
        metadata: row.metadata.map(|text| MetadataView(Arc::from(text))),
        period,
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
            entries.push(UserBoardEntry {
                board: board.to_owned(),
                period: PeriodView::BUILTIN,
                rank: rank.unwrap_or(0),
                score,
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
    let scores: Vec<(BoardPeriod, i64)> =
        custom.iter().map(|(board, period, entry)| (board.spec.period(period.index), entry.score)).collect();
    let board_ranks = state.ranks.ranks_of_scores(&scores).await?;
    for ((board, period, entry), rank) in custom.into_iter().zip(board_ranks) {
        entries.push(UserBoardEntry {
            board: board.spec.id.clone(),
            period: period.into(),
            rank,
            score: entry.score,
            achieved_at: Some(entry.achieved_at),
            metadata: entry.metadata.map(|text| MetadataView(Arc::from(text))),
        });
    }
    Ok(UserBoards { entries })
}

/// Chunks of rows deleted at a time from an expired period.
const PURGE_CHUNK: i64 = 500;
pub(super) async fn purge_expired(state: &AppState, board: i64, oldest_kept: i64) -> Result<(), ApiError> {
    for period in state.store.expired_periods(board, oldest_kept).await? {
        purge(state, Purge::Period { board, period }).await?;
    }
    Ok(())
}

pub(super) async fn purge_deleted_boards(state: &AppState) -> Result<(), ApiError> {
    for board in state.store.deleted_boards().await? {
        purge(state, Purge::Board(board)).await?;
        tracing::info!(board, "deleted the rows of a deleted board");
    }
    Ok(())
}

async fn purge(state: &AppState, what: Purge) -> Result<(), ApiError> {
    while state.store.purge_chunk(what, PURGE_CHUNK).await? > 0 {
        tokio::task::yield_now().await;
    }
    Ok(())
}
