//! A board's partitions (v4 `partition_by`): those with entries in a period.

use super::{resolve, resolve_period, BoardRef};
use crate::domain::{PartitionValue, PeriodSelector};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::views::{PartitionList, PartitionView};

/// `GET /api/boards/{id}/partitions`: the values with at least one entry
/// in the period, in byte order, `limit` after `after`; 404
/// `partition_not_found` on a board without `partition_by`.
pub async fn partitions(
    state: &AppState,
    id: &str,
    selector: PeriodSelector,
    after: Option<PartitionValue>,
    limit: i64,
) -> Result<PartitionList, ApiError> {
    let board = resolve(state, id).await?;
    let custom = match &board {
        BoardRef::Custom(custom) if custom.spec.partitioning.is_some() => custom,
        _ => return Err(ErrorCode::PartitionNotFound.into()),
    };
    let period = resolve_period(state, &board, selector).await?.view.index;
    let after = after.as_ref().map(PartitionValue::as_str);
    let mut rows = state.store.partitions_of(custom.spec.number, period, after, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next_after = if has_more { rows.last().map(|row| row.value.clone()) } else { None };
    let partitions = rows.into_iter().map(|row| PartitionView { value: row.value, players: row.players }).collect();
    Ok(PartitionList { partitions, next_after })
}
