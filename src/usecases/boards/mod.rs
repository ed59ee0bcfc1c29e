//! Boards: which board and period a request names (here), the catalog
//! and its periods (`catalog`), what a request makes of a definition
//! (`definition`), a board's partitions (`partitions`), posts to custom boards and a player's
//! posts and entries on them (`posts`), and deleting what expired or
//! belonged to a deleted board (`purges`, run by `usecases::jobs`).

mod catalog;
mod definition;
mod partitions;
mod posts;
mod purges;

pub use self::catalog::{
    amend_for_league, create, create_for_league, delete, delete_custom, get, list, periods, reload_catalog,
    rewards_of as catalog_rewards, update,
};
pub use self::partitions::partitions;
pub use self::posts::{history, post, post_to, user_boards};
pub(in crate::usecases) use self::purges::{purge_deleted_boards, purge_expired};

use std::sync::Arc;

use crate::boards::{CustomBoard, Period};
use crate::domain::{Board, BoardId, BoardPeriod, Order, PartitionValue, PeriodSelector, Ranking, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::views::PeriodView;

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

    /// How the board orders its entries.
    pub fn ranking(&self) -> Ranking {
        match self {
            Self::Builtin(_) => Ranking::by_score(Order::Desc),
            Self::Custom(custom) => custom.spec.ranking(),
        }
    }

    /// The partition read, if one is (v4; answers name it).
    pub fn partition(&self) -> Option<&str> {
        match self {
            Self::Builtin(_) => None,
            Self::Custom(custom) => custom.partition_value().map(PartitionValue::as_str),
        }
    }
}

/// The board a read names with its `partition=` (v4): the board itself
/// without one; else its partition of that value, read as a board of its
/// own (one no post opened reads as empty). 404 `partition_not_found` on a
/// board without `partition_by`, 422 `invalid_partition` for a malformed
/// value.
pub async fn resolve_partition(state: &AppState, board: BoardRef, raw: Option<&str>) -> Result<BoardRef, ApiError> {
    let Some(raw) = raw else { return Ok(board) };
    let custom = match board {
        BoardRef::Custom(custom) if custom.spec.partitioning.is_some() => custom,
        _ => return Err(ErrorCode::PartitionNotFound.into()),
    };
    let value = PartitionValue::parse_query(Some(raw))?.ok_or(ErrorCode::InvalidPartition)?;
    if let Some(partition) = state.boards.partition(custom.spec.number, &value) {
        return Ok(BoardRef::Custom(partition));
    }
    // Opened by another instance, or not at all.
    let partition = match state.store.partition_number(custom.spec.number, &value).await? {
        Some(number) => state.boards.insert(custom.partition(number, value)),
        None => Arc::new(state.boards.unopened_partition(&custom, value)),
    };
    Ok(BoardRef::Custom(partition))
}

/// A board period a read is about, and how the answer shows it.
#[derive(Debug, Clone, Copy)]
pub struct ResolvedPeriod {
    pub board: BoardPeriod,
    pub view: PeriodView,
}

/// The board with this id: 404 `board_not_found` when there is none (a
/// league's own board is not one).
pub async fn resolve(state: &AppState, id: &str) -> Result<BoardRef, ApiError> {
    if let Some(board) = Board::builtin(id) {
        return Ok(BoardRef::Builtin(board));
    }
    match find_custom(state, id).await? {
        Some(custom) if !custom.spec.league => Ok(BoardRef::Custom(custom)),
        _ => Err(ErrorCode::BoardNotFound.into()),
    }
}

/// The custom board with this id, a league's own included. A board this
/// instance has not seen (created on another one) is looked up in the
/// database.
pub async fn find_custom(state: &AppState, id: &str) -> Result<Option<Arc<CustomBoard>>, ApiError> {
    if let Some(custom) = state.boards.get(id) {
        return Ok(Some(custom));
    }
    if BoardId::parse_str(id).is_some() && state.store.board(id).await?.is_some() {
        reload_catalog(state).await?;
        return Ok(state.boards.get(id));
    }
    Ok(None)
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
