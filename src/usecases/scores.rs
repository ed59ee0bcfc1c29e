//! Posting a score to the built-in boards: the per-player limits, then the
//! group-committed writer.

use crate::domain::{IdempotencyKey, Score};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::scoring::{Post, Posted, Target};
use crate::state::AppState;

pub async fn post(
    state: &AppState,
    user_id: i64,
    score: Score,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let player = user_id.to_string();
    state.limits.check(Limit::PostsPerPlayer, &player).await?;
    state.limits.check(Limit::PostInterval, &player).await?;
    state.writer.post(Post { user_id, score, target: Target::Builtin, key }).await
}
