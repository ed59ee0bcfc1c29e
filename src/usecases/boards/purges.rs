//! Deleting rows in chunks: periods a board no longer keeps, and what a
//! deleted board left.

use crate::error::ApiError;
use crate::state::AppState;
use crate::store::Purge;

/// Chunks of rows deleted at a time from an expired period.
const PURGE_CHUNK: i64 = 500;
pub(in crate::usecases) async fn purge_expired(state: &AppState, board: i64, oldest_kept: i64) -> Result<(), ApiError> {
    for period in state.store.expired_periods(board, oldest_kept).await? {
        purge(state, Purge::Period { board, period }).await?;
    }
    Ok(())
}

pub(in crate::usecases) async fn purge_deleted_boards(state: &AppState) -> Result<(), ApiError> {
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
