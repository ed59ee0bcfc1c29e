//! Posting a score to the built-in boards: the per-player limits, then the
//! group-committed writer.

use crate::domain::{IdempotencyKey, Score};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::scoring::{Post, Posted, Target};
use crate::state::AppState;
use crate::usecases::accounts::SessionOwner;

pub async fn post(
    state: &AppState,
    owner: SessionOwner,
    score: Score,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let SessionOwner { user_id, generation } = owner;
    check_post_limits(state, user_id, key.as_ref()).await?;
    state.writer.post(Post { user_id, generation, score, target: Target::Builtin, key }).await
}

/// The per-player limits of a post, unless it repeats an accepted one: a
/// retry gets its stored answer (the writer replays it) whatever the
/// limits would say now.
pub async fn check_post_limits(state: &AppState, user_id: i64, key: Option<&IdempotencyKey>) -> Result<(), ApiError> {
    if let Some(key) = key {
        if state.store.idempotent_response(user_id, key).await?.is_some() {
            return Ok(());
        }
    }
    let player = user_id.to_string();
    state.limits.check(Limit::PostsPerPlayer, &player).await?;
    state.limits.check(Limit::PostInterval, &player).await
}
