//! Posting a score: one write transaction that claims the idempotency key,
//! appends to the log, updates the player's aggregates atomically, and
//! stores the response for replays. Nothing is acknowledged before commit.

use crate::domain::{IdempotencyKey, Score, Timestamp};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::{Me, ScoreResult, ScoreView};

/// The answer to a post, as the JSON body the client gets.
pub enum Posted {
    /// A new score: 201.
    Created(String),
    /// A repeated `Idempotency-Key`: the first response's body again, 200.
    Replayed(String),
}

pub async fn post_score(
    state: &AppState,
    user_id: i64,
    score: Score,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let store = &state.store;
    let now = Timestamp::now();
    let mut tx = store.begin_write().await?;
    if let Some(key) = &key {
        if !store.claim_idempotency_key(&mut tx, user_id, key, now).await? {
            tx.rollback().await?;
            return replay(state, user_id, key).await;
        }
    }
    let score_id = store.insert_score(&mut tx, user_id, score, now).await?;
    store.apply_score(&mut tx, user_id, score, score_id, now).await?;
    let user = store
        .user(&mut tx, user_id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("invalid_session", "the session's user no longer exists"))?;
    // Ranks count players with strictly greater scores, and this player's
    // own previous entry never counts (scores only rise), so the engine can
    // rank the new values before it records them.
    let ranks = state.ranks.ranks_of(&[&user]).await.pop().unwrap_or_default();
    let result = ScoreResult {
        score: ScoreView { id: score_id, score: score.value(), created_at: now },
        new_best: user.best_score_id == Some(score_id),
        user: Me::new(&user, ranks),
    };
    let body = serde_json::to_string(&result).map_err(anyhow::Error::from)?;
    if let Some(key) = &key {
        store.save_idempotent_response(&mut tx, user_id, key, 201, &body).await?;
    }
    tx.commit().await?;
    state.ranks.record(&user).await;
    // Before answering, so that the player reads this post back from any instance.
    if let Some(users) = &state.users {
        users.put_many(std::slice::from_ref(&user)).await;
    }
    Ok(Posted::Created(body))
}

async fn replay(state: &AppState, user_id: i64, key: &IdempotencyKey) -> Result<Posted, ApiError> {
    let mut conn = state.store.conn().await?;
    match state.store.idempotent_response(&mut conn, user_id, key).await? {
        Some((_, body)) => Ok(Posted::Replayed(body)),
        // Claimed, yet gone: purged between the claim and this read.
        None => Err(ApiError::conflict("idempotency_key_reused", "retry with a new Idempotency-Key")),
    }
}
