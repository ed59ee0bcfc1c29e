//! Posting a score to the built-in boards: the per-player limits, then the
//! group-committed writer.

use crate::domain::{IdempotencyKey, Score};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::scoring::{self, Post, Posted, Target};
use crate::state::AppState;
use crate::usecases::sessions::SessionOwner;

pub async fn post(
    state: &AppState,
    owner: SessionOwner,
    score: Score,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let SessionOwner { user_id, generation } = owner;
    submit(state, Post { user_id, generation, score, target: Target::Builtin, key }).await
}

/// Hands a post to the writer after the per-player limits. A repeated
/// `Idempotency-Key` is answered from what was stored, without the writer
/// (a retry after a lost answer, whatever the minimum interval says now),
/// and counts against the posts-per-player limit like any post: a client
/// looping on one key is held to the same pace as one posting new scores.
pub async fn submit(state: &AppState, post: Post) -> Result<Posted, ApiError> {
    let player = post.user_id.to_string();
    if let Some(answer) = scoring::replayed(&state.store, &post).await? {
        state.limits.check(Limit::PostsPerPlayer, &player).await?;
        return answer;
    }
    state.limits.check(Limit::PostsPerPlayer, &player).await?;
    state.limits.check(Limit::PostInterval, &player).await?;
    state.writer.post(post).await
}
